"""Why a source's held-out error jumps: the factors a leave-one-source-out fold moves, and who moves them.

    python benchmarks/loso_factor_shift.py SOURCE                 # fit without SOURCE (about 1 min)
    python benchmarks/loso_factor_shift.py SOURCE --also A --also B   # and without SOURCE + A, SOURCE + B

Prints, factor by factor, the table's values (time_model.yaml, fitted on every source) beside the fold's
(fitted without SOURCE, from the priors, as ``placement_accuracy.py --cv`` does), the held-out rows'
predictions and per-phase seconds both ways, and every other source's mean |log error| both ways: a source
whose error falls in the fold is one that pulls the moved factors there. Each ``--also`` source is then
left out together with SOURCE, to show how far that one source alone holds the moved factors where they go.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.placement_accuracy import (DEV, EXTRA, FIT_KEYS, evaluate, fit, load_cases,  # noqa: E402
                                           per_source_error as per_source, predict_case_step, prior_start)
from advisor.placement.timemodel import default_factors  # noqa: E402


def phases(case: Any, f: dict[str, float]) -> dict[str, float]:
    return {p.phase: round(p.seconds, 1) for p in predict_case_step(case, f).phases}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("source", help="the source (case id) held out")
    ap.add_argument("--also", action="append", default=[], help="a second source left out with it (repeatable)")
    args = ap.parse_args(argv)
    cases = load_cases(DEV, EXTRA)
    if args.source not in {c.case for c in cases}:
        print(f"no source {args.source!r}", file=sys.stderr)
        return 2
    table = default_factors()
    fold = fit([c for c in cases if c.case != args.source], prior_start())
    print(f"{'factor':<32}{'table':>10}{'fold':>10}{'ratio':>8}")
    for k in FIT_KEYS:
        print(f"{k:<32}{table[k]:>10.4g}{fold[k]:>10.4g}{fold[k] / table[k]:>8.2f}")
    print(f"\nrows of {args.source}: table -> fold")
    held = [c for c in cases if c.case == args.source and c.scored and c.plan is not None]
    for c in held:
        a, b = evaluate([c], table)[0], evaluate([c], fold)[0]
        print(f"  {c.row[:44]:<44} {c.metric[:28]:<28} published {c.published:9.2f}  "
              f"{a['predicted']:9.2f} ({a['error']:+.0%}) -> {b['predicted']:9.2f} ({b['error']:+.0%})")
        if c.metric == "step_s":
            print(f"      table {phases(c, table)}\n      fold  {phases(c, fold)}")
    before, after = per_source(evaluate(cases, table)), per_source(evaluate(cases, fold))
    print("\nmean |log error| per source, table -> fold (a fall: the source pulls the fold's factors)")
    for k in sorted(before, key=lambda s: after[s] - before[s]):
        print(f"  {k:<45} {before[k]:.3f} -> {after[k]:.3f}  {after[k] - before[k]:+.3f}")
    for other in args.also:
        out = {args.source, *other.split("+")}
        f = fit([c for c in cases if c.case not in out], prior_start())
        errs = [abs(r["error"]) for r in evaluate(held, f) if r["scored"]]
        moved = ", ".join(f"{k} {f[k]:.4g}" for k in FIT_KEYS if abs(fold[k] / table[k] - 1) > 0.05)
        print(f"without {' + '.join(sorted(out))}: {moved}; {args.source} held out median "
              f"{statistics.median(errs):.1%}, max {max(errs):.1%}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
