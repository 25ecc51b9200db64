"""Fit budget_memory's four allocator constants on the published checks, and show how well any
other setting would do.

Every other term of the ledger is physics or a measurement (benchmarks/activation_calibration.py).
What is left — fragmentation of the activation working set and of the vocab-sized buffers, the
in-flight factor on gathered FSDP/ZeRO-3 units, and a reserve proportional to HBM — cannot be seen
without a GPU, so it is fitted here once, on all checks of tests/cases/memory together, and written
to advisor/data/memory_constants.yaml by hand. No constant is per case.

    python benchmarks/memory_constant_fit.py            # the grid (about 1 minute)
    python benchmarks/memory_constant_fit.py --quick    # a coarse grid

Prints: the current values' score (right checks of all) and the mean score of their grid neighbours
(how flat the optimum is), the best settings found, and which checks each gets wrong.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

FITTED = ("logits_fragmentation_fraction", "fragmentation_fraction", "gather_inflight_factor",
          "allocator_reserve_fraction")


def load_checks():
    """The same checks memory_accuracy.py reports on: (name, check, Plan) for every case file."""
    from benchmarks.memory_accuracy import checks

    return [(f"{cid}::{check['name']}", check, plan) for cid, check, plan in checks()]


def score(checks) -> tuple[int, list[str]]:
    """Right checks with the constants as they are now, and the names of the wrong ones."""
    from advisor.memory.ledger import build_ledger

    right, wrong = 0, []
    for name, check, plan in checks:
        b = build_ledger(plan)
        worst = max(b.pools, key=lambda p: p.peak_gib - p.capacity_gib)
        if check["expect"] == "fits":
            ok = b.fits
        elif check["expect"] == "oom":
            ok = not b.fits
        else:
            ok = abs(worst.peak_gib - check["peak_gib"]) / check["peak_gib"] <= check.get("tolerance", 0.10)
        right += ok
        if not ok:
            wrong.append(name)
    return right, wrong


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)

    import numpy as np

    from advisor.constants import _table

    table = _table()  # the cached table; values are set in place and restored at the end
    current = {k: float(table[k]["value"]) for k in FITTED}
    axes = {
        "logits_fragmentation_fraction": np.round(np.arange(0.0, 0.81, 0.1 if args.quick else 0.05), 3),
        "fragmentation_fraction": (0.0, 0.025, 0.05, 0.1),
        "gather_inflight_factor": (1.0, 1.5, 2.0, 2.25, 2.5, 3.0),
        "allocator_reserve_fraction": np.round(np.arange(0.0, 0.121, 0.02 if args.quick else 0.005), 3),
    }
    for k, v in current.items():  # make sure the current point is on the grid
        if v not in axes[k]:
            axes[k] = tuple(sorted({*map(float, axes[k]), v}))
    checks = load_checks()
    grid: dict[tuple, tuple[int, list[str]]] = {}
    try:
        for point in itertools.product(*(axes[k] for k in FITTED)):
            for k, v in zip(FITTED, point):
                table[k]["value"] = float(v)
            grid[tuple(float(v) for v in point)] = score(checks)
    finally:
        for k, v in current.items():
            table[k]["value"] = v

    def neighbours(point) -> float:
        idx = [list(map(float, axes[k])).index(v) for k, v in zip(FITTED, point)]
        vals = []
        for d in itertools.product((-1, 0, 1), repeat=len(FITTED)):
            j = [a + b for a, b in zip(idx, d)]
            if all(0 <= x < len(axes[k]) for x, k in zip(j, FITTED)):
                vals.append(grid[tuple(float(axes[k][x]) for x, k in zip(j, FITTED))][0])
        return sum(vals) / len(vals)

    cur = tuple(current[k] for k in FITTED)
    n = len(checks)
    best = max(v[0] for v in grid.values())
    print(f"{n} checks; {len(grid)} settings; best {best}/{n}; "
          f"score histogram {sorted(Counter(v[0] for v in grid.values()).items(), reverse=True)[:4]}")
    print(f"current {dict(zip(FITTED, cur))}: {grid[cur][0]}/{n} right, neighbours {neighbours(cur):.2f}; "
          f"wrong: {grid[cur][1]}")
    print(f"\n{'right':>5s} {'neigh':>6s}  " + "  ".join(f"{k.split('_')[0][:8]:>8s}" for k in FITTED) + "  wrong")
    tops = sorted(grid.items(), key=lambda kv: (-kv[1][0], -neighbours(kv[0])))[:12]
    for point, (right, wrong) in tops:
        print(f"{right:5d} {neighbours(point):6.2f}  " + "  ".join(f"{v:8.3f}" for v in point)
              + "  " + "; ".join(w[:48] for w in wrong))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
