"""The render_config and translate_config tools: render (pure, advisor.render), validate with the
frameworks' own parsers and schemas (rl_advisor.validators), and write files on request."""

from __future__ import annotations

import time

from pydantic import BaseModel, Field

from advisor.errors import AdvisorError
from advisor.plan import Framework, Plan
from advisor.render import RenderedConfig, RenderOptions, ValidationResult
from advisor.render import render_config as _render


class RenderResult(BaseModel):
    """Rendered artifacts, their validation by the real frameworks, and where they were written."""

    rendered: RenderedConfig
    validation: list[ValidationResult] = Field(default_factory=list)
    valid: bool | None = Field(None, description="Every artifact passed (None when validation was not run).")
    written: list[str] = Field(default_factory=list, description="Files written (only with output_dir).")
    render_seconds: float = 0.0

    def to_text(self) -> str:
        lines = [self.rendered.to_text()]
        for v in self.validation:
            state = "skipped" if v.skipped else ("ok" if v.ok else "FAILED")
            lines.append(f"  validate {v.artifact:<20} {state:<8} {v.validator} ({v.seconds:.2f} s)")
            lines += [f"      error: {e}" for e in v.errors]
            lines += [f"      warning: {w}" for w in v.warnings]
        for path in self.written:
            lines.append(f"  wrote {path}")
        return "\n".join(lines)


class TranslationResult(BaseModel):
    """A config from one framework, imported to a Plan and rendered for another."""

    source_framework: Framework | None
    target_framework: Framework
    plan: Plan
    not_understood: list[str] = Field(default_factory=list, description="Source keys the importer did not map.")
    import_notes: list[str] = Field(default_factory=list)
    result: RenderResult

    def to_text(self) -> str:
        src = self.source_framework.value if self.source_framework else "?"
        lines = [f"translated {src} -> {self.target_framework.value}"]
        lines += [f"  not understood in the source: {k}" for k in self.not_understood]
        lines += [f"  import note: {n}" for n in self.import_notes]
        lines.append(self.result.to_text())
        return "\n".join(lines)


def write_artifacts(rendered: RenderedConfig, output_dir: str, *, private: bool = False,
                    field: str = "output_dir") -> list[str]:
    """Write every artifact under ``output_dir`` (created); launch scripts are made executable.

    The folder is opened once (``safe_paths.open_output_dir``: confined to the allowed roots
    when the call comes from an MCP client) and every file is written relative to that handle,
    so a folder swapped for a symlink mid-call or a link planted at an artifact's name cannot
    redirect a write. Contents pass through the one secret scrubber, so the files say what the
    tool result says. ``private`` (run folders): 0700 folder, 0700 scripts, 0600 files.
    """
    from advisor.secrets import scrub_text
    from rl_advisor.safe_paths import open_output_dir

    written = []
    with open_output_dir(output_dir, field=field, mode=0o700 if private else None) as out:
        for art in rendered.artifacts:
            shell = art.format == "shell"
            mode = (0o700 if shell else 0o600) if private else (0o755 if shell else 0o644)
            try:
                written.append(str(out.write(art.name, scrub_text(art.content), mode)))
            except OSError as exc:
                raise AdvisorError(f"cannot write {art.name}: {exc.strerror}"
                                   f"{' (disk full)' if exc.errno == 28 else ''}", field=field,
                                   value=output_dir) from None
    return written


def render_config(plan: Plan, framework: Framework | None = None, validate: bool = True,
                  output_dir: str | None = None, image: str | None = None,
                  namespace: str = "default") -> RenderResult:
    """Render a Plan into launch files for veRL, OpenRLHF, TRL or NeMo-RL (default: plan.framework),
    plus a Ray job spec and Kubernetes manifests, and validate each with the framework's own parser
    or schema (pinned releases). Unsupported method x framework pairs are refused with the reason.
    Files are written only when output_dir is given."""
    options = RenderOptions(image=image, namespace=namespace)
    t0 = time.perf_counter()
    rendered = _render(plan, framework, options)
    seconds = time.perf_counter() - t0
    validation: list[ValidationResult] = []
    if validate:
        from rl_advisor.validators import validate_rendered

        validation = validate_rendered(rendered)
    written = write_artifacts(rendered, output_dir) if output_dir else []
    valid = all(v.ok for v in validation) if validation else None
    return RenderResult(rendered=rendered, validation=validation, valid=valid, written=written,
                        render_seconds=round(seconds, 4))


def translate_config(text: str, to_framework: Framework, from_framework: Framework | None = None,
                     validate: bool = True, output_dir: str | None = None) -> TranslationResult:
    """Import a veRL / OpenRLHF / TRL config (text) into a Plan and render it for another framework,
    reporting what the importer did not understand and what does not carry over to the target."""
    from advisor.importers import import_config

    imported = import_config(text, from_framework)
    plan = imported.plan.model_copy(update={"framework": Framework(to_framework)})
    result = render_config(plan, to_framework, validate=validate, output_dir=output_dir)
    return TranslationResult(source_framework=getattr(imported, "framework", from_framework),
                             target_framework=Framework(to_framework), plan=plan,
                             not_understood=list(getattr(imported, "not_understood", []) or []),
                             import_notes=list(getattr(imported, "notes", []) or []), result=result)
