"""MCP/CLI tools that launch a Plan and follow the run: launch_run, run_status, run_logs,
run_metrics, stop_run, list_runs.

Safety: ``launch_run`` and ``stop_run`` are dry runs unless ``confirm`` is true; the Plan is
re-validated right before launch; a run is addressed only by its registry id. Every call returns
quickly: launch returns the run id as soon as the backend accepted the job, it never waits for
training. Status is re-derived from the backend on every ``run_status`` call and each change is
appended to the registry's history, so a run outlives the process that launched it.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, StrictBool

from advisor.errors import AdvisorError
from advisor.plan import Plan, plan_from_dict, plan_to_yaml
from backends.protocol import (CONSOLE_LOG, BackendError, LaunchSpec, Resources, RunRecord, RunState,
                               StatusEvent, utcnow)

BackendName = Literal["local", "ray", "k8s"]
RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


# --------------------------------------------------------------------------- result models


class LaunchResult(BaseModel):
    """What launch_run did (or, in a dry run, would do)."""

    dry_run: bool
    run_id: str | None = Field(None, description="Registry id (None in a dry run).")
    backend: str
    state: RunState
    message: str = ""
    entrypoint: str = Field("", description="The command that runs (or would run).")
    launch_script: str = Field("", description="The rendered script the entrypoint runs.")
    working_dir: str = ""
    run_dir: str = ""
    env_keys: list[str] = Field(default_factory=list, description="Environment variables set "
                                "for the run (names only; values are never echoed).")
    resources: Resources = Field(default_factory=Resources)
    artifacts: list[str] = Field(default_factory=list)
    metrics_paths: list[str] = Field(default_factory=list)
    log_path: str = ""
    backend_ids: dict[str, Any] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    next_step: str = ""

    def to_text(self) -> str:
        head = "DRY RUN (nothing launched; pass --confirm to launch)" if self.dry_run else \
            f"launched run {self.run_id} on {self.backend}: {self.state.value}"
        lines = [head, f"  entrypoint: {self.entrypoint}", f"  working dir: {self.working_dir}"]
        if self.artifacts:
            lines.append(f"  artifacts: {', '.join(self.artifacts)}")
        if self.dry_run and self.launch_script:
            body = [ln for ln in self.launch_script.splitlines() if ln.strip() and not ln.startswith("#")]
            lines.append("  launch script:")
            lines += [f"    {ln}" for ln in body[:40]]
        if self.metrics_paths:
            lines.append(f"  metrics: {', '.join(self.metrics_paths)}")
        if self.log_path:
            lines.append(f"  log: {self.log_path}")
        if self.message:
            lines.append(f"  {self.message}")
        lines += [f"  warning: {w}" for w in self.warnings]
        if self.next_step:
            lines.append(f"next: {self.next_step}")
        return "\n".join(lines)


class RunStatusReport(BaseModel):
    run_id: str
    name: str
    backend: str
    framework: str
    method: str
    state: RunState
    message: str = ""
    exit_code: int | None = None
    created_at: str
    updated_at: str
    backend_ids: dict[str, Any] = Field(default_factory=dict)
    run_dir: str = ""
    log_paths: dict[str, str] = Field(default_factory=dict)
    metrics_paths: list[str] = Field(default_factory=list)
    history: list[StatusEvent] = Field(default_factory=list)
    observed: str = Field("", description="Problem reaching the backend, if any (state then "
                          "is the last one recorded).")

    def to_text(self) -> str:
        lines = [f"run {self.run_id} ({self.name}) on {self.backend}: {self.state.value}"]
        if self.message:
            lines.append(f"  {self.message}")
        if self.observed:
            lines.append(f"  backend: {self.observed}")
        lines.append(f"  created {self.created_at}, updated {self.updated_at}")
        for ev in self.history:
            lines.append(f"  {ev.at}  {ev.state.value:<10} {ev.source:<8} {ev.message[:100]}")
        return "\n".join(lines)


class RunLogs(BaseModel):
    run_id: str
    state: RunState
    tail: int
    text: str

    def to_text(self) -> str:
        return self.text


class RunMetrics(BaseModel):
    """The run's metrics so far, in the normalised vocabulary of ``advisor.metrics``."""

    run_id: str
    state: RunState
    points: int = Field(0, description="Metric points read (log steps).")
    last_step: int | None = None
    keys: list[str] = Field(default_factory=list, description="Normalised metric names seen.")
    raw_keys: dict[str, str] = Field(default_factory=dict, description="Normalised name -> raw key.")
    last: dict[str, float] = Field(default_factory=dict, description="Latest value per metric.")
    first: dict[str, float] = Field(default_factory=dict, description="First value per metric.")
    series: dict[str, list[list[float]]] = Field(
        default_factory=dict, description="Per metric, [step, value] pairs (down-sampled to "
        "max_points).")
    sources: list[str] = Field(default_factory=list)
    note: str = ""

    def to_text(self) -> str:
        lines = [f"run {self.run_id}: {self.state.value}, {self.points} points, last step "
                 f"{self.last_step}"]
        for key in self.keys:
            lines.append(f"  {key:<28} first {self.first.get(key, float('nan')):>12.5g}   "
                         f"last {self.last.get(key, float('nan')):>12.5g}")
        if self.note:
            lines.append(f"  {self.note}")
        return "\n".join(lines)


