"""The robust statistics behind the metric rules."""

from __future__ import annotations

import itertools
import math
import random

from advisor.diagnosis.trends import levels, mann_kendall, spikes, theil_sen, trend


def _kendall_s(values: list[float]) -> int:
    return sum((b > a) - (b < a) for a, b in itertools.combinations(values, 2))


def test_mann_kendall_matches_the_textbook_statistic() -> None:
    # S and its variance by definition (no ties): Var = n(n-1)(2n+5)/18, z = (S-1)/sqrt(Var) for S > 0
    vals = [1.0, 3.0, 2.0, 5.0, 4.0, 6.0, 8.0, 7.0, 9.0, 10.0]
    s = _kendall_s(vals)
    n = len(vals)
    z_expected = (s - 1) / math.sqrt(n * (n - 1) * (2 * n + 5) / 18)
    z, p = mann_kendall(vals)
    assert math.isclose(z, z_expected)
    assert math.isclose(p, math.erfc(abs(z_expected) / math.sqrt(2)))
    assert p < 0.01


def test_mann_kendall_is_quiet_on_noise() -> None:
    rng = random.Random(7)
    false = sum(mann_kendall([rng.gauss(0, 1) for _ in range(60)])[1] < 0.05 for _ in range(200))
    assert false <= 20  # ~5% expected at alpha = 0.05


def test_theil_sen_ignores_outliers() -> None:
    xs = list(range(50))
    ys = [2.0 * x + 1.0 for x in xs]
    for i in (5, 17, 30, 44):
        ys[i] = 1000.0
    slope, intercept = theil_sen(xs, ys)
    assert math.isclose(slope, 2.0) and math.isclose(intercept, 1.0)


def test_trend_needs_agreement_on_short_series() -> None:
    assert trend([1.0, 0.5, 0.1]).direction == "down"
    assert trend([1.0, 1.2, 0.1]).direction == "flat"
    assert trend([0.1, 0.2]).direction == "flat"
    assert levels([5.0] + [1.0] * 9) == (5.0, 1.0)  # short: the initial policy's value
    assert levels([5.0] + [1.0] * 30) == (1.0, 1.0)  # long: a median, so one odd first log is ignored


def test_spikes_against_the_running_median() -> None:
    vals = [1.0, 1.2, 0.9, 1.1, 15.0, 1.0, 0.8, 40.0, 1.0]
    assert spikes(vals, factor=10, floor=1.0) == [4, 7]
    assert spikes([0.1, 0.2, 0.3, 1.5], factor=10, floor=2.0) == []  # under the absolute floor


def test_kendall_s_equals_the_pair_count() -> None:
    """The O(n log n) Kendall S (binary searches in the sorted earlier values) equals the sum of
    pairwise signs, with ties, signed zeros, infinities and NaN (the pair loop's answer)."""

    from advisor.diagnosis.trends import _kendall_s

    def pairs(ys: list[float]) -> int:
        s = 0
        for i in range(len(ys)):
            for j in range(i + 1, len(ys)):
                d = ys[j] - ys[i]
                s += (d > 0) - (d < 0)
        return s

    rng = random.Random(19)
    specials = [0.0, -0.0, 1.0, 1e308, -1e308, float("inf"), float("-inf"), float("nan")]
    for _ in range(2000):
        ys = [rng.choice(specials) if rng.random() < 0.2 else float(rng.randint(-3, 3)) if rng.random() < 0.3
              else rng.gauss(0, 1) for _ in range(rng.randint(0, 40))]
        assert _kendall_s(ys) == pairs(ys), ys
