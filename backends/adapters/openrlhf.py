"""OpenRLHF: the rendered launch script (``python -m openrlhf.cli.train_ppo_ray ...`` or
``deepspeed --module openrlhf.cli.train_dpo ...``).

Metrics: OpenRLHF writes no metric file of its own apart from TensorBoard/W&B; its PPO console
prints ``Global step N: {...}`` lines, so the console log *is* the metric source (read with the
``openrlhf_console`` reader; ``advisor.run_files`` says so for render and adapter alike). DPO/RM/SFT
print only tqdm postfixes (research/frameworks.md 2.3).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.plan import Framework
from advisor.run_files import METRICS_FORMATS
from backends.adapters import base_spec, metric_sources

METRICS_FORMAT, LOG_FORMAT = METRICS_FORMATS[Framework.OPENRLHF]


def launch_spec(rendered: Any, plan: Any, *, run_id: str, run_dir: Path, backend: str,
                options: dict[str, Any]):
    files, fmt = metric_sources(plan, Framework.OPENRLHF, run_dir)
    return base_spec(rendered, plan, run_id=run_id, run_dir=run_dir, backend=backend,
                     options=options, metrics_files=files, metrics_format=fmt,
                     log_format=LOG_FORMAT, creates_placement_groups=True)
