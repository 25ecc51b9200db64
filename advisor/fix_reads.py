"""Is a fix read by the pinned release, for this plan? (advisor/data/fix_reads.yaml)

A fix names a framework key and a value. It can only help when the release reads that key for the
plan's configuration (``algorithm.kl_ctrl.kl_coef`` is read by veRL only with
``algorithm.use_kl_in_reward``), when the plan's method has it (its TRL config class or OpenRLHF
entry), and when the value differs from the one already in effect (the plan's rendered value, or
the release's default). :func:`offered` answers that; budget_memory's fix ladder and diagnose_run
call it, so a fix that cannot help is never offered. The table is checked against the releases'
own code by tests/test_fix_reads.py.
"""

from __future__ import annotations

import math
from functools import lru_cache
from importlib import resources
from typing import Any

from advisor import yamlio


@lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    text = resources.files("advisor").joinpath("data/fix_reads.yaml").read_text(encoding="utf-8")
    return yamlio.safe_load(text)["frameworks"]


def entry(framework: str, key: str) -> dict[str, Any] | None:
    return (table().get(framework) or {}).get("keys", {}).get(key)


def default(framework: str, key: str, scope: str | None = None, current: dict[str, Any] | None = None) -> Any:
    """The release's default; ``default_from`` follows an interpolation (veRL's
    ``rollout.log_prob_use_dynamic_bsz: ${oc.select:actor_rollout_ref.actor.use_dynamic_bsz,false}``)."""
    fw = table().get(framework) or {}
    row = fw.get("keys", {}).get(key)
    if row is not None:
        src = row.get("default_from")
        if src and current is not None and src in current:
            return current[src]
        by_scope = row.get("default_by_scope") or {}
        return by_scope.get(scope, row.get("default")) if scope else row.get("default")
    return (fw.get("condition_defaults") or {}).get(key)


