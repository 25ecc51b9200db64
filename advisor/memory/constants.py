"""The one set of documented memory constants (advisor/data/memory_constants.yaml), loaded once."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Any

from advisor import yamlio



@lru_cache(maxsize=1)
def _table() -> dict[str, Any]:
    text = resources.files("advisor").joinpath("data/memory_constants.yaml").read_text(encoding="utf-8")
    data = yamlio.safe_load(text)
    return data["constants"]


def const(name: str) -> float:
    """The value of one constant; KeyError names the constant when it is missing from the table."""
    return float(_table()[name]["value"])


def all_constants() -> dict[str, dict[str, Any]]:
    """Every constant with its unit, rationale and source (for reports and docs)."""
    return {k: dict(v) for k, v in _table().items()}
