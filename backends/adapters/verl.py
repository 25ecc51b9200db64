"""veRL: the rendered launch script (``python -m verl.trainer.main_ppo <overrides> "$@"``).

Metrics: the ``file`` logger writes clean JSONL (``{"step": N, "data": {...}}``) to
``$VERL_FILE_LOGGER_PATH``, which the rendered script exports from the same value this adapter
follows (``advisor.run_files``; research/frameworks.md 1.4). The console (``step:N -
key:value ...`` with numpy reprs) is the fallback.

Its own environment (``backends.job_python``, e.g. ``.venv-verl``): the backend puts its ``bin``
first on the job's PATH, so the script's ``python3`` is veRL's; veRL's TaskRunner and workers are
Ray actors that veRL starts through its own ``ray.init(runtime_env=...)``, which always carries a
``py_executable`` key (``ray_kwargs.ray_init.runtime_env.py_executable`` in
verl/trainer/config/ppo_trainer.yaml, null by default). So the interpreter goes to veRL as that
override, appended to the script's arguments at launch (a job-level Ray ``py_executable`` would
conflict with veRL's key when Ray merges the two runtime environments).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from advisor.errors import AdvisorError
from advisor.plan import Framework
from advisor.run_files import METRICS_FORMATS
from backends.adapters import framework_launch_spec
from backends.job_python import env_var

METRICS_FORMAT, LOG_FORMAT = METRICS_FORMATS[Framework.VERL]
WORKER_PYTHON_KEY = "ray_kwargs.ray_init.runtime_env.py_executable"
_PLAIN_PATH = re.compile(r"[A-Za-z0-9_./+-]+")

_base_launch_spec = framework_launch_spec(Framework.VERL, creates_placement_groups=True)


def launch_spec(rendered: Any, plan: Any, *, run_id: str, run_dir: Path, backend: str,
                options: dict[str, Any]):
    spec = _base_launch_spec(rendered, plan, run_id=run_id, run_dir=run_dir, backend=backend,
                             options=options)
    if spec.python:
        if not _PLAIN_PATH.fullmatch(spec.python):  # a Hydra override value, unquoted
            raise AdvisorError("veRL's interpreter path must be plain (letters, digits, _ . / + -) "
                               "to pass as a Hydra override", field=env_var("verl"), value=spec.python)
        spec.entrypoint = [*spec.entrypoint, f"{WORKER_PYTHON_KEY}={spec.python}"]
    return spec
