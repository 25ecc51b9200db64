"""Loading the diagnosis data tables (rules, signatures, taxonomy) once, and fix lookup."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any


from advisor import fix_reads, yamlio
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


def make_fixes(table: dict[str, list[dict[str, Any]]] | None, framework: str | None,
               plan: object | None = None) -> list[Fix]:
    """The fixes of one rule for ``framework`` (all frameworks when it is unknown).

    With a ``plan`` the fixes are those the pinned release would read for the plan's rendered
    config, with a value that changes something (advisor/fix_reads.py); the condition of a fix that
    enables another (``use_kl_loss=true`` for ``kl_loss_coef``) counts as met. Without a plan the
    config is unknown: every fix is listed, with the condition under which it is read in its note."""
    if not table:
        return []
    frameworks = [framework] if framework in table else (list(table) if framework is None else [])
    if framework is not None and framework not in table:
        return []
    current, scope = _plan_settings(plan) if plan is not None else ({}, None)
    out = []
    for fw in frameworks:
        rows = table.get(fw) or []
        enabled = {str(r["key"]): r["value"] for r in rows if r.get("value") is not None}
        for row in rows:
            value = row.get("value")
            note = row.get("note", "")
            if row.get("kind", "config") == "config":
                if plan is not None and fw == _framework_of(plan) and fw in fix_reads.table():
                    row_scope = row.get("scope")
                    if scope and row_scope and row_scope != scope:
                        continue
                    merged = {**current, **{k: v for k, v in enabled.items() if k != row["key"]}}
                    ok, _why = fix_reads.offered(fw, str(row["key"]), value, merged, scope, has_value=False)
                    if not ok or (value is not None and not fix_reads.changes(fw, str(row["key"]), value, current, scope)):
                        continue
                else:
                    read = fix_reads.entry(fw, str(row["key"]))
                    if read and read.get("when") and "read only" not in note:
                        note = (note + "; " if note else "") + f"read only when {fix_reads.describe(read['when'])}"
            out.append(Fix(framework=fw, key=str(row["key"]), value=None if value is None else str(value),
                           scope=row.get("scope"), kind=row.get("kind", "config"), note=note))
    return out


def _framework_of(plan: object) -> str | None:
    return str(getattr(getattr(plan, "framework", None), "value", "")) or None


_SETTINGS: dict[int, tuple[object, tuple[dict[str, Any], str | None]]] = {}


def _plan_settings(plan: object) -> tuple[dict[str, Any], str | None]:
    """The plan's rendered settings, rendered once per plan object."""
    hit = _SETTINGS.get(id(plan))
    if hit is not None and hit[0] is plan:
        return hit[1]
    try:
        found = fix_reads.plan_settings(plan)
    except Exception:  # noqa: BLE001 - a plan that does not render: nothing known about its config
        found = ({}, None)
    _SETTINGS.clear()
    _SETTINGS[id(plan)] = (plan, found)
    return found
