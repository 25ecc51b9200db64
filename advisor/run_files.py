"""Where a run's files go: the metrics file, the checkpoint folder, TensorBoard — decided once.

The rendered launch writes these paths into the framework's config and environment, and the
backend adapter follows the same values: before this module the veRL script exported
``VERL_FILE_LOGGER_PATH=<output_dir>/metrics.jsonl`` while the adapter watched
``<output_dir>/verl_metrics.jsonl``, a file veRL never wrote.

Paths are as the run sees them: relative to the launch's working folder unless
``logging.output_dir`` is absolute (the local launcher makes it absolute under the run folder).

Sources: veRL's file logger writes ``$VERL_FILE_LOGGER_PATH`` (verl/utils/tracking.py, research
frameworks.md 1.4); OpenRLHF writes no metric file, its PPO console prints ``Global step N: {...}``
(frameworks.md 2.3); the TRL entry script's callback appends to ``<output_dir>/metrics.jsonl``.
"""

from __future__ import annotations

import posixpath

from pydantic import BaseModel, ConfigDict

from advisor.plan import Framework, Plan

METRICS_JSONL = "metrics.jsonl"

METRICS_FORMATS = {
    # framework: (metric-file reader, console reader) — the advisor.metrics reader formats
    Framework.VERL: ("verl_jsonl", "verl_console"),
    Framework.TRL: ("trl_jsonl", "trl_console"),
    Framework.OPENRLHF: ("openrlhf_console", "openrlhf_console"),
}


class RunFiles(BaseModel):
    """The files one rendered run writes, as paths the run sees."""

    model_config = ConfigDict(frozen=True)

    output_dir: str
    metrics_file: str | None  # None: the framework writes no metric file; its console is the source
    metrics_format: str | None
    log_format: str | None
    checkpoint_dir: str
    tensorboard_dir: str | None


def join(dir_: str, name: str) -> str:
    """``dir_/name`` with one slash (POSIX: the path is read on the cluster, not here)."""
    return posixpath.join(dir_.rstrip("/") or "/", name)


def run_files(plan: Plan, framework: Framework | None = None) -> RunFiles:
    fw = Framework(framework) if framework is not None else plan.framework
    lg = plan.logging
    out = lg.output_dir
    metrics: str | None = None
    if fw == Framework.VERL and ("file" in lg.backends or "jsonl" in lg.backends):
        metrics = join(out, METRICS_JSONL)
    elif fw == Framework.TRL:
        metrics = join(out, METRICS_JSONL)
    fmt, log_fmt = METRICS_FORMATS.get(fw, (None, None))
    if metrics is None and fw == Framework.VERL:
        fmt = log_fmt  # no file logger: the console is the metric source
    checkpoints = join(out, "checkpoints") if fw in (Framework.OPENRLHF, Framework.NEMO_RL) else out
    return RunFiles(output_dir=out, metrics_file=metrics, metrics_format=fmt, log_format=log_fmt,
                    checkpoint_dir=checkpoints,
                    tensorboard_dir=join(out, "tensorboard") if "tensorboard" in lg.backends else None)
