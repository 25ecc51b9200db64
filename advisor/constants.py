"""The one constants API: every documented constant of the core, by name, from its table.

Constants live in data files with their unit, rationale and source:
``advisor/data/memory_constants.yaml`` (the memory model) and the ``constants`` section of
``advisor/data/time_model.yaml`` (the time model; its fitted ``factors`` are not constants and are
read by ``advisor.placement.timemodel.default_factors``). A name is defined in one table only.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Any

from advisor import yamlio

def _load(name: str) -> dict[str, Any]:
    text = resources.files("advisor").joinpath("data", name).read_text(encoding="utf-8")
    return yamlio.safe_load(text)["constants"]


@lru_cache(maxsize=1)
def _table() -> dict[str, Any]:
    """The memory constants (the table benchmarks/memory_constant_fit.py refits)."""
    return _load("memory_constants.yaml")


@lru_cache(maxsize=1)
def _all() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = dict(_table())  # the same row objects: a refit sets them in place
    for key, row in _load("time_model.yaml").items():
        if key in out:
            raise ValueError(f"constant {key!r} is defined in memory_constants.yaml and time_model.yaml")
        out[key] = row if isinstance(row, dict) else {"value": row}
    return out


def constant(name: str) -> Any:
    """The value of one constant as written (a number, or a list such as pcie_gen5_gpus);
    KeyError names the constant when no table has it. A calibration profile in use
    (``advisor.profiles.applied``) replaces the allocator terms it fitted."""
    from advisor.profiles import active

    row = _all()[name]
    prof = active()
    if prof is not None and name in prof.memory_constants:
        return float(prof.memory_constants[name])
    return row["value"]


def const(name: str) -> float:
    """The value of one numeric constant."""
    return float(constant(name))


def all_constants() -> dict[str, dict[str, Any]]:
    """Every constant with its unit, rationale and source (for reports and docs)."""
    return {k: dict(v) for k, v in _all().items()}
