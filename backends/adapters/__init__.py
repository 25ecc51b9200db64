"""Framework adapters: how a rendered Plan becomes an entrypoint, and how its metrics are read.

One module per framework (``trl``, ``verl``, ``openrlhf``), each exposing

* ``METRICS_FORMAT`` / ``LOG_FORMAT``: the ``advisor.metrics`` reader formats of its metric file
  and of its console output;
* ``launch_spec(rendered, plan, *, run_id, run_dir, backend) -> LaunchSpec``: where the rendered
  artifacts go, which one is the entrypoint, which files carry metrics.

The metric *parsing* lives in ``advisor.metrics`` (incremental readers with ``feed(chunk)``);
this package does the file I/O around them: following growing files by offset
(``backends.follow.FileFollower``), one follower per file kept for the life of the process so
repeated ``run_metrics`` calls only read what was appended.
"""

from __future__ import annotations

import importlib
import threading
from collections import OrderedDict
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from advisor.errors import AdvisorError
from advisor.resolve import resolve
from backends.follow import FileFollower
from backends.protocol import CONSOLE_LOG, RunRecord

if TYPE_CHECKING:
    from backends.protocol import LaunchSpec, Resources

ADAPTERS = {"trl": "backends.adapters.trl", "verl": "backends.adapters.verl",
            "openrlhf": "backends.adapters.openrlhf"}


def get_adapter(framework: str) -> ModuleType:
    key = str(getattr(framework, "value", framework))
    if key not in ADAPTERS:
        raise AdvisorError(f"no launch adapter for framework {key!r}", field="plan.framework",
                           value=key, allowed=", ".join(sorted(ADAPTERS)))
    return importlib.import_module(ADAPTERS[key])


def make_reader(fmt: str | None, first_text: str = "") -> Any:
    """An incremental reader from ``advisor.metrics`` for ``fmt`` (detected when None)."""
    import advisor.metrics as metrics

    if fmt is None:
        fmt = metrics.detect_format(first_text)
    return metrics.make_reader(fmt)


MAX_FOLLOWERS = 64
_FOLLOWERS: "OrderedDict[tuple[str, str], FileFollower]" = OrderedDict()  # LRU, bounded
_LOCK = threading.Lock()


def _first_text(path: Path, limit: int = 8192) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read(limit).decode("utf-8", errors="replace")
    except OSError:
        return ""


def follower_for(run_id: str, path: str | Path, fmt: str | None) -> FileFollower:
    key = (run_id, str(path))
    with _LOCK:
        fol = _FOLLOWERS.get(key)
        if fol is None:
            p = Path(path)
            fol = FileFollower(p, lambda: make_reader(fmt, _first_text(p)))
            _FOLLOWERS[key] = fol
            while len(_FOLLOWERS) > MAX_FOLLOWERS:
                _FOLLOWERS.popitem(last=False)
        else:
            _FOLLOWERS.move_to_end(key)
        return fol


def read_metrics(record: RunRecord, *, final: bool | None = None) -> list[Any]:
    """Every metric point of the run so far, read incrementally from its metric files.

    ``final`` (default: the run is in a terminal state) also parses a last line that lacks its
    newline, e.g. when the run was killed mid-write.
    """
    final = record.terminal if final is None else final
    points: list[Any] = []
    for path in record.metrics_paths:
        fol = follower_for(record.run_id, path, record.metrics_format)
        with _LOCK:
            fol.poll()
            if final and not getattr(fol, "_flushed", False):
                fol.flush()
                fol._flushed = True  # type: ignore[attr-defined]
            points.extend(fol.points)
    return points


def launch_artifact(rendered: Any) -> Any:
    """The artifact that starts the run: the launch script, else the Python entry script."""
    for kind in ("launch_script", "entry_script"):
        for art in rendered.artifacts:
            if art.kind == kind:
                return art
    raise AdvisorError("the rendered config has no launch script or entry script",
                       field="plan.framework", value=str(rendered.framework))


def k8s_manifests(rendered: Any) -> list[dict[str, Any]]:
    """The Kubernetes objects of the rendered ``k8s_manifest`` artifact (multi-document YAML)."""
    import yaml

    docs: list[dict[str, Any]] = []
    for art in rendered.artifacts:
        if art.kind == "k8s_manifest":
            docs += [d for d in yaml.safe_load_all(art.content) if isinstance(d, dict)]
    return docs


def entry_resources(rendered: Any) -> "Resources":
    """The driver's resources as rendered in ``ray_job.json`` (entrypoint_num_cpus/gpus)."""
    from backends.protocol import Resources

    for art in rendered.artifacts:
        if art.kind == "ray_job" and isinstance(art.data, dict):
            d = art.data
            return Resources(num_cpus=float(d.get("entrypoint_num_cpus") or 0),
                             num_gpus=float(d.get("entrypoint_num_gpus") or 0),
                             custom={k: float(v) for k, v in (d.get("entrypoint_resources") or {}).items()})
    return Resources()


