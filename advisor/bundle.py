"""Where rl-advisor's bundled files live: templates (read by render), guide, SKILL.md, examples.md.

A source checkout keeps templates/ and guide/ at the repo root; an installed wheel carries
copies under advisor/_bundled (see pyproject's force-include). Both resolve here, once. The
core owns this because render reads the templates; the faces serve the guide from here too.
"""

from __future__ import annotations

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
