"""TRL: the rendered entry script (a TRL trainer plus the JSONL metrics callback) as entrypoint.

Metrics: the callback writes ``<output_dir>/metrics.jsonl`` (one object per log step with
``step`` and TRL's raw keys; the path is ``advisor.run_files``'s, shared with the render); the
console carries TRL's dict lines as a fallback (remote Ray clusters, where the metric file is not
on this machine).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.plan import Framework
from advisor.run_files import METRICS_FORMATS
from backends.adapters import base_spec, metric_sources

METRICS_FORMAT, LOG_FORMAT = METRICS_FORMATS[Framework.TRL]

# Offline and quiet: no model hub on these machines, no telemetry, no tokenizer fork warnings.
ENV = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
       "TOKENIZERS_PARALLELISM": "false", "HF_HUB_DISABLE_TELEMETRY": "1",
       "TRL_EXPERIMENTAL_SILENCE": "1", "WANDB_MODE": "disabled"}


def launch_spec(rendered: Any, plan: Any, *, run_id: str, run_dir: Path, backend: str,
                options: dict[str, Any]):
    files, fmt = metric_sources(plan, Framework.TRL, run_dir)
    return base_spec(rendered, plan, run_id=run_id, run_dir=run_dir, backend=backend,
                     options=options, metrics_files=files, metrics_format=fmt,
                     log_format=LOG_FORMAT, env=ENV)
