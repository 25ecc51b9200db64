"""TRL: the rendered entry script (a TRL trainer plus the JSONL metrics callback) as entrypoint.

Metrics: the callback writes ``<output_dir>/metrics.jsonl`` (one object per log step with
``step`` and TRL's raw keys); the console carries TRL's dict lines as a fallback (remote Ray
clusters, where the metric file is not on this machine).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from backends.adapters import base_spec, output_path

METRICS_FILE = "metrics.jsonl"
METRICS_FORMAT = "trl_jsonl"
LOG_FORMAT = "trl_console"

# Offline and quiet: no model hub on these machines, no telemetry, no tokenizer fork warnings.
ENV = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
       "TOKENIZERS_PARALLELISM": "false", "HF_HUB_DISABLE_TELEMETRY": "1",
       "TRL_EXPERIMENTAL_SILENCE": "1", "WANDB_MODE": "disabled"}


def launch_spec(rendered: Any, plan: Any, *, run_id: str, run_dir: Path, backend: str,
                options: dict[str, Any]):
    work = Path(run_dir) / "work"
    return base_spec(rendered, plan, run_id=run_id, run_dir=run_dir, backend=backend,
                     options=options, metrics_files=[output_path(plan, work, METRICS_FILE)],
                     metrics_format=METRICS_FORMAT, log_format=LOG_FORMAT, env=ENV)
