"""TRL: the rendered entry script (a TRL trainer plus the JSONL metrics callback) as entrypoint.

Metrics: the callback writes ``<output_dir>/metrics.jsonl`` (one object per log step with
``step`` and TRL's raw keys; the path is ``advisor.run_files``'s, shared with the render); the
console carries TRL's dict lines as a fallback (remote Ray clusters, where the metric file is not
on this machine).
"""

from __future__ import annotations

from advisor.plan import Framework
from advisor.run_files import METRICS_FORMATS
from backends.adapters import framework_launch_spec

METRICS_FORMAT, LOG_FORMAT = METRICS_FORMATS[Framework.TRL]

# Offline and quiet: no model hub on these machines, no telemetry, no tokenizer fork warnings.
ENV = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
       "TOKENIZERS_PARALLELISM": "false", "HF_HUB_DISABLE_TELEMETRY": "1",
       "TRL_EXPERIMENTAL_SILENCE": "1", "WANDB_MODE": "disabled"}


launch_spec = framework_launch_spec(Framework.TRL, env=ENV)
