"""The audit's data tables, loaded once: consumer formats (data_formats.yaml) and checks
(data_audit_rules.yaml)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from advisor import yamlio
from advisor.diagnosis.model import Fix

_DATA = Path(__file__).resolve().parent.parent / "data"


@lru_cache(maxsize=None)
def _load(name: str) -> dict[str, Any]:
    return yamlio.safe_load((_DATA / name).read_text(encoding="utf-8"))


def formats() -> dict[str, Any]:
    return _load("data_formats.yaml")


def rules() -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in _load("data_audit_rules.yaml")["rules"]}


def family_of(method: str) -> str | None:
    for family, methods in formats()["families"].items():
        if method in methods:
            return family
    return None


def format_spec(framework: str, family: str) -> dict[str, Any] | None:
    return (formats()["formats"].get(framework) or {}).get(family)


def supported() -> dict[str, list[str]]:
    """framework -> families it has a format row for."""
    return {fw: sorted(rows) for fw, rows in formats()["formats"].items()}


def aliases(role: str) -> list[str]:
    return list(formats()["aliases"].get(role, []))


def verl_default_scorers() -> dict[str, Any]:
    return formats()["verl_default_scorers"]


def fixes_for(rule_id: str, framework: str, **subst: Any) -> list[Fix]:
    """A rule's fix rows for ``framework``, with ``{name}`` placeholders filled from ``subst``."""
    table = (rules()[rule_id].get("fixes") or {}).get(framework) or []
    return [make_fix(framework, row, **subst) for row in table]


def make_fix(framework: str, row: dict[str, Any], **subst: Any) -> Fix:
    def fill(text: Any) -> Any:
        if not isinstance(text, str):
            return text
        for k, v in subst.items():
            text = text.replace("{" + k + "}", str(v))
        return text

    value = row.get("value")
    return Fix(framework=framework, key=fill(str(row["key"])), value=None if value is None else fill(str(value)),
               scope=row.get("scope"), kind=row.get("kind", "config"), note=fill(row.get("note", "")))
