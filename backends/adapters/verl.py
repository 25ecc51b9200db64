"""veRL: the rendered launch script (``python -m verl.trainer.main_ppo <overrides>``).

Metrics: the ``file`` logger writes clean JSONL (``{"step": N, "data": {...}}``) to
``$VERL_FILE_LOGGER_PATH``, which the rendered script exports from the same value this adapter
follows (``advisor.run_files``; research/frameworks.md 1.4). The console (``step:N -
key:value ...`` with numpy reprs) is the fallback.
"""

from __future__ import annotations

from advisor.plan import Framework
from advisor.run_files import METRICS_FORMATS
from backends.adapters import framework_launch_spec

METRICS_FORMAT, LOG_FORMAT = METRICS_FORMATS[Framework.VERL]


launch_spec = framework_launch_spec(Framework.VERL, creates_placement_groups=True)
