"""Loading the diagnosis data tables (rules, signatures, taxonomy) once, and fix lookup."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any


from advisor import yamlio
from advisor.diagnosis.model import Fix

_DATA = Path(__file__).resolve().parent.parent / "data"

FRAMEWORKS = ("verl", "openrlhf", "trl", "nemo_rl")


@lru_cache(maxsize=None)
def load_table(name: str) -> dict[str, Any]:
    return yamlio.safe_load((_DATA / name).read_text(encoding="utf-8"))


def taxonomy() -> dict[str, dict[str, Any]]:
    """Category name -> {group, priority, title, description, aliases}."""
    return load_table("diagnosis_taxonomy.yaml")["categories"]


def rules() -> list[dict[str, Any]]:
    return load_table("diagnosis_rules.yaml")["rules"]


def signatures() -> list[dict[str, Any]]:
    return load_table("diagnosis_signatures.yaml")["signatures"]


def oom_table() -> dict[str, Any]:
    return load_table("diagnosis_signatures.yaml")["oom"]


def category_aliases() -> dict[str, str]:
    """Alias label -> category (plus every category to itself)."""
    out = {}
    for name, row in taxonomy().items():
        out[name] = name
        for alias in row.get("aliases", []) or []:
            out[alias] = name
    return out


def make_fixes(table: dict[str, list[dict[str, Any]]] | None, framework: str | None) -> list[Fix]:
    """The fixes of one rule for ``framework`` (all frameworks when it is unknown)."""
    if not table:
        return []
    frameworks = [framework] if framework in table else (list(table) if framework is None else [])
    if framework is not None and framework not in table:
        return []
    out = []
    for fw in frameworks:
        for row in table.get(fw) or []:
            value = row.get("value")
            out.append(Fix(framework=fw, key=str(row["key"]), value=None if value is None else str(value),
                           scope=row.get("scope"), kind=row.get("kind", "config"), note=row.get("note", "")))
    return out
