"""OpenRLHF: the rendered launch script (``python -m openrlhf.cli.train_ppo_ray ...`` or
``deepspeed --module openrlhf.cli.train_dpo ...``).

Metrics: OpenRLHF writes no metric file of its own apart from TensorBoard/W&B; its PPO console
prints ``Global step N: {...}`` lines, so the console log *is* the metric source (read with the
``openrlhf_console`` reader). DPO/RM/SFT print only tqdm postfixes (research/frameworks.md §2.3).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from backends.adapters import base_spec

METRICS_FORMAT = "openrlhf_console"
LOG_FORMAT = "openrlhf_console"


def launch_spec(rendered: Any, plan: Any, *, run_id: str, run_dir: Path, backend: str,
                options: dict[str, Any]):
    console = str(Path(run_dir) / "console.log")
    return base_spec(rendered, plan, run_id=run_id, run_dir=run_dir, backend=backend,
                     options=options, metrics_files=[console], metrics_format=METRICS_FORMAT,
                     log_format=LOG_FORMAT, creates_placement_groups=True)
