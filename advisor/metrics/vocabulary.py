"""The normalised metric vocabulary: one name per quantity, whatever the framework called it.

The table lives in ``advisor/data/diagnosis_metric_vocabulary.yaml`` (knowledge is data). This
module loads it once and answers "which normalised metric is this raw key?" with a per-key cache,
so a reader pays the regex cost once per distinct key, not once per log line.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from advisor import yamlio


_DATA = Path(__file__).resolve().parent.parent / "data" / "diagnosis_metric_vocabulary.yaml"

_PREFIXES = ("train/",)


class MetricDef(NamedTuple):
    name: str
    description: str
    keys: tuple[str, ...]
    patterns: tuple[re.Pattern[str], ...]


class Resolved(NamedTuple):
    """A raw key's normalised name and its priority (lower = preferred when several keys of one
    log map to the same name)."""

    name: str
    priority: int


@lru_cache(maxsize=1)
def vocabulary() -> dict[str, MetricDef]:
    """Every normalised metric, by name, in table order."""
    data = yamlio.safe_load(_DATA.read_text(encoding="utf-8"))
    out: dict[str, MetricDef] = {}
    for name, row in data["metrics"].items():
        out[name] = MetricDef(name, row.get("description", ""), tuple(row.get("keys", ())),
                              tuple(re.compile(p) for p in row.get("patterns", ())))
    return out


@lru_cache(maxsize=1)
def _exact_index() -> dict[str, Resolved]:
    index: dict[str, Resolved] = {}
    for mdef in vocabulary().values():
        for prio, key in enumerate(mdef.keys):
            index.setdefault(key, Resolved(mdef.name, prio))
    for mdef in vocabulary().values():  # a normalised name passed as a key maps to itself, last
        index.setdefault(mdef.name, Resolved(mdef.name, 100))
    return index


_ROLE_PREFIXES = ("actor/", "critic/")
"""veRL's role prefixes (``actor/pg_clipfrac``, ``critic/score/mean``): people write the names without them in notes
and issues ("score/mean", "pg_clipfrac"), so a name that is a known key less its role prefix maps to that key's
metric when that is unambiguous (an exact key always wins: ``grad_norm`` is the policy's)."""


@lru_cache(maxsize=1)
def _role_suffix_index() -> dict[str, Resolved]:
    exact = _exact_index()
    found: dict[str, set[str]] = {}
    best: dict[str, Resolved] = {}
    for mdef in vocabulary().values():
        for prio, key in enumerate(mdef.keys):
            for pre in _ROLE_PREFIXES:
                if key.startswith(pre) and key[len(pre):] not in exact:
                    suffix = key[len(pre):]
                    found.setdefault(suffix, set()).add(mdef.name)
                    best.setdefault(suffix, Resolved(mdef.name, prio + 10))
    return {s: r for s, r in best.items() if len(found[s]) == 1}


_SPACED_SLASH = re.compile(r"\s*/\s*")


@lru_cache(maxsize=65536)
def normalize_key(raw_key: str) -> Resolved | None:
    """The normalised name of ``raw_key`` (``None`` when the key is not in the vocabulary).

    Exact keys first, then the key without a ``train/`` prefix, then the family patterns. Spaces around a
    key's slashes are dropped first: hand-copied tables and notebook renderings of the Trainer's logs write
    ``completions / clipped_ratio`` for ``completions/clipped_ratio``.
    """
    if " /" in raw_key or "/ " in raw_key:
        return normalize_key(_SPACED_SLASH.sub("/", raw_key.strip()))
    index = _exact_index()
    candidates = [raw_key] + [raw_key[len(p):] for p in _PREFIXES if raw_key.startswith(p)]
    for cand in candidates:
        hit = index.get(cand)
        if hit is not None:
            return hit
    role = _role_suffix_index()
    for cand in candidates:
        hit = role.get(cand)
        if hit is not None:
            return hit
    for mdef in vocabulary().values():
        for prio, pat in enumerate(mdef.patterns):
            for cand in candidates:
                m = pat.match(cand)
                if m:
                    suffix = m.groupdict().get("name")
                    return Resolved(f"{mdef.name}:{suffix}" if suffix else mdef.name, prio)
    return None


def base_name(name: str) -> str:
    """``reward_component:format`` -> ``reward_component``."""
    return name.split(":", 1)[0]
