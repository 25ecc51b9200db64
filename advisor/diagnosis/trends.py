"""Noise-robust trend and spike statistics for metric curves.

RL curves are noisy; a rule that compares two raw values alarms on healthy runs. These helpers
use rank and median statistics that ignore outliers:

* Mann-Kendall test (Mann 1945, Kendall 1975): is there a monotonic trend? Normal approximation
  with the tie correction of the variance; two-sided p-value.
* Theil-Sen slope (Theil 1950, Sen 1968): the median of pairwise slopes, robust to ~29% outliers.
* Spikes: a point far above the running median of the points before it (median-based, so one
  earlier spike does not hide the next).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right, insort
from dataclasses import dataclass
from statistics import median

MAX_PAIRS_POINTS = 400


def _thin(xs: list[float], ys: list[float], limit: int = MAX_PAIRS_POINTS) -> tuple[list[float], list[float]]:
    if len(ys) <= limit:
        return xs, ys
    stride = math.ceil(len(ys) / limit)
    return xs[::stride], ys[::stride]


def _kendall_s(ys: list[float]) -> int:
    """Kendall's S: the sum over pairs i < j of sign(y_j - y_i). Each value is compared with the
    sorted values before it (two binary searches), O(n log n) instead of a Python loop over all
    pairs; the pair loop stays for values that do not sort (NaN, or infinities whose difference is NaN)."""
    if all(map(math.isfinite, ys)):
        seen: list[float] = []
        s = 0
        for y in ys:
            below = bisect_left(seen, y)
            s += below - (len(seen) - bisect_right(seen, y, below))
            insort(seen, y, below)
        return s
    s = 0
    n = len(ys)
    for i in range(n - 1):
        yi = ys[i]
        for j in range(i + 1, n):
            d = ys[j] - yi
            if d > 0:
                s += 1
            elif d < 0:
                s -= 1
    return s


def mann_kendall(values: list[float]) -> tuple[float, float]:
    """(z, two-sided p) of the Mann-Kendall trend test. z > 0 = increasing."""
    _, ys = _thin(list(range(len(values))), list(values))
    n = len(ys)
    if n < 3:
        return 0.0, 1.0
    s = _kendall_s(ys)
    counts: dict[float, int] = {}
    for y in ys:
        counts[y] = counts.get(y, 0) + 1
    var = (n * (n - 1) * (2 * n + 5) - sum(t * (t - 1) * (2 * t + 5) for t in counts.values() if t > 1)) / 18.0
    if var <= 0:
        return 0.0, 1.0
    z = (s - 1) / math.sqrt(var) if s > 0 else (s + 1) / math.sqrt(var) if s < 0 else 0.0
    p = math.erfc(abs(z) / math.sqrt(2.0))
    return z, p


def theil_sen(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """(slope, intercept) of the Theil-Sen estimator."""
    xs, ys = _thin(list(xs), list(ys))
    slopes = [(ys[j] - ys[i]) / (xs[j] - xs[i]) for i in range(len(xs)) for j in range(i + 1, len(xs))
              if xs[j] != xs[i]]
    if not slopes:
        return 0.0, median(ys) if ys else 0.0
    slope = median(slopes)
    intercept = median(y - slope * x for x, y in zip(xs, ys))
    return slope, intercept


@dataclass(frozen=True)
class Trend:
    direction: str  # "up", "down", "flat"
    p: float
    start: float  # robust level at the start
    end: float  # robust level at the end
    n: int

    @property
    def ratio(self) -> float:
        """end / start (inf when start is 0 and end is not)."""
        if self.start == 0:
            return math.inf if self.end > 0 else (-math.inf if self.end < 0 else 1.0)
        return self.end / self.start


def levels(values: list[float]) -> tuple[float, float]:
    """(start, end): the first value (the initial policy) for short series, the median of the
    first few points for long ones; the median of the last third at the end."""
    n = len(values)
    k_start = 1 if n < 20 else max(3, n // 20)
    start = median(values[:k_start])
    tail = values[-max(1, n // 3):] if n >= 3 else values[-1:]
    return start, median(tail)


def trend(values: list[float], alpha: float = 0.05) -> Trend:
    """Direction of a series. For n >= 6 a significant Mann-Kendall test; for 3-5 points all steps
    must move the same way (a p-value cannot be small with so few points)."""
    n = len(values)
    start, end = levels(values)
    if n < 3:
        return Trend("flat", 1.0, start, end, n)
    if n < 6:
        diffs = [b - a for a, b in zip(values, values[1:])]
        if all(d > 0 for d in diffs):
            return Trend("up", 0.5, start, end, n)
        if all(d < 0 for d in diffs):
            return Trend("down", 0.5, start, end, n)
        return Trend("flat", 1.0, start, end, n)
    z, p = mann_kendall(values)
    if p < alpha:
        return Trend("up" if z > 0 else "down", p, start, end, n)
    return Trend("flat", p, start, end, n)


def spikes(values: list[float], *, factor: float, floor: float, window: int = 20,
           min_prior: int = 2, nonzero_prior: bool = False) -> list[int]:
    """Indices i where values[i] > factor x median(previous ``window`` values) and > ``floor``.
    ``nonzero_prior``: the median is of the previous values that are not zero, when there are any (a quantity that
    is exactly 0 until it starts moving, such as the KL to a reference that equals the policy at the first step, is
    judged against its values once it moves, not against its start)."""
    out = []
    for i in range(min_prior, len(values)):
        prior = values[max(0, i - window):i]
        if nonzero_prior:
            prior = [v for v in prior if v != 0] or prior
        ref = median(prior)
        if values[i] > floor and values[i] > factor * ref:
            out.append(i)
    return out
