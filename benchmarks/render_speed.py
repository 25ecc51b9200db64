"""How fast render_config is: every supported method x framework pair, against serialising the
same Plan to its YAML form (plan_to_yaml) in the same run. Validation is not included (it runs the
frameworks' own parsers; see the render tests).

    .venv/bin/python benchmarks/render_speed.py [--rounds 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from advisor.plan import plan_to_yaml  # noqa: E402
from advisor.render import render_config  # noqa: E402
from tests.test_render_matrix import SUPPORTED, plan_for  # noqa: E402


def _per_call(fn, plans, rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for p in plans:
            fn(p)
        samples.append((time.perf_counter() - t0) / len(plans))
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ns = ap.parse_args()
    plans = [plan_for(m, fw) for fw, m in SUPPORTED]
    for p in plans:  # warm the template cache and the data tables
        render_config(p)
    base = _per_call(plan_to_yaml, plans, ns.rounds)
    ours = _per_call(render_config, plans, ns.rounds)
    print(f"\n{len(plans)} supported method x framework plans, median of {ns.rounds} rounds")
    print(f"{'operation':<34}{'ms per plan':>12}{'ratio':>8}")
    print(f"{'plan_to_yaml (baseline)':<34}{base * 1e3:>12.2f}{1.0:>8.1f}")
    print(f"{'render_config (all artifacts)':<34}{ours * 1e3:>12.2f}{ours / base:>8.1f}")


if __name__ == "__main__":
    main()