class StopResult(BaseModel):
    run_id: str
    dry_run: bool
    state: RunState
    message: str = ""

    def to_text(self) -> str:
        prefix = "DRY RUN: would stop" if self.dry_run else "stopped"
        return f"{prefix} run {self.run_id}: {self.state.value} {self.message}".rstrip()


class RunSummary(BaseModel):
    run_id: str
    name: str
    backend: str
    framework: str
    method: str
    state: RunState
    created_at: str
    message: str = ""


class RunList(BaseModel):
    runs: list[RunSummary] = Field(default_factory=list)

    def to_text(self) -> str:
        if not self.runs:
            return "no runs recorded"
        lines = [f"{'run id':<44} {'backend':<7} {'method':<6} {'state':<10} created"]
        for r in self.runs:
            lines.append(f"{r.run_id:<44} {r.backend:<7} {r.method:<6} {r.state.value:<10} {r.created_at}")
        return "\n".join(lines)


# --------------------------------------------------------------------------- helpers


def _registry():
    from backends.registry import RegistryError, RunRegistry

    try:
        return RunRegistry()
    except RegistryError as exc:
        raise AdvisorError(str(exc), field="registry", value=exc.reason) from None


def _check_run_id(run_id: str) -> str:
    if not isinstance(run_id, str) or not RUN_ID_PATTERN.match(run_id):
        raise AdvisorError("not a run id", field="run_id", value=run_id,
                           allowed="an id returned by launch_run / list_runs "
                                   "(letters, digits, '.', '_', '-')")
    return run_id


def _get_record(run_id: str) -> RunRecord:
    from backends.registry import RunNotFound

    try:
        return _registry().get(_check_run_id(run_id))
    except RunNotFound:
        raise AdvisorError("no run with this id in the registry", field="run_id", value=run_id,
                           allowed="an id from list_runs") from None


def _registry_call(fn, *args, **kwargs):
    """Registry errors (locked, disk full) become clear tool errors."""
    from backends.registry import RegistryError

    try:
        return fn(*args, **kwargs)
    except RegistryError as exc:
        raise AdvisorError(str(exc), field="registry", value=exc.reason) from None


def _absolutize(plan: Plan, base: Path) -> Plan:
    """Local paths in the Plan that exist relative to ``base`` become absolute: the run starts
    in its own working directory, where relative paths would no longer resolve."""
    data = plan.model_dump(mode="json", exclude_none=True)

    def fix(value: str) -> str:
        p = Path(value).expanduser()
        if not p.is_absolute() and (base / p).exists():
            return str((base / p).resolve())
        return value

    for role in ("policy", "reference", "reward", "critic"):
        rm = data.get(role)
        if rm:
            if rm.get("path"):
                rm["path"] = fix(rm["path"])
            elif (base / rm["model"]).exists():
                rm["path"] = fix(rm["model"])
    data["data"]["train_files"] = [fix(f) for f in data["data"].get("train_files", [])]
    data["data"]["val_files"] = [fix(f) for f in data["data"].get("val_files", [])]
    if data.get("reward_function"):
        data["reward_function"]["path"] = fix(data["reward_function"]["path"])
    return plan_from_dict(data)


