"""Which Python a framework's job runs with on this machine: its own environment, like its own image.

The frameworks pin different runtimes (veRL 0.9.1 requires ``transformers<5.11``; TRL 1.16 runs
with a newer one), so one virtual environment cannot run both. A cluster gives each job its own
container image; here a framework gets its own virtual environment, and the backends point the job
at its interpreter:

* ``$RL_ADVISOR_<FRAMEWORK>_PYTHON`` (e.g. ``RL_ADVISOR_VERL_PYTHON=/opt/verl/bin/python``), else
* the environment ``make setup`` builds beside the running one: ``<venv>-<framework>``
  (``.venv-verl`` beside ``.venv``), else
* ``None``: the job runs with this process's Python (TRL, and any framework without its own).

The local and Ray backends put that interpreter's ``bin`` first on the job's ``PATH`` (so the
rendered ``python3 -m ...`` runs it); the framework's adapter hands it to the Ray workers the
framework starts itself (veRL: its own ``ray_kwargs.ray_init.runtime_env.py_executable`` key,
backends/adapters/verl.py), so its TaskRunner and workers run in the same environment. Only for a
job on this machine (local, or a Ray head on loopback): a remote cluster's own image provides the
framework.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from advisor.errors import AdvisorError


def env_var(framework: str) -> str:
    return f"RL_ADVISOR_{framework.upper()}_PYTHON"


def sibling_venv(framework: str, prefix: str | None = None) -> Path:
    """``<venv>-<framework>`` beside the running environment (the Makefile's layout)."""
    base = Path(prefix or sys.prefix)
    return base.with_name(f"{base.name}-{framework}")


def framework_python(framework: str) -> str | None:
    """The interpreter ``framework``'s jobs run with, or None for this process's own."""
    explicit = os.environ.get(env_var(framework), "").strip()
    if explicit:
        path = Path(explicit).expanduser()
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise AdvisorError(f"{env_var(framework)} is not an executable Python; point it at the "
                               f"interpreter of {framework}'s environment (e.g. .venv-{framework}/bin/python, "
                               "built by `make setup`) or unset it", field=env_var(framework), value=explicit)
        return str(path.absolute())
    candidate = sibling_venv(framework) / "bin" / "python"
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate)
    return None
