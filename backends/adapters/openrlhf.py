"""OpenRLHF: the rendered launch script (``python -m openrlhf.cli.train_ppo_ray ...`` or
``deepspeed --module openrlhf.cli.train_dpo ...``).

Metrics: OpenRLHF writes no metric file of its own apart from TensorBoard/W&B; its PPO console
prints ``Global step N: {...}`` lines, so the console log *is* the metric source (read with the
``openrlhf_console`` reader; ``advisor.run_files`` says so for render and adapter alike). DPO/RM/SFT
print only tqdm postfixes (research/frameworks.md 2.3).
"""

from __future__ import annotations

from advisor.plan import Framework
from advisor.run_files import METRICS_FORMATS
from backends.adapters import framework_launch_spec

METRICS_FORMAT, LOG_FORMAT = METRICS_FORMATS[Framework.OPENRLHF]


launch_spec = framework_launch_spec(Framework.OPENRLHF, creates_placement_groups=True)
