"""The ranked fix ladder: each rung of advisor/data/memory_fixes.yaml applied to a copy of the
Plan, the ledger rebuilt, and the new peak reported in the framework's exact keys.

Ranking: rungs that make every pool fit come first; among them the cheapest (table order, which
is cost order); then the rungs that only lower the peak, by how much. Rungs that do not apply
(already set, no key for this framework, no effect) are dropped.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Any

from pydantic import ValidationError

from advisor import yamlio
from advisor.errors import AdvisorError
from advisor.fix_reads import plan_settings, readable_settings
from advisor.memory.models import Fix, MemoryBudget
from advisor.plan import Plan

MAX_FIXES = 8
MIN_GAIN_GIB = 0.05


@lru_cache(maxsize=1)
def fix_table() -> list[dict[str, Any]]:
    text = resources.files("advisor").joinpath("data/memory_fixes.yaml").read_text(encoding="utf-8")
    return yamlio.safe_load(text)["fixes"]


def _get(data: dict[str, Any], path: str) -> Any:
    cur: Any = data
    for part in path.split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def _set(data: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    cur = data
    for part in parts[:-1]:
        if cur.get(part) is None:
            cur[part] = {}
        cur = cur[part]
    cur[parts[-1]] = value


def _default(plan: Plan, path: str) -> Any:
    """The current value of a Plan field, including defaults (model_dump keeps them)."""
    return _get(plan.model_dump(mode="python"), path)


def _new_value(plan: Plan, path: str, op: Any) -> Any:
    cur = _default(plan, path)
    if op == "half":
        if path == "data.micro_batch_size_per_gpu" and cur is None:
            return None
        if cur is None or cur <= 1:
            return None
        return max(1, int(cur) // 2)
    if op == "double":
        if cur is None:
            return None
        new = int(cur) * 2
        if path.endswith((".sp", ".cp")) and new > plan.hardware.total_gpus:
            return None  # a sequence-parallel group cannot exceed the GPUs
        return new
    if isinstance(op, str) and op.startswith("minus_"):
        step = float(op.split("_", 1)[1])
        if cur is None or cur - step < 0.1 - 1e-9:
            return None
        return round(cur - step, 2)
    return None if cur == op else op


def _render_value(template: str, new: Any, framework: str) -> str:
    if "{new}" not in template:
        return template
    if isinstance(new, bool):
        new = ("True" if new else "False") if framework == "verl" else ("true" if new else "false")
    return template.replace("{new}", str(new))


def apply_fix(plan: Plan, row: dict[str, Any]) -> tuple[Plan, dict[str, str]] | None:
    """The plan with one rung applied and the plan changes as text, or None when it does not apply."""
    for path, want in (row.get("requires") or {}).items():
        if _default(plan, path) != want:
            return None
    data = plan.model_dump(mode="python", exclude_none=True)
    changes: dict[str, str] = {}
    for path, op in row["plan_change"].items():
        new = _new_value(plan, path, op)
        if new is None:
            return None
        _set(data, path, new)
        changes[path] = str(new)
    try:
        return Plan.model_validate(data), changes
    except ValidationError:
        return None  # e.g. doubling TP past the GPUs of a node


def rank_fixes(plan: Plan, budget: MemoryBudget) -> list[Fix]:
    """Evaluate every applicable rung on a copy of the plan; return the ranked ladder.

    Only computed when the plan does not fit (a fitting plan needs no fix); each candidate plan
    goes through the same ledger as the original."""
    from advisor.memory.ledger import build_ledger

    if budget.fits:
        return []
    worst = max(p.peak_gib - p.capacity_gib for p in budget.pools) if budget.pools else 0.0
    base_peak = budget.peak_gib() if budget.pools else 0.0
    fw = plan.framework.value
    before = plan_settings(plan)[0]
    found: list[tuple[int, int, float, Fix]] = []
    for order, row in enumerate(fix_table()):
        keys = (row.get("keys") or {}).get(fw)
        if not keys:
            continue
        applied = apply_fix(plan, row)
        if applied is None:
            continue
        new_plan, changes = applied
        try:
            after = build_ledger(new_plan)
        except AdvisorError:
            continue
        new_peak = after.peak_gib() if after.pools else 0.0
        new_worst = max(p.peak_gib - p.capacity_gib for p in after.pools) if after.pools else 0.0
        if not after.fits and new_worst > worst - MIN_GAIN_GIB and after.host.fits == budget.host.fits:
            continue
        first_new = next(iter(changes.values()))
        settings = {k: _render_value(str(v), first_new, fw) for k, v in keys.items()}
        rendered_after, scope = plan_settings(new_plan)
        settings, _why = readable_settings(fw, settings, before, rendered_after, scope)
        if settings is None:
            continue  # the release would not read it for this plan, or it is already set
        fix = Fix(rank=0, id=row["id"], framework=plan.framework, settings=settings, plan_change=changes,
                  what=row["what"], new_peak_gib=round(new_peak, 2), fits_after=after.fits,
                  cost=row.get("cost", ""), source=row.get("source", ""))
        found.append((0 if after.fits else 1, order, new_worst, fix))
    found.sort(key=lambda x: (x[0], x[1] if x[0] == 0 else 0, x[2]))
    fixes = [f for _, _, _, f in found]
    if not any(f.fits_after for f in fixes):
        combo = _combined(plan, budget)
        if combo is not None:
            fixes.insert(0, combo)
    out = []
    for i, fix in enumerate(fixes[:MAX_FIXES], start=1):
        fix.rank = i
        out.append(fix)
    _ = base_peak
    return out


def _overrun(b: MemoryBudget) -> float:
    return max(p.peak_gib - p.capacity_gib for p in b.pools) if b.pools else 0.0


def _combined(plan: Plan, budget: MemoryBudget, max_steps: int = 5) -> Fix | None:
    """When no single rung fits: apply rungs greedily (largest drop of the worst pool's overrun
    first) until the plan fits or nothing helps; one Fix with all their settings together."""
    from advisor.memory.ledger import build_ledger

    fw = plan.framework.value
    current, cur_budget = plan, budget
    current_settings = plan_settings(plan)[0]
    used: list[dict[str, Any]] = []
    settings: dict[str, str] = {}
    changes: dict[str, str] = {}
    for _ in range(max_steps):
        best = None
        for row in fix_table():
            keys = (row.get("keys") or {}).get(fw)
            if not keys or row in used:
                continue
            applied = apply_fix(current, row)
            if applied is None:
                continue
            first = next(iter(applied[1].values()))
            wanted = {k: _render_value(str(v), first, fw) for k, v in keys.items()}
            after, scope = plan_settings(applied[0])
            kept = readable_settings(fw, wanted, current_settings, after, scope)[0]
            if kept is None:
                continue
            try:
                after = build_ledger(applied[0])
            except AdvisorError:
                continue
            gain = _overrun(cur_budget) - _overrun(after)
            if gain > MIN_GAIN_GIB and (best is None or gain > best[0]):
                best = (gain, row, applied, after, kept)
        if best is None:
            break
        _, row, (current, change), cur_budget, kept = best
        current_settings = plan_settings(current)[0]
        used.append(row)
        changes.update(change)
        settings.update(kept)
        if cur_budget.fits:
            break
    if len(used) < 2:
        return None
    return Fix(rank=0, id="combined:" + "+".join(r["id"] for r in used), framework=plan.framework,
               settings=settings, plan_change=changes,
               what="no single change fits; together: " + "; ".join(r["what"] for r in used),
               new_peak_gib=round(cur_budget.peak_gib(), 2), fits_after=cur_budget.fits,
               cost="; ".join(r.get("cost", "") for r in used), source="; ".join(r.get("source", "") for r in used))