def _output_in_run_folder(plan: Plan, work: Path) -> Plan:
    """A relative ``logging.output_dir`` made absolute under the run's working folder, so the
    rendered script and the adapter name the same metric file and checkpoints however the
    framework changes directory (veRL trains inside a Ray actor whose working directory is Ray's)."""
    out = Path(plan.logging.output_dir).expanduser()
    if out.is_absolute():
        return plan
    data = plan.model_dump(mode="json", exclude_none=True)
    data["logging"]["output_dir"] = str((work / out).resolve())
    return plan_from_dict(data)


def _loopback(address: str) -> bool:
    from urllib.parse import urlparse

    host = urlparse(address if "://" in address else "http://" + address).hostname or ""
    return host in ("127.0.0.1", "localhost", "::1")


def _backend_options(backend: str, address: str | None, namespace: str | None,
                     context: str | None) -> dict[str, Any]:
    opts: dict[str, Any] = {}
    if backend == "ray":
        import os

        opts["address"] = address or os.environ.get("RAY_API_SERVER_ADDRESS") or \
            os.environ.get("RL_ADVISOR_RAY_ADDRESS") or "http://127.0.0.1:8265"
    elif address:
        raise AdvisorError("address is only used by the ray backend", field="address",
                           value=address, allowed="omit it, or use backend='ray'")
    if backend == "k8s":
        opts["namespace"] = namespace
        opts["context"] = context
    elif namespace or context:
        raise AdvisorError("namespace/context are only used by the k8s backend",
                           field="namespace" if namespace else "context",
                           value=namespace or context, allowed="omit it, or use backend='k8s'")
    return opts


def prepare_launch(plan: Plan, backend: str, run_id: str, run_dir: Path,
                   options: dict[str, Any]) -> tuple[Any, LaunchSpec, list[str]]:
    """Re-validate, render and adapt a Plan into a LaunchSpec (pure apart from reading paths)."""
    from advisor.plan_check import validate_plan
    from backends.adapters import get_adapter

    # Re-validate right before launch: the Plan may have been edited since it was checked.
    plan = plan_from_dict(plan.model_dump(mode="json", exclude_none=True))
    check = validate_plan(plan)
    if backend == "local" or (backend == "ray" and _loopback(options.get("address", ""))):
        plan = _absolutize(plan, Path.cwd())  # the run starts in its own folder on this machine
        plan = _output_in_run_folder(plan, Path(run_dir) / "work")
    from advisor.render import render_config

    rendered = render_config(plan, plan.framework)
    adapter = get_adapter(plan.framework)
    spec = adapter.launch_spec(rendered, plan, run_id=run_id, run_dir=run_dir, backend=backend,
                               options=options)
    return rendered, spec, list(check.warnings)


def _launch_text(rendered: Any) -> str:
    from backends.adapters import launch_artifact

    try:
        return launch_artifact(rendered).content
    except AdvisorError:
        return ""


def _write_artifacts(rendered: Any, spec: LaunchSpec) -> list[dict[str, Any]]:
    """The run's files, written like render_config's (one folder handle, no link followed,
    scrubbed) and private to the user: the run folder 0700, scripts 0700, other files 0600."""
    from advisor.secrets import scrub_text
    from rl_advisor.render_tool import write_artifacts

    Path(spec.run_dir).mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(spec.run_dir, 0o700)
    paths = write_artifacts(rendered, spec.working_dir, private=True, field="run_dir")
    return [{"name": art.name, "kind": art.kind, "format": art.format, "path": path,
             "content": scrub_text(art.content)} for art, path in zip(rendered.artifacts, paths)]


# --------------------------------------------------------------------------- tools


