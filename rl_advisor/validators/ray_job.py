"""Ray job spec: the JSON through Ray's own ``JobSubmitRequest`` (the Jobs API request model that
``JobSubmissionClient.submit_job`` sends) and ``RuntimeEnv`` (which rejects unknown runtime_env
fields); the entrypoint must split back, with shell rules, into words."""

from __future__ import annotations

import json
import shlex
import time

from advisor.render.models import Artifact, ValidationResult


def validate(artifact: Artifact) -> ValidationResult:
    t0 = time.perf_counter()
    name = "ray JobSubmitRequest + RuntimeEnv"
    try:
        from ray.dashboard.modules.job.common import JobSubmitRequest
        from ray.runtime_env import RuntimeEnv
    except ImportError as exc:
        return ValidationResult(artifact=artifact.name, validator=name, ok=False, skipped=True,
                                warnings=[f"ray not importable: {exc}"])
    errors: list[str] = []
    try:
        spec = json.loads(artifact.content)
        JobSubmitRequest(**spec)
        RuntimeEnv(**(spec.get("runtime_env") or {}))
        if not shlex.split(spec["entrypoint"]):
            errors.append("entrypoint is empty")
    except Exception as exc:  # noqa: BLE001 - TypeError/ValueError from Ray's checks
        errors.append(f"{type(exc).__name__}: {exc}")
    return ValidationResult(artifact=artifact.name, validator=name, ok=not errors, errors=errors,
                            seconds=time.perf_counter() - t0)
