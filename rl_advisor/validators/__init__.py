"""Validate rendered artifacts with each framework's own parser or schema (pinned releases).

Heavy imports (hydra, verl's config classes, trl, ray, kubernetes-validate) happen inside the
per-format modules, only when that artifact kind is validated.
"""

from __future__ import annotations

import threading

from advisor.plan import Framework
from advisor.render.models import Artifact, RenderedConfig, ValidationResult


_LOCK = threading.Lock()
"""Validators touch process-global state (Hydra's GlobalHydra, sys.modules for verl's config
package, redirected stdout so framework prints never reach an MCP stdio stream): one at a time."""


def validate_artifact(artifact: Artifact) -> ValidationResult:
    with _LOCK:
        return _validate(artifact)


def _validate(artifact: Artifact) -> ValidationResult:
    kind, fw = artifact.kind, artifact.framework
    if kind == "k8s_manifest":
        from rl_advisor.validators import k8s

        return k8s.validate(artifact)
    if kind == "ray_job":
        from rl_advisor.validators import ray_job

        return ray_job.validate(artifact)
    if fw == Framework.VERL:
        from rl_advisor.validators import verl

        return verl.validate(artifact)
    if fw == Framework.OPENRLHF:
        from rl_advisor.validators import openrlhf

        return openrlhf.validate(artifact)
    if fw == Framework.NEMO_RL:
        from rl_advisor.validators import nemo_rl

        return nemo_rl.validate(artifact)
    if fw == Framework.TRL:
        from rl_advisor.validators import trl

        if kind == "framework_config":
            return trl.validate_config(artifact)
        if kind == "accelerate_config":
            return trl.validate_accelerate(artifact)
        if kind == "entry_script":
            return trl.validate_entry(artifact)
        if kind == "launch_script":
            return trl.validate_launch(artifact)
    return ValidationResult(artifact=artifact.name, validator="none", ok=False,
                            errors=[f"no validator for {kind} / {fw}"])


def validate_rendered(rendered: RenderedConfig) -> list[ValidationResult]:
    """One result per artifact, in artifact order. For TRL the trainer is also constructed with the
    rendered config on a tiny local model (its start-up checks); that result joins the entry
    script's."""
    results = [validate_artifact(a) for a in rendered.artifacts]
    if rendered.framework == Framework.TRL and all(r.ok or r.skipped for r in results):
        config = next((a for a in rendered.artifacts if a.kind == "framework_config"), None)
        entry = next((i for i, a in enumerate(rendered.artifacts) if a.kind == "entry_script"), None)
        if config is not None and entry is not None:
            from rl_advisor.validators import trl

            with _LOCK:
                errors, warnings, checks = trl.validate_construction(config, rendered.artifacts[entry])
            res = results[entry]
            results[entry] = res.model_copy(update={
                "ok": res.ok and not errors, "errors": res.errors + errors, "warnings": res.warnings + warnings,
                "checks": res.checks + checks,
                "validator": res.validator + " + trainer constructed on a tiny local model"})
    return results


__all__ = ["validate_artifact", "validate_rendered"]