def launch_run(plan: Plan, backend: BackendName = "local", confirm: StrictBool = False,
               address: str | None = None, namespace: str | None = None,
               context: str | None = None) -> LaunchResult:
    """Launch a Plan on a backend. Without confirm=true this is a DRY RUN that only shows what
    would run (entrypoint, launch script, artifacts, resources). With confirm=true it re-validates
    the Plan, records the run in the registry, starts it, and returns its run id at once (it
    never waits for training).

    backend: local (a process group on this machine), ray (Ray Job Submission at address,
    default http://127.0.0.1:8265), k8s (RayJob/Job + Kueue objects in the kubeconfig's
    current context and namespace)."""
    from backends import get_backend
    from backends.registry import new_run_id, runs_root

    if backend not in ("local", "ray", "k8s"):
        raise AdvisorError("unknown backend", field="backend", value=backend,
                           allowed="local, ray, k8s")
    options = _backend_options(backend, address, namespace, context)
    run_id = new_run_id(plan.name)
    run_dir = runs_root() / run_id
    rendered, spec, warnings = prepare_launch(plan, backend, run_id, run_dir, options)
    result = LaunchResult(
        dry_run=not confirm, backend=backend, state=RunState.DRY_RUN, entrypoint=spec.shell_command(),
        working_dir=spec.working_dir, run_dir=str(run_dir), env_keys=sorted(spec.env),
        resources=spec.resources, artifacts=[a.name for a in rendered.artifacts],
        launch_script=_launch_text(rendered),
        metrics_paths=spec.metrics_files, warnings=warnings)
    if not confirm:
        result.next_step = ("call launch_run again with confirm=true to launch "
                            "(CLI: rl-advisor launch-run ... --confirm)")
        return result

    be = get_backend(backend, options)
    preflight = getattr(be, "preflight", None)
    if preflight is not None:
        try:
            preflight(spec)  # e.g. Ray: refuse a job that can never be scheduled
        except BackendError as exc:
            raise AdvisorError(str(exc), field="backend", value=exc.reason) from None
    try:
        artifacts = _write_artifacts(rendered, spec)
    except AdvisorError:  # the safe writer's own error (it names the run folder): nothing launched
        shutil.rmtree(run_dir, ignore_errors=True)
        raise
    except OSError as exc:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise AdvisorError(f"could not write the run's files under {run_dir}: {exc.strerror or exc}"
                           f"{' (disk full)' if getattr(exc, 'errno', None) == 28 else ''}; nothing was "
                           f"launched", field="run_dir", value=str(run_dir)) from None
    now = utcnow()
    record = RunRecord(
        run_id=run_id, name=plan.name, created_at=now, updated_at=now, backend=backend,
        framework=plan.framework.value, method=plan.method.value, state=RunState.PENDING,
        message="submitting", backend_ids=dict(spec.options.get("planned_ids", {})),
        plan_yaml=plan_to_yaml(plan), artifacts=artifacts, run_dir=str(run_dir),
        log_paths={"console": str(run_dir / CONSOLE_LOG)}, metrics_paths=spec.metrics_files,
        metrics_format=spec.metrics_format, options=options)
    reg = _registry()
    try:
        _registry_call(reg.create, record)
    except AdvisorError:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise
    try:
        ids = be.submit(spec)
    except BackendError as exc:
        _registry_call(reg.set_status, run_id, RunState.FAILED, f"submission failed: {exc}",
                       source="launch")
        raise AdvisorError(f"the {backend} backend refused the run: {exc}", field="backend",
                           value=exc.reason) from None
    _registry_call(reg.update_ids, run_id, ids)
    _registry_call(reg.set_status, run_id, RunState.RUNNING if backend == "local" else RunState.PENDING,
                   "started" if backend == "local" else "submitted", source="launch")
    result.run_id = run_id
    result.state = reg.get(run_id).state
    result.backend_ids = ids
    result.log_path = str(run_dir / CONSOLE_LOG)
    result.next_step = f"run_status / run_metrics / run_logs with run_id={run_id}"
    return result


def refresh(record: RunRecord) -> tuple[RunRecord, str]:
    """Ask the backend for the run's state, append any change to the history."""
    from backends import get_backend

    if record.terminal:
        return record, ""
    reg = _registry()
    try:
        be = get_backend(record.backend, record.options)
        st = be.status(record)
    except BackendError as exc:
        # The backend cannot say (Ray head down, API server unreachable): record that the state
        # is unknown and why, without inventing a terminal state; the next successful poll
        # moves the run on.
        note = f"{record.backend} backend could not be asked: {exc}"
        if exc.reason in ("unreachable", "server_error"):
            _registry_call(reg.set_status, record.run_id, RunState.UNKNOWN, note[:2000],
                           source=record.backend)
            return reg.get(record.run_id), note
        return record, note
    if st.backend_ids:
        _registry_call(reg.update_ids, record.run_id, st.backend_ids)
    _registry_call(reg.set_status, record.run_id, st.state, st.message, exit_code=st.exit_code,
                   source=record.backend)
    return reg.get(record.run_id), ""


def run_status(run_id: str) -> RunStatusReport:
    """The run's state now (re-derived from its backend), with its status history."""
    record, observed = refresh(_get_record(run_id))
    data = record.model_dump(include=set(RunStatusReport.model_fields) - {"observed"})
    return RunStatusReport(**data, observed=observed)


