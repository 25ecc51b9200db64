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
from pathlib import Path
from types import ModuleType
from typing import Any

from advisor.errors import AdvisorError
from backends.follow import FileFollower
from backends.protocol import RunRecord

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
        fmt = metrics.detect_format(first_text.splitlines()[:20])
    return metrics.make_reader(fmt)


_FOLLOWERS: dict[tuple[str, str], FileFollower] = {}
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
