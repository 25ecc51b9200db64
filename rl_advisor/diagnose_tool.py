"""diagnose_run: the I/O around the pure diagnosis core (files, directories, registry runs).

Text logs are streamed in bounded chunks through one ``DiagnosisSession`` (advisor.diagnosis), so a
log of any size is read once with bounded memory. TensorBoard event files are read with the
``tensorboard`` package. A run id is looked up in the run registry (``backends.registry``): its
metric files give the points, its stdout/stderr the log signatures, its Plan the context.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterable

from pydantic import BaseModel, Field

from advisor.diagnosis import Diagnosis, DiagnosisSession
from advisor.diagnosis.prefilter import set_db_cache
from advisor.errors import AdvisorError
from advisor.yamlio import set_table_cache
from advisor.metrics import make_point
from advisor.plan import Framework, Plan
from rl_advisor.metric_files import is_tensorboard_path, iter_byte_chunks, metric_files_in, read_tensorboard


def _cache_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("rl-advisor")) / "diagnose"


def _file_cache(prefix: str, suffix: str) -> tuple[Callable[[str], bytes | None], Callable[[str, bytes], None]]:
    """(load, save) of one kind of cached blob in the user's cache folder, keyed by the caller's hash.
    The save is atomic (a temp file, then os.replace), so concurrent processes never read half a file."""

    def load(key: str) -> bytes | None:
        try:
            return (_cache_dir() / f"{prefix}-{key}{suffix}").read_bytes()
        except OSError:
            return None

    def save(key: str, blob: bytes) -> None:
        folder = _cache_dir()
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{prefix}-{key}.{os.getpid()}.tmp"
        tmp.write_bytes(blob)
        os.replace(tmp, folder / f"{prefix}-{key}{suffix}")

    return load, save


set_db_cache(*_file_cache("prefilter", ".hsdb"))
set_table_cache(*_file_cache("table", ".json"))


class InlineMetricPoint(BaseModel):
    """One logged step passed inline: raw keys of any framework (``actor/entropy``, ``reward``,
    ``train/kl``) or normalised names (``entropy``, ``reward_mean``)."""

    step: int | None = Field(None, ge=0)
    values: dict[str, float | None] = Field(
        ..., description="Metric key -> value for this step (null = NaN/Inf, which JSON cannot carry).")


def _session(plan: Plan | None, framework: Framework | str | None,
             exclude_sources: Iterable[str] = ()) -> DiagnosisSession:
    fw = framework.value if isinstance(framework, Framework) else framework
    return DiagnosisSession(plan, framework=fw or None, exclude_sources=exclude_sources)


def _feed_file(session: DiagnosisSession, path: Path, *, read_metrics: bool = True,
               notes: list[str] | None = None) -> None:
    first = session.line_no + 1
    session.next_file(read_metrics=read_metrics)
    for chunk in iter_byte_chunks(path):  # bytes: only the lines that matter are decoded
        session.feed_bytes(chunk)
    session.end_file()
    if notes is not None:
        notes.append(f"lines {first}-{session.line_no}: {path}")


def diagnose_path(path: str | Path | list[str | Path], plan: Plan | None = None,
                  framework: Framework | str | None = None, exclude_sources: Iterable[str] = ()) -> Diagnosis:
    """Diagnose a log file (any supported format), several files of one run, a TensorBoard
    file/directory, or a run directory (its metric files and logs). ``exclude_sources``: thread
    URLs whose known cases are left out of the similar-case search (measuring on a known case)."""
    from rl_advisor.safe_paths import check_input_path

    # MCP-supplied paths: resolved (symlinks, '..') and confined to the allowed roots
    paths = [check_input_path(x, field="path") for x in (path if isinstance(path, list) else [path])]
    session = _session(plan, framework, exclude_sources)
    notes: list[str] = []
    try:
        for p in paths:
            _feed_path(session, p, notes, several=len(paths) > 1)
    except OSError as exc:
        raise AdvisorError(f"cannot read: {exc.strerror or exc}", field="path", value=str(path)) from None
    result = session.finish()
    result.notes.extend(notes if len(notes) > 1 else [])
    return result


def _feed_path(session: DiagnosisSession, p: Path, notes: list[str], several: bool) -> None:
    if p.is_file():
        if is_tensorboard_path(p):
            session.add_points(read_tensorboard(p))
        else:
            _feed_file(session, p, notes=notes if several else None)
        return
    if is_tensorboard_path(p):
        session.add_points(read_tensorboard(p))
    files = metric_files_in(p)
    has_metric_file = any(f.name in ("metrics.jsonl", "trainer_state.json") for f in files)
    for f in files:
        # with a structured metric file, console logs are only scanned for signatures
        console = f.name not in ("metrics.jsonl", "trainer_state.json") and f.suffix != ".jsonl"
        _feed_file(session, f, read_metrics=not (has_metric_file and console), notes=notes)


def diagnose_run_record(run_id: str, plan: Plan | None = None,
                        framework: Framework | str | None = None) -> Diagnosis:
    """Diagnose a run of the registry: metric files for points, console logs for signatures."""
    from backends.registry import RunNotFound, RunRegistry

    try:
        record = RunRegistry().get(run_id)
    except RunNotFound:
        raise AdvisorError("no run with this id in the registry", field="run_id", value=run_id,
                           allowed="an id from `rl-advisor run-status` / list of runs") from None
    if plan is None and record.plan_yaml:
        from advisor.plan import plan_from_yaml

        try:
            plan = plan_from_yaml(record.plan_yaml)
        except AdvisorError:
            plan = None
    session = _session(plan, framework or record.framework or None)
    notes: list[str] = []
    metric_paths = [Path(m) for m in record.metrics_paths]
    for m in metric_paths:
        if m.exists():
            if is_tensorboard_path(m):
                session.add_points(read_tensorboard(m))
            else:
                session.next_file(read_metrics=True, fmt=record.metrics_format)
                first = session.line_no + 1
                for chunk in iter_byte_chunks(m):
                    session.feed_bytes(chunk)
                session.end_file()
                notes.append(f"lines {first}-{session.line_no}: {m}")
    read_log = False
    for name, log in sorted(record.log_paths.items()):
        lp = Path(log)
        if lp.is_file() and lp not in metric_paths:
            _feed_file(session, lp, read_metrics=not metric_paths, notes=notes)
            read_log = True
    if not read_log and record.backend != "local":
        _feed_backend_log(session, record, read_metrics=not metric_paths, notes=notes)
    result = session.finish()
    result.notes.append(f"run {run_id}: state {getattr(record.state, 'value', record.state)}"
                        + (f" ({record.message})" if record.message else ""))
    result.notes.extend(notes)
    return result


BACKEND_LOG_LINES = 200_000
"""How much of a job's log a Ray or Kubernetes backend is asked for (the last lines)."""


