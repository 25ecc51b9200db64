"""The user's rl-advisor data folder: the run registry, run folders, the HTTP token.

``RL_ADVISOR_HOME`` overrides it (tests use a temporary folder); otherwise the platform's user
data folder (``~/.local/share/rl-advisor`` on Linux).
"""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    """The user's rl-advisor data folder (run registry, tokens, run logs).

    ``RL_ADVISOR_HOME`` overrides it (tests use a temporary folder).
    """
    override = os.environ.get("RL_ADVISOR_HOME")
    if override:
        path = Path(override)
    else:
        from platformdirs import user_data_dir

        path = Path(user_data_dir("rl-advisor", appauthor=False))
    path.mkdir(mode=0o700, parents=True, exist_ok=True)  # new folders are private to the user
    return path