def run_logs(run_id: str, tail: int = 200) -> RunLogs:
    """The last `tail` lines of the run's console output (stdout and stderr)."""
    from backends import get_backend

    if not isinstance(tail, int) or tail < 1 or tail > 10_000:
        raise AdvisorError("tail must be a line count", field="tail", value=tail,
                           allowed="1 to 10000")
    record = _get_record(run_id)
    try:
        text = get_backend(record.backend, record.options).logs(record, tail=tail)
    except BackendError as exc:
        text = f"(logs unavailable: {exc})"
    from advisor.secrets import scrub_text

    return RunLogs(run_id=run_id, state=record.state, tail=tail, text=scrub_text(text))


def _downsample(pairs: list[list[float]], limit: int) -> list[list[float]]:
    if len(pairs) <= limit:
        return pairs
    stride = len(pairs) / limit
    picked = [pairs[int(i * stride)] for i in range(limit - 1)]
    return picked + [pairs[-1]]


def metrics_report(record: RunRecord, points: list[Any], max_points: int = 200) -> RunMetrics:
    series: dict[str, list[list[float]]] = {}
    raw_keys: dict[str, str] = {}
    last_step = None
    for i, p in enumerate(points):
        step = p.step if p.step is not None else i
        last_step = step
        for key, value in p.values.items():
            series.setdefault(key, []).append([step, value])
            raw_keys.setdefault(key, p.keys.get(key, key))
    return RunMetrics(
        run_id=record.run_id, state=record.state, points=len(points), last_step=last_step,
        keys=sorted(series), raw_keys=raw_keys,
        last={k: v[-1][1] for k, v in series.items()}, first={k: v[0][1] for k, v in series.items()},
        series={k: _downsample(v, max_points) for k, v in series.items()},
        sources=sorted({p.source for p in points if p.source}))


def run_metrics(run_id: str, max_points: int = 200) -> RunMetrics:
    """The run's metrics so far (normalised names, first/last value, down-sampled series),
    read incrementally from its metric files while it trains."""
    from backends import get_backend

    if not isinstance(max_points, int) or max_points < 2 or max_points > 100_000:
        raise AdvisorError("max_points out of range", field="max_points", value=max_points,
                           allowed="2 to 100000")
    record, _ = refresh(_get_record(run_id))
    note = ""
    try:
        points = get_backend(record.backend, record.options).metrics(record)
    except BackendError as exc:
        points, note = [], f"metrics unavailable: {exc}"
    except ImportError as exc:
        points, note = [], f"metric readers unavailable: {exc}"
    report = metrics_report(record, points, max_points)
    if not points and not note:
        note = "no metric points yet" + ("" if not record.terminal else " (the run wrote none)")
    report.note = note
    return report


def stop_run(run_id: str, confirm: StrictBool = False) -> StopResult:
    """Stop a run by its registry id. A DRY RUN unless confirm is true."""
    from backends import get_backend

    record, _ = refresh(_get_record(run_id))
    if record.terminal:
        return StopResult(run_id=run_id, dry_run=not confirm, state=record.state,
                          message=f"already {record.state.value}; nothing to stop")
    if not confirm:
        return StopResult(run_id=run_id, dry_run=True, state=record.state,
                          message=f"would stop the {record.backend} run "
                                  f"({record.backend_ids}); call again with confirm=true")
    reg = _registry()
    try:
        st = get_backend(record.backend, record.options).stop(record)
    except BackendError as exc:
        raise AdvisorError(f"could not stop the run: {exc}", field="run_id", value=run_id) from None
    _registry_call(reg.set_status, run_id, RunState.STOPPED, st.message or "stopped on request",
                   exit_code=st.exit_code, source="stop")
    record = reg.get(run_id)
    return StopResult(run_id=run_id, dry_run=False, state=record.state, message=record.message)


def list_runs(limit: int = 20, state: RunState | None = None) -> RunList:
    """Runs in the registry, newest first."""
    if not isinstance(limit, int) or limit < 1 or limit > 1000:
        raise AdvisorError("limit out of range", field="limit", value=limit, allowed="1 to 1000")
    records = _registry_call(_registry().list, limit=limit, state=state)
    return RunList(runs=[RunSummary(run_id=r.run_id, name=r.name, backend=r.backend,
                                    framework=r.framework, method=r.method, state=r.state,
                                    created_at=r.created_at, message=r.message) for r in records])