def ray_resources(plan: Any) -> Any:
    """The placement plan's Ray resources: the one resource plan, computed by advisor.placement."""
    from advisor.placement.resources import ray_resources as compute

    return compute(plan)


def base_spec(rendered: Any, plan: Any, *, run_id: str, run_dir: Path, backend: str,
              options: dict[str, Any], metrics_files: list[str], metrics_format: str | None,
              log_format: str | None, env: dict[str, str] | None = None,
              creates_placement_groups: bool = False) -> "LaunchSpec":
    """The LaunchSpec shared by every framework: artifacts in ``<run_dir>/work``, the launch
    artifact as entrypoint, the Plan's env plus the framework's; the driver's resources from the
    rendered Ray job, and (for frameworks that create their own Ray placement groups: veRL,
    OpenRLHF) the placement plan's bundles, checked for feasibility before submission."""
    from backends.protocol import LaunchSpec

    entry = launch_artifact(rendered)
    work = Path(run_dir) / "work"
    argv = ["bash", entry.name] if entry.format == "shell" else ["python", entry.name]
    resources = entry_resources(rendered)
    if backend in ("ray", "k8s") and creates_placement_groups and \
            not resolve(plan).is_cpu:
        rp = ray_resources(plan)
        bundles = [{"GPU": float(b.GPU), "CPU": float(b.CPU)} for pool in rp.pools for b in pool.bundles]
        strategies = {pool.strategy for pool in rp.pools}
        resources.placement_bundles = bundles
        resources.placement_strategy = next(iter(strategies)) if len(strategies) == 1 else "PACK"
    planned: dict[str, Any] = {}
    if backend == "ray":
        planned = {"submission_id": run_id}  # chosen before submitting: a lost reply loses nothing
    elif backend == "k8s":
        from backends.k8s import WORKLOAD_KINDS, k8s_name

        docs = k8s_manifests(rendered)
        options = {**options, "k8s_manifests": docs}
        kinds = [d.get("kind") for d in docs if d.get("kind") in WORKLOAD_KINDS]
        planned = {"name": k8s_name(run_id), "kind": kinds[0] if kinds else "Job"}
    full_env = {**plan.env, **(env or {})}
    from backends.job_python import framework_python

    python = framework_python(str(plan.framework.value)) if _on_this_machine(backend, options) else None
    return LaunchSpec(run_id=run_id, name=plan.name, framework=str(plan.framework.value),
                      run_dir=str(run_dir), working_dir=str(work), entrypoint=argv, env=full_env,
                      python=python,
                      resources=resources, metrics_files=metrics_files,
                      metrics_format=metrics_format, log_format=log_format,
                      options={**options, "planned_ids": planned})


def _on_this_machine(backend: str, options: dict[str, Any]) -> bool:
    """Whether the job runs on this machine's file system (local, or a Ray head on loopback),
    where this machine's framework environments exist (backends.job_python)."""
    if backend == "local":
        return True
    if backend != "ray":
        return False
    from backends.ray import RayBackend

    return RayBackend(options.get("address")).shared_fs


def metric_sources(plan: Any, framework: Any, run_dir: Path) -> tuple[list[str], str | None]:
    """The files to follow for metrics and their reader format: the rendered run's metric file
    (``advisor.run_files``, the value the launch script was rendered with, seen from the run's
    working folder), else the run's console log."""
    from advisor.run_files import run_files

    files = run_files(plan, framework)
    if files.metrics_file is None:
        return [str(Path(run_dir) / CONSOLE_LOG)], files.metrics_format
    p = Path(files.metrics_file)
    return [str(p if p.is_absolute() else Path(run_dir) / "work" / p)], files.metrics_format


def framework_launch_spec(framework: Any, *, creates_placement_groups: bool = False,
                          env: dict[str, str] | None = None):
    """The ``launch_spec`` of one framework's adapter: its metric sources and log format from
    ``advisor.run_files``, its extra environment, and whether it makes its own placement groups."""
    from advisor.run_files import METRICS_FORMATS

    log_format = METRICS_FORMATS[framework][1]

    def launch_spec(rendered: Any, plan: Any, *, run_id: str, run_dir: Path, backend: str,
                    options: dict[str, Any]) -> "LaunchSpec":
        files, fmt = metric_sources(plan, framework, run_dir)
        return base_spec(rendered, plan, run_id=run_id, run_dir=run_dir, backend=backend, options=options,
                         metrics_files=files, metrics_format=fmt, log_format=log_format, env=env,
                         creates_placement_groups=creates_placement_groups)

    return launch_spec
