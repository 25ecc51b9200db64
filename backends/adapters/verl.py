"""veRL: the rendered launch script (``python -m verl.trainer.main_ppo <overrides>``).

Metrics: the ``file`` logger writes clean JSONL (``{"step": N, "data": {...}}``) to
``$VERL_FILE_LOGGER_PATH``, which the rendered script exports from the same value this adapter
follows (``advisor.run_files``; research/frameworks.md 1.4). The console (``step:N -
key:value ...`` with numpy reprs) is the fallback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.plan import Framework
from advisor.run_files import METRICS_FORMATS
from backends.adapters import base_spec, metric_sources

METRICS_FORMAT, LOG_FORMAT = METRICS_FORMATS[Framework.VERL]


def launch_spec(rendered: Any, plan: Any, *, run_id: str, run_dir: Path, backend: str,
                options: dict[str, Any]):
    files, fmt = metric_sources(plan, Framework.VERL, run_dir)
    return base_spec(rendered, plan, run_id=run_id, run_dir=run_dir, backend=backend,
                     options=options, metrics_files=files, metrics_format=fmt,
                     log_format=LOG_FORMAT, creates_placement_groups=True)
