"""veRL: the rendered launch script (``python -m verl.trainer.main_ppo <overrides>``).

Metrics: the ``file`` logger writes clean JSONL (``{"step": N, "data": {...}}``) to
``$VERL_FILE_LOGGER_PATH``; we point it into the run's output dir so it is found without
guessing the project/experiment layout (research/frameworks.md §1.4). The console
(``step:N - key:value ...`` with numpy reprs) is the fallback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from backends.adapters import base_spec, output_path

METRICS_FILE = "verl_metrics.jsonl"
METRICS_FORMAT = "verl_jsonl"
LOG_FORMAT = "verl_console"


def launch_spec(rendered: Any, plan: Any, *, run_id: str, run_dir: Path, backend: str,
                options: dict[str, Any]):
    work = Path(run_dir) / "work"
    metrics = output_path(plan, work, METRICS_FILE)
    return base_spec(rendered, plan, run_id=run_id, run_dir=run_dir, backend=backend,
                     options=options, metrics_files=[metrics], metrics_format=METRICS_FORMAT,
                     log_format=LOG_FORMAT, creates_placement_groups=True, env={"VERL_FILE_LOGGER_PATH": metrics})
