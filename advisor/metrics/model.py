"""Metric points and series: what every reader produces and diagnose_run consumes."""

from __future__ import annotations

from functools import lru_cache

from pydantic import BaseModel, Field

from advisor.metrics.vocabulary import normalize_key


class MetricPoint(BaseModel):
    """The metrics of one logged step.

    ``values`` holds the normalised names (``reward_mean``, ``kl``, ...); ``keys`` says which raw
    key each normalised value came from; ``raw`` keeps every numeric key exactly as logged.
    """

    step: int | None = Field(None, description="Training step (None when the log has none).")
    line: int | None = Field(None, description="1-based line of the log where the point was read.")
    source: str = Field("", description="Reader format that produced the point.")
    values: dict[str, float] = Field(default_factory=dict)
    keys: dict[str, str] = Field(default_factory=dict)
    raw: dict[str, float] = Field(default_factory=dict)
    total_steps: int | None = Field(None, description="Planned total steps when the log shows it.")


class MetricSeries(BaseModel):
    """One normalised metric over steps (possibly down-sampled: see ``advisor.metrics.store``)."""

    name: str
    key: str = Field("", description="The raw key it was read from.")
    steps: list[int] = Field(default_factory=list)
    values: list[float] = Field(default_factory=list)


@lru_cache(maxsize=4096)
def _key_plan(raw_keys: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """(normalised name, raw key it is read from) for a record's keys, in the order the names
    first appear; of several keys with one name the preferred (lowest priority number, then the
    first listed) wins. A log repeats the same keys on every line, so this is worked out once per
    key layout instead of once per record."""
    keys: dict[str, str] = {}
    prio: dict[str, int] = {}
    for key in raw_keys:
        res = normalize_key(key)
        if res is None:
            continue
        old = prio.get(res.name)
        if old is None or res.priority < old:
            prio[res.name] = res.priority
            keys[res.name] = key
    return tuple(keys.items())


def make_point(raw: dict[str, float], *, step: int | None, line: int | None, source: str,
               total_steps: int | None = None) -> MetricPoint:
    """Normalise a raw ``{key: value}`` mapping into a MetricPoint (first-listed key wins)."""
    keys = dict(_key_plan(tuple(raw)))
    values = {name: raw[key] for name, key in keys.items()}
    if step is None and "global_step" in values:
        gs = values["global_step"]
        if gs == gs and abs(gs) < 1e15:
            step = int(gs)
    return MetricPoint.model_construct(step=step, line=line, source=source, values=values, keys=keys,
                                       raw=raw, total_steps=total_steps)
