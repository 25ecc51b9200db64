"""The one contract every backend (local, Ray, Kubernetes) implements, and the run models.

A backend turns a ``LaunchSpec`` (an entrypoint, its environment, files and resources, all
derived from a rendered Plan) into a running job and answers questions about it *from the
backend ids alone* (a PID and process group, a Ray submission id, a Kubernetes object name).
Nothing a backend needs lives only in the memory of the process that launched the run, so a run
stays trackable after the CLI or MCP server that started it has died: the registry keeps the ids,
any new process can re-derive the status.
"""

from __future__ import annotations

from datetime import datetime, timezone
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field


class RunState(StrEnum):
    """Lifecycle of a run. ``succeeded``/``failed``/``stopped`` are terminal."""

    DRY_RUN = "dry_run"
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    STOPPED = "stopped"
    UNKNOWN = "unknown"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_STATES


TERMINAL_STATES = frozenset({RunState.SUCCEEDED, RunState.FAILED, RunState.STOPPED})

CONSOLE_LOG = "console.log"
"""The run's stdout and stderr, interleaved, in ``<run_dir>/`` (written by the backend's supervisor)."""


def utcnow() -> str:
    """ISO-8601 UTC timestamp with milliseconds (sortable as text)."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class Resources(BaseModel):
    """What the entrypoint process itself needs from a scheduler (Ray entrypoint resources,
    Kubernetes requests). Derived from the placement plan; zero for the local backend."""

    num_cpus: float = Field(0.0, ge=0)
    num_gpus: float = Field(0.0, ge=0)
    memory_bytes: int = Field(0, ge=0)
    custom: dict[str, float] = Field(default_factory=dict,
                                     description="Custom scheduler resources, e.g. accelerator_type:H100.")
    placement_bundles: list[dict[str, float]] = Field(
        default_factory=list, description="Placement-group bundles the job will request once running "
        "(checked for feasibility before submission).")
    placement_strategy: str = "PACK"


class LaunchSpec(BaseModel):
    """Everything a backend needs to start one run. Built by the framework adapter from the
    rendered artifacts; the same spec is shown in a dry run."""

    run_id: str
    name: str
    framework: str
    run_dir: str = Field(..., description="Folder of the run: artifacts, logs, exit status.")
    working_dir: str = Field(..., description="Where the entrypoint runs (artifacts are written here).")
    entrypoint: list[str] = Field(..., min_length=1, description="argv of the entrypoint.")
    env: dict[str, str] = Field(default_factory=dict)
    python: str | None = Field(None, description="The interpreter of the framework's own environment "
                               "(backends.job_python); None: the launching process's Python.")
    resources: Resources = Field(default_factory=Resources)
    metrics_files: list[str] = Field(default_factory=list,
                                     description="Files the run writes metrics to (followed incrementally).")
    metrics_format: str | None = Field(None, description="Reader format for metrics_files "
                                       "(advisor.metrics format name); None = detect.")
    log_format: str | None = Field(None, description="Reader format for the console log.")
    options: dict[str, Any] = Field(default_factory=dict,
                                    description="Backend options: address, namespace, context, ...")

    def shell_command(self) -> str:
        """The entrypoint as one shell-quoted string (Ray and Kubernetes take a string)."""
        import shlex

        return shlex.join(self.entrypoint)


class StatusEvent(BaseModel):
    """One row of a run's append-only status history."""

    at: str
    state: RunState
    message: str = ""
    source: str = Field("", description="Who observed it: launch, local, ray, k8s, stop, registry.")


class RunStatus(BaseModel):
    """What a backend observed about a run right now."""

    state: RunState
    message: str = Field("", description="Why: exit code, signal, scheduler message.")
    exit_code: int | None = None
    backend_ids: dict[str, Any] = Field(default_factory=dict,
                                        description="Ids the backend learned after submission.")

    @property
    def terminal(self) -> bool:
        return self.state.terminal


class RunRecord(BaseModel):
    """A run as the registry keeps it: enough to find, re-derive and explain it later."""

    run_id: str
    name: str
    created_at: str
    updated_at: str
    backend: str
    framework: str
    method: str = ""
    state: RunState
    message: str = ""
    exit_code: int | None = None
    backend_ids: dict[str, Any] = Field(default_factory=dict,
                                        description="pid/pgid/start_time (local), submission_id and "
                                        "address (ray), namespace/kind/name (k8s).")
    plan_yaml: str = ""
    artifacts: list[dict[str, Any]] = Field(default_factory=list,
                                            description="Rendered artifacts: name, kind, format, path.")
    run_dir: str = ""
    log_paths: dict[str, str] = Field(default_factory=dict, description="stdout, stderr, ...")
    metrics_paths: list[str] = Field(default_factory=list)
    metrics_format: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    history: list[StatusEvent] = Field(default_factory=list)

    @property
    def terminal(self) -> bool:
        return self.state.terminal


@runtime_checkable
class Backend(Protocol):
    """How a run is started, observed and stopped. Implementations keep no state that a new
    process could not rebuild from ``RunRecord.backend_ids``."""

    name: str

    def submit(self, spec: LaunchSpec) -> dict[str, Any]:
        """Start the run; return the backend ids to record (raise AdvisorError/BackendError)."""
        ...

    def status(self, record: RunRecord) -> RunStatus:
        """The run's state now, derived from the backend ids."""
        ...

    def logs(self, record: RunRecord, tail: int = 200) -> str:
        """The last ``tail`` lines of the run's console output."""
        ...

    def metrics(self, record: RunRecord) -> list[Any]:
        """The run's metric points so far (``advisor.metrics.MetricPoint``), read incrementally
        from its metrics files or, where those are not reachable, from its logs."""
        ...

    def stop(self, record: RunRecord) -> RunStatus:
        """Stop the run (idempotent on a finished run) and return the resulting status."""
        ...


class BackendError(RuntimeError):
    """A backend could not do what was asked (unreachable service, refused job, API error).

    ``reason`` is a short machine-readable cause; the message says what to do.
    """

    def __init__(self, message: str, *, reason: str = "backend_error", status: int | None = None):
        super().__init__(message)
        self.reason = reason
        self.status = status
