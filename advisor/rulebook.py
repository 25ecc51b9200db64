"""The tiny condition language shared by choose_method and choose_framework rule tables.

A rule's ``when`` is a mapping ``fact -> test``; it holds when every test holds. Tests:

* a scalar: the fact equals it (enum facts are compared by their string value);
* a list: the fact is one of them (for a list-valued fact: any element is one of them);
* a mapping of operators: ``any_of`` / ``none_of`` / ``all_of`` (list facts), ``in`` / ``not_in``,
  ``eq`` / ``ne``, ``lt`` / ``lte`` / ``gt`` / ``gte``.

An unknown fact (None) fails every test, so a rule never fires on information the user did not
give. Tables are validated when loaded: an unknown fact or operator is a bug in the data file,
reported with the rule id.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Generic, Iterable, TypeVar

from pydantic import BaseModel

K = TypeVar("K")


class ScoreRule(BaseModel, Generic[K]):
    """One row of a rule table: when ``when`` holds, add ``scores`` to each candidate."""

    id: str
    when: dict[str, Any]
    scores: dict[K, float]
    rationale: str
    source: str


class Exclusion(BaseModel):
    """One row that rules candidates out when ``when`` holds (the subclass names the candidates)."""

    id: str
    when: dict[str, Any]
    reason: str
    source: str


OPERATORS = frozenset({"any_of", "none_of", "all_of", "in", "not_in", "eq", "ne", "lt", "lte", "gt", "gte"})


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v) for v in value]
    return value


def test(value: Any, spec: Any) -> bool:
    """Does one fact value pass one test?"""
    value = _plain(value)
    if value is None:
        return False
    if isinstance(spec, dict):
        return all(_op(value, op, arg) for op, arg in spec.items())
    if isinstance(spec, list):
        if isinstance(value, list):
            return any(v in spec for v in value)
        return value in spec
    if isinstance(value, list):
        return spec in value
    return value == spec


def _op(value: Any, op: str, arg: Any) -> bool:
    items = value if isinstance(value, list) else [value]
    if op == "any_of":
        return any(v in arg for v in items)
    if op == "none_of":
        return not any(v in arg for v in items)
    if op == "all_of":
        return all(a in items for a in arg)
    if op == "in":
        return value in arg
    if op == "not_in":
        return value not in arg
    if op == "eq":
        return value == arg
    if op == "ne":
        return value != arg
    try:
        if op == "lt":
            return value < arg
        if op == "lte":
            return value <= arg
        if op == "gt":
            return value > arg
        if op == "gte":
            return value >= arg
    except TypeError:
        return False
    raise ValueError(f"unknown operator {op!r}")


def holds(when: dict[str, Any] | None, facts: dict[str, Any]) -> bool:
    """True when every test of ``when`` passes against ``facts`` (an empty ``when`` always holds)."""
    return all(test(facts.get(fact), spec) for fact, spec in (when or {}).items())


def check_when(when: Any, known_facts: Iterable[str], where: str) -> None:
    """Validate a ``when`` mapping from a data file (facts and operators must be known)."""
    known = set(known_facts)
    if when is None:
        return
    if not isinstance(when, dict):
        raise ValueError(f"{where}: `when` must be a mapping, got {type(when).__name__}")
    for fact, spec in when.items():
        if fact not in known:
            raise ValueError(f"{where}: unknown fact {fact!r}; known: {sorted(known)}")
        if isinstance(spec, dict):
            bad = set(spec) - OPERATORS
            if bad:
                raise ValueError(f"{where}: unknown operator(s) {sorted(bad)} on {fact!r}")


def describe(when: dict[str, Any] | None) -> str:
    """A compact human-readable form of a ``when`` mapping (for generated guide tables)."""
    if not when:
        return "always"
    parts = []
    for fact, spec in when.items():
        if isinstance(spec, dict):
            for op, arg in spec.items():
                sym = {"lt": "<", "lte": "<=", "gt": ">", "gte": ">=", "eq": "=", "ne": "!="}.get(op)
                arg_text = ", ".join(map(str, arg)) if isinstance(arg, list) else str(arg)
                parts.append(f"{fact} {sym} {arg_text}" if sym else f"{fact} {op.replace('_', ' ')} [{arg_text}]")
        elif isinstance(spec, list):
            parts.append(f"{fact} in [{', '.join(map(str, spec))}]")
        else:
            parts.append(f"{fact} = {str(spec).lower() if isinstance(spec, bool) else spec}")
    return "; ".join(parts)


def check_rule_table(rules: Iterable[Any], exclusions: Iterable[Any], known_facts: Iterable[str],
                     file: str) -> None:
    """Validate a table's scoring rules and exclusions once, at load: unique ids, and every
    ``when`` names known facts with known operators (a typo in the data is a load error)."""
    rules, exclusions, known = list(rules), list(exclusions), list(known_facts)
    ids = [r.id for r in rules] + [e.id for e in exclusions]
    if len(ids) != len(set(ids)):
        raise ValueError(f"{file}: duplicate rule ids")
    for r in rules:
        check_when(r.when, known, f"rules.{r.id}")
    for e in exclusions:
        check_when(e.when, known, f"exclusions.{e.id}")


def rules_markdown(rules: Iterable[ScoreRule], exclusions: Iterable[Exclusion], targets: str) -> str:
    """A rule table (scores and exclusions) as the guide's Markdown table; ``targets`` is the
    exclusion rows' field naming what they exclude (``methods`` or ``frameworks``)."""
    lines = ["| Rule | When | Scores | Why | Source |", "|---|---|---|---|---|"]
    for r in rules:
        scores = ", ".join(f"{_plain(k)} {v:+g}" for k, v in r.scores.items())
        lines.append(f"| `{r.id}` | {describe(r.when)} | {scores} | {r.rationale} | {r.source} |")
    for e in exclusions:
        lines.append(f"| `{e.id}` | {describe(e.when)} | excludes {', '.join(_plain(getattr(e, targets)))} "
                     f"| {e.reason} | {e.source} |")
    return "\n".join(lines)


M = TypeVar("M", bound=BaseModel)


def load_rule_table(filename: str, model: type[M], entries: str, every: Iterable[Enum],
                    known_facts: Iterable[str]) -> M:
    """Load ``advisor/data/<filename>`` as ``model``, check it has an entry under ``entries`` for
    ``every`` member (a method, a framework) and that its rules use known facts and operators."""
    from importlib import resources

    from advisor import yamlio

    text = resources.files("advisor").joinpath("data", filename).read_text(encoding="utf-8")
    table = model.model_validate(yamlio.safe_load(text))
    missing = set(every) - set(getattr(table, entries))
    if missing:
        raise ValueError(f"{filename}: no entry for {sorted(_plain(list(missing)))}")
    check_rule_table(table.rules, table.exclusions, known_facts, filename)  # type: ignore[attr-defined]
    return table