def _feed_backend_log(session: DiagnosisSession, record: Any, *, read_metrics: bool,
                      notes: list[str]) -> None:
    """A Ray or Kubernetes run keeps its console on the cluster (no console.log here): read the
    job's log through its backend, as run_logs does."""
    from backends import get_backend
    from backends.protocol import BackendError

    try:
        text = get_backend(record.backend, record.options).logs(record, tail=BACKEND_LOG_LINES)
    except (BackendError, AdvisorError) as exc:
        notes.append(f"the {record.backend} job's log could not be read: {exc}")
        return
    if not text:
        return
    first = session.line_no + 1
    session.next_file(read_metrics=read_metrics)
    session.feed(text if text.endswith("\n") else text + "\n")
    session.end_file()
    notes.append(f"lines {first}-{session.line_no}: the {record.backend} job's log")


def diagnose_inline(metrics: Iterable[InlineMetricPoint], log_text: str | None = None,
                    plan: Plan | None = None, framework: Framework | str | None = None) -> Diagnosis:
    session = _session(plan, framework)
    points = []
    for i, m in enumerate(metrics, 1):
        raw = {k: (float("nan") if v is None else v) for k, v in m.values.items()}
        points.append(make_point(raw, step=m.step if m.step is not None else i, line=None, source="inline"))
    session.add_points(points)
    if log_text:
        session.feed(log_text)
    return session.finish()


def diagnose_run(run_id: str | None = None, path: str | None = None,
                 metrics: list[InlineMetricPoint] | None = None, log_text: str | None = None,
                 plan: Plan | None = None, framework: Framework | None = None) -> Diagnosis:
    """Name what is wrong with an RL post-training run, with evidence and exact fixes.

    Give exactly one source: ``run_id`` (a run of the registry), ``path`` (a log file — veRL
    console/JSONL, TRL trainer_state.json/console/metrics.jsonl, OpenRLHF, NeMo-RL, a traceback —
    a TensorBoard directory, or a run directory), or ``metrics`` (inline points, optionally with
    ``log_text``) / ``log_text`` alone. The Plan, when given, adds context (framework for the fix
    keys, max_response_length for truncation). Findings are ranked, most important first.
    """
    given = [name for name, v in (("run_id", run_id), ("path", path),
                                  ("metrics/log_text", metrics or log_text)) if v]
    if len(given) != 1:
        raise AdvisorError("give exactly one source of the run", field="run_id|path|metrics",
                           value=", ".join(given) or None,
                           allowed="run_id, or path, or metrics (inline points) and/or log_text")
    if run_id:
        return diagnose_run_record(run_id, plan, framework)
    if path:
        return diagnose_path(path, plan, framework)
    return diagnose_inline(metrics or [], log_text, plan, framework)
