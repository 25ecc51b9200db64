"""Bounded-memory accumulation of metric points into per-metric series.

A run can log millions of steps; diagnosis needs the shape of each curve, its extremes and every
non-finite value, not every sample. Each series keeps at most ``capacity`` buckets: when full,
neighbouring buckets are merged pairwise (bucket width doubles), keeping each bucket's mean,
max and min, so spikes survive decimation. First/last values and NaN/Inf counts are exact.
Memory is O(capacity x metrics), independent of the log length.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field

from advisor.metrics.model import MetricPoint, MetricSeries

_isfinite = math.isfinite

DEFAULT_CAPACITY = 1024


class Series:
    """One metric's bucketed history."""

    __slots__ = ("name", "key", "capacity", "width", "step", "line", "mean", "vmax", "vmin",
                 "_acc_n", "_acc_sum", "_acc_max", "_acc_min", "_acc_step", "_acc_line",
                 "count", "nonfinite", "first_nonfinite_step", "first_nonfinite_line",
                 "first_value", "first_step", "last_value", "last_step", "last_line")

    def __init__(self, name: str, key: str, capacity: int = DEFAULT_CAPACITY):
        self.name, self.key, self.capacity = name, key, max(8, capacity - capacity % 2)
        self.width = 1
        self.step, self.line = array("q"), array("q")
        self.mean, self.vmax, self.vmin = array("d"), array("d"), array("d")
        self._acc_n = 0
        self._acc_sum = 0.0
        self._acc_max = -math.inf
        self._acc_min = math.inf
        self._acc_step = 0
        self._acc_line = 0
        self.count = 0
        self.nonfinite = 0
        self.first_nonfinite_step: int | None = None
        self.first_nonfinite_line: int | None = None
        self.first_value: float | None = None
        self.first_step: int | None = None
        self.last_value: float | None = None
        self.last_step: int | None = None
        self.last_line: int | None = None

    def add(self, step: int, value: float, line: int | None) -> None:
        self.count += 1
        self.last_step, self.last_line, self.last_value = step, line, value
        if not _isfinite(value):
            self.nonfinite += 1
            if self.first_nonfinite_step is None:
                self.first_nonfinite_step, self.first_nonfinite_line = step, line
            return
        if self.first_value is None:
            self.first_value, self.first_step = value, step
        if self.width == 1:  # one value per bucket: append directly (the common case of short runs)
            self.step.append(step)
            self.line.append(line or 0)
            self.mean.append(value)
            self.vmax.append(value)
            self.vmin.append(value)
            if len(self.mean) >= self.capacity:
                self._halve()
            return
        n = self._acc_n
        if n == 0:  # a new bucket
            self._acc_step, self._acc_line = step, line or 0
            self._acc_sum = self._acc_max = self._acc_min = value
        else:
            self._acc_sum += value
            if value > self._acc_max:
                self._acc_max = value
            elif value < self._acc_min:
                self._acc_min = value
        self._acc_n = n = n + 1
        if n >= self.width:
            self._close_bucket()

    def _close_bucket(self) -> None:
        self.step.append(self._acc_step)
        self.line.append(self._acc_line)
        self.mean.append(self._acc_sum / self._acc_n)
        self.vmax.append(self._acc_max)
        self.vmin.append(self._acc_min)
        self._acc_n, self._acc_sum, self._acc_max, self._acc_min = 0, 0.0, -math.inf, math.inf
        if len(self.mean) >= self.capacity:
            self._halve()

    def _halve(self) -> None:
        n = len(self.mean) // 2 * 2
        step, line = array("q"), array("q")
        mean, vmax, vmin = array("d"), array("d"), array("d")
        for i in range(0, n, 2):
            step.append(self.step[i])
            line.append(self.line[i])
            mean.append((self.mean[i] + self.mean[i + 1]) / 2.0)
            vmax.append(max(self.vmax[i], self.vmax[i + 1]))
            vmin.append(min(self.vmin[i], self.vmin[i + 1]))
        self.step, self.line, self.mean, self.vmax, self.vmin = step, line, mean, vmax, vmin
        self.width *= 2

    def buckets(self) -> tuple[list[int], list[float], list[float], list[float]]:
        """(steps, means, maxes, mins), including the open bucket."""
        steps, means = list(self.step), list(self.mean)
        maxs, mins = list(self.vmax), list(self.vmin)
        if self._acc_n:
            steps.append(self._acc_step)
            means.append(self._acc_sum / self._acc_n)
            maxs.append(self._acc_max)
            mins.append(self._acc_min)
        return steps, means, maxs, mins

    def lines(self) -> list[int]:
        out = list(self.line)
        if self._acc_n:
            out.append(self._acc_line)
        return out

    @property
    def finite_count(self) -> int:
        return self.count - self.nonfinite


@dataclass
class SeriesStore:
    """Per-metric series of a run, plus what was seen (formats, planned steps)."""

    capacity: int = DEFAULT_CAPACITY
    series: dict[str, Series] = field(default_factory=dict)
    points: int = 0
    sources: dict[str, int] = field(default_factory=dict)
    total_steps: int | None = None
    raw_keys: set[str] = field(default_factory=set)

    def add(self, point: MetricPoint) -> None:
        self.points += 1
        self.sources[point.source] = self.sources.get(point.source, 0) + 1
        if point.total_steps:
            self.total_steps = point.total_steps
        step = point.step if point.step is not None else self.points
        if len(self.raw_keys) < 4096:
            self.raw_keys.update(point.raw.keys())
        for name, value in point.values.items():
            s = self.series.get(name)
            if s is None:
                if len(self.series) >= 2048:
                    continue
                s = self.series[name] = Series(name, point.keys.get(name, name), self.capacity)
            s.add(step, value, point.line)

    def merge(self, other: "SeriesStore") -> None:
        """Add another file's series of the same run. A metric present in both is not concatenated
        (two files of one run usually log the same steps — a console log and its JSONL, a table
        extracted from a log): the series with more points is kept."""
        self.points += other.points
        for src, n in other.sources.items():
            self.sources[src] = self.sources.get(src, 0) + n
        self.total_steps = other.total_steps or self.total_steps
        self.raw_keys.update(list(other.raw_keys)[: max(0, 4096 - len(self.raw_keys))])
        for name, series in other.series.items():
            have = self.series.get(name)
            if have is None or series.count > have.count:
                self.series[name] = series

    def extend(self, points: list[MetricPoint]) -> None:
        for p in points:
            self.add(p)

    def get(self, name: str) -> Series | None:
        return self.series.get(name)

    def names(self) -> list[str]:
        return list(self.series)

    def to_series(self, name: str, max_points: int = 400) -> MetricSeries | None:
        s = self.series.get(name)
        if s is None:
            return None
        steps, means, _, _ = s.buckets()
        stride = max(1, math.ceil(len(means) / max_points))
        return MetricSeries(name=name, key=s.key, steps=steps[::stride], values=means[::stride])