def normalise(value: Any) -> Any:
    """Rendered text and YAML values compared alike: 'True'/'true' -> True, '1e-6' -> 1e-06,
    '0.2 0.28' -> [0.2, 0.28]; an empty or None value of an OpenRLHF switch means "set" (True)."""
    if isinstance(value, (list, tuple)):
        return [normalise(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip()
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("null", "none", "~"):
        return None
    if " " in text:
        return [normalise(v) for v in text.split()]
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        return [normalise(v.strip()) for v in inner.split(",")] if inner else []
    try:
        return float(text)
    except ValueError:
        return text


def _same(a: Any, b: Any) -> bool:
    a, b = normalise(a), normalise(b)
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def _holds(test: Any, value: Any) -> bool:
    if isinstance(test, dict):
        if "not" in test:
            return not _same(value, test["not"])
        if "gt" in test:
            v = normalise(value)
            return isinstance(v, float) and v > float(test["gt"])
        if "in" in test:
            return any(_same(value, t) for t in test["in"])
        if "set" in test:
            v = normalise(value)
            return (v not in (None, "", [])) == bool(test["set"])
    return _same(value, test)


def condition_holds(framework: str, when: dict[str, Any] | None, current: dict[str, Any], scope: str | None = None) -> bool:
    """``when`` over the plan's rendered settings (``current``); unset keys take the release default."""
    for key, test in (when or {}).items():
        if key == "any":
            if not any(condition_holds(framework, alt, current, scope) for alt in test):
                return False
            continue
        value = current[key] if key in current else default(framework, key, scope, current)
        if not _holds(test, value):
            return False
    return True


def describe(when: dict[str, Any] | None) -> str:
    parts = []
    for key, test in (when or {}).items():
        if key == "any":
            parts.append("(" + " or ".join(describe(alt) for alt in test) + ")")
        elif isinstance(test, dict):
            op, val = next(iter(test.items()))
            sym = {"not": "!=", "gt": ">", "in": "in", "set": "set" if val else "unset"}[op]
            parts.append(f"{key} {sym}" if op == "set" else f"{key} {sym} {val}")
        else:
            parts.append(f"{key}={test}")
    return " and ".join(parts)


def offered(framework: str, key: str, value: Any, current: dict[str, Any] | None = None,
            scope: str | None = None, has_value: bool = True) -> tuple[bool, str]:
    """(True, "") when the fix ``key=value`` can change what the release does for a plan whose
    rendered settings are ``current`` (None: nothing known, the release defaults apply) and whose
    TRL config class / OpenRLHF entry is ``scope``; else (False, why)."""
    row = entry(framework, key)
    if row is None:
        return False, f"{key} is not in the fix-read table for {framework}"
    current = current or {}
    if framework == "openrlhf" and value in (None, "") and isinstance(row.get("default"), bool):
        value, has_value = True, True  # a bare switch flag
    scopes = row.get("scopes") or (table().get(framework) or {}).get("default_scopes")
    if scope and scopes and scope not in scopes:
        return False, f"{key} is read by {', '.join(scopes)}, not {scope}"
    if not condition_holds(framework, row.get("when"), current, scope):
        return False, f"{key} is read only when {describe(row.get('when'))}"
    if has_value:
        now = current[key] if key in current else default(framework, key, scope, current)
        if _same(value, now):
            return False, f"{key} is already {now}"
    return True, ""


def plan_settings(plan: Any) -> tuple[dict[str, Any], str | None]:
    """The framework settings the plan renders to (key -> value) and its scope (veRL config tree,
    OpenRLHF entry module name, TRL config class); ({}, None) when the plan does not render.

    Only the framework mapping runs (the same functions render_config calls), not the templates:
    the fix ladder asks this once per rung."""
    from advisor.errors import AdvisorError
    from advisor.plan import Framework
    from advisor.render.common import Carry, derive, support_row

    fw = plan.framework
    try:
        support_row(fw, plan.method)
        notes: list[str] = []
        d = derive(plan, notes)
        carry = Carry()
        if fw == Framework.VERL:
            from advisor.render import verl as verl_map
            from advisor.render.quoting import hydra_override

            pairs = verl_map.overrides(plan, d, carry, notes)
            words = [hydra_override(k, v) for k, v in pairs]
            return _verl_words(words), verl_map.config_name(plan)
        if fw == Framework.OPENRLHF:
            from advisor.render import openrlhf as orl_map

            module, _launcher, argv = orl_map.command(plan, d, carry, notes)
            return _flag_words([str(w) for w in argv]), module.rsplit(".", 1)[-1]
        if fw == Framework.TRL:
            from advisor.render import trl as trl_map

            cfg = trl_map.config(plan, d, carry, notes)
            return dict(cfg), trl_map.entry_context(plan)["config_class"].rsplit(".", 1)[-1]
    except AdvisorError:
        return {}, None
    return {}, None


def _verl_words(words: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for word in words:
        word = word.strip("'\"")
        if "=" in word and not word.startswith("-"):
            k, _, v = word.partition("=")
            out[k.lstrip("+")] = v
    return out


def _flag_words(argv: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, word in enumerate(argv):
        if word.startswith("--"):
            vals = []
            for nxt in argv[i + 1:]:
                if nxt.startswith("--"):
                    break
                vals.append(nxt)
            out[word] = True if not vals else (vals[0] if len(vals) == 1 else " ".join(vals))
    return out


def changes(framework: str, key: str, value: Any, current: dict[str, Any], scope: str | None = None) -> bool:
    """Does ``key=value`` differ from the value in effect (rendered, else the release default)?"""
    row = entry(framework, key) or {}
    if framework == "openrlhf" and value in (None, "") and isinstance(row.get("default"), bool):
        value = True
    now = current[key] if key in current else default(framework, key, scope, current)
    return not _same(value, now)


def readable_settings(framework: str, settings: dict[str, Any], before: dict[str, Any],
                      after: dict[str, Any], scope: str | None) -> tuple[dict[str, Any] | None, str]:
    """The part of a multi-key fix the release reads: each key's condition is judged on the plan
    after the fix (its own settings included), its value against the plan before. A key that is not
    read or changes nothing is dropped; the fix is dropped (None, why) when its first key is."""
    merged = {**after, **settings}
    kept: dict[str, Any] = {}
    for i, (key, value) in enumerate(settings.items()):
        row = entry(framework, key)
        ok, why = offered(framework, key, value, merged, scope, has_value=False)
        if ok and row is not None:
            now = before[key] if key in before else default(framework, key, scope, before)
            v = True if (framework == "openrlhf" and value in (None, "")) else value
            ok = not _same(v, now)
            why = why or f"{key} is already {now}"
        if not ok:
            if i == 0:
                return None, why
            continue
        kept[key] = value
    return kept, ""
