"""Where rl-advisor's bundled files (templates, guide, SKILL.md, examples.md) and user data live.

A source checkout keeps templates/ and guide/ at the repo root; an installed wheel carries
copies under rl_advisor/_bundled (see pyproject's force-include). Both resolve here, once.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

_PKG = Path(__file__).resolve().parent


@cache
def bundle_root() -> Path:
    """The folder holding templates/, guide/, SKILL.md and examples.md."""
    repo = _PKG.parent
    if (repo / "templates").is_dir() and (repo / "guide").is_dir():
        return repo
    bundled = _PKG / "_bundled"
    if bundled.is_dir():
        return bundled
    raise FileNotFoundError(f"rl-advisor data not found under {repo} or {bundled}; reinstall the package")


def templates_dir() -> Path:
    return bundle_root() / "templates"


def guide_dir() -> Path:
    return bundle_root() / "guide"


def skill_file() -> Path:
    return bundle_root() / "SKILL.md"


def examples_file() -> Path:
    return bundle_root() / "examples.md"


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
