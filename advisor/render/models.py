"""The output models of render_config: artifacts, version stamps and what did not carry over."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from advisor.plan import Framework, Method

ArtifactKind = Literal[
    "launch_script",      # shell script that starts the run
    "framework_config",   # the framework's own config file (TRL YAML, NeMo-RL overrides)
    "accelerate_config",  # accelerate launcher config (TRL)
    "entry_script",       # Python entry point (TRL trainers + JSONL metrics callback)
    "ray_job",            # Ray Jobs API submission spec
    "k8s_manifest",       # Kubernetes objects (multi-document YAML)
]


class Artifact(BaseModel):
    """One rendered file.

    ``argv`` (for launch scripts) and ``data`` (for YAML/JSON configs) are the intended
    structure; ``content`` is its quoted text form. Tests and validators check that the text
    parses back to exactly this structure.
    """

    name: str = Field(..., description="File name, e.g. run_verl.sh, trl_config.yaml.")
    kind: ArtifactKind
    format: Literal["shell", "yaml", "python", "json"]
    content: str
    framework: Framework | None = Field(None, description="The framework whose parser reads it.")
    entrypoint: str | None = Field(None, description="Module/command the argv is for, e.g. "
                                   "verl.trainer.main_ppo, openrlhf.cli.train_dpo, trl.")
    argv: list[str] | None = Field(None, description="The intended framework argv (after the "
                                   "launcher), for launch scripts.")
    data: Any = Field(None, description="The intended tree, for YAML/JSON artifacts.")


class VersionStamp(BaseModel):
    framework: Framework
    framework_version: str
    rl_advisor_version: str
    plan_name: str


class NotCarried(BaseModel):
    """A Plan setting that has no equivalent in the target framework."""

    field: str
    value: Any = None
    reason: str


class RenderedConfig(BaseModel):
    """Every artifact for one Plan and one framework (pure; no validation yet)."""

    framework: Framework
    method: Method
    stamp: VersionStamp
    artifacts: list[Artifact]
    not_carried: list[NotCarried] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list, description="Defaults chosen while rendering.")

    def artifact(self, name: str) -> Artifact:
        for a in self.artifacts:
            if a.name == name:
                return a
        raise KeyError(name)

    def to_text(self) -> str:
        lines = [f"rendered {self.method.value} for {self.framework.value} "
                 f"{self.stamp.framework_version} (rl-advisor {self.stamp.rl_advisor_version})"]
        for a in self.artifacts:
            lines.append(f"  {a.name:<28} {a.kind:<18} {a.format}")
        for n in self.not_carried:
            lines.append(f"  not carried: {n.field} = {n.value!r}: {n.reason}")
        for n in self.notes:
            lines.append(f"  note: {n}")
        return "\n".join(lines)


class ValidationResult(BaseModel):
    """One artifact checked by the framework's own parser or schema (rl_advisor.validators)."""

    artifact: str
    validator: str = Field(..., description="What checked it, e.g. 'hydra compose + verl validate_config'.")
    ok: bool
    skipped: bool = Field(False, description="The checker could not run here (reason in warnings).")
    errors: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    checks: list[str] = Field(default_factory=list, description=(
        "The framework's own start-up checks that ran, each 'file:line condition -> passed|failed|not "
        "applicable' (trainer construction checks, an entry's pre-GPU asserts)."))
    seconds: float = 0.0
