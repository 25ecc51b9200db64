"""Held-out check of ``rl-advisor calibrate``: calibrated on one published run, how well does the
profile predict the other runs of the same source on the same cluster?

    python benchmarks/calibration_transfer.py            # base = the published fit (time_model.yaml)
    python benchmarks/calibration_transfer.py --loso     # base = factors fitted without the source
                                                         # (the user's cluster is unseen; slower)

For every published source (../shared/cases/published-dev.yaml + tests/cases/placement/
published-extra.yaml, read by advisor.placement.cases like benchmarks/placement_accuracy.py) with
two or more runs on one GPU type, each run is taken in turn as the user's run: its published
timers (the step time, and the phase times where the source publishes them) are handed to the
calibration fit (advisor.placement.calibration.fit, exactly what ``rl-advisor calibrate`` calls),
and the resulting factors predict every other run of that source. Reported: the median |error|
per timer group (gen, old_log_prob, update_actor, ref, step) over all such ordered pairs,
uncalibrated (the base factors) beside calibrated, and a per-source table.

This is the held-out measure for changes to the calibration method: the must-show checks in
tests/test_calibrate.py are five pairs of one source; a change that helps them but worsens this
figure is not a fix. Runs whose Plan is identical to an earlier run of the source (a table that
repeats a row under another heading) are counted once. Weight-sync rows (sync_s) are left out:
they measure a transport (checkpoint engine vs NCCL) that the Plan does not carry, so calibrate
cannot be handed them as a run.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import benchmarks.placement_accuracy as pa  # noqa: E402
from advisor.errors import AdvisorError  # noqa: E402
from advisor.placement import calibration  # noqa: E402
from advisor.placement.cases import TimeCase  # noqa: E402
from advisor.placement.timemodel import Infeasible, default_factors  # noqa: E402


def _group_of_metric(metric: str) -> str | None:
    """The calibration timer group a published row's metric measures."""
    if metric in ("step_s", "epoch_s"):
        return "step"
    if metric.startswith("phase:"):
        want = sorted(metric.split(":", 1)[1].split(","))
        for g in calibration.table()["groups"]:
            if sorted(g["phases"]) == want:
                return g["name"]
    return None


def runs_of(cases: list[TimeCase]) -> dict[tuple[str, str], list[list[TimeCase]]]:
    """Per (source, GPU type): the runs, each the list of its published rows (a step row and the
    phase rows that carry the same heading plus a ``<timer>_s`` suffix)."""
    out: dict[tuple[str, str], dict[str, list[TimeCase]]] = {}
    for c in cases:
        if not c.scored or c.plan is None or c.published is None or _group_of_metric(c.metric) is None:
            continue
        run = re.sub(r"\s+\w+_s$", "", c.row) if c.metric.startswith("phase:") else c.row
        out.setdefault((c.case, c.plan.hardware.gpu), {}).setdefault(run, []).append(c)
    res: dict[tuple[str, str], list[list[TimeCase]]] = {}
    for key, by_run in out.items():
        seen: list[str] = []
        runs = []
        for rows in by_run.values():
            sig = rows[0].plan.model_dump_json()
            if sig in seen:
                continue
            seen.append(sig)
            runs.append(rows)
        if len(runs) >= 2:
            res[key] = runs
    return res


def _measured(run: list[TimeCase]) -> dict[str, tuple[float, int]]:
    meas = {}
    for c in run:
        g = _group_of_metric(c.metric)
        meas[g] = (c.published / c.scale if g == "step" else c.published, 1)
    return meas


def transfer(groups: dict[tuple[str, str], list[list[TimeCase]]], base_of: Any) -> list[dict[str, Any]]:
    """One record per (calibration run A, target run B, timer of B)."""
    recs: list[dict[str, Any]] = []
    for key, runs in groups.items():
        base = base_of(key[0])
        for i, a in enumerate(runs):
            try:
                fitted, _ = calibration.fit(a[0].plan, _measured(a), base)
            except (Infeasible, AdvisorError) as exc:
                print(f"  {key}: cannot calibrate on {a[0].row}: {exc}", file=sys.stderr)
                continue
            for j, b in enumerate(runs):
                if i == j:
                    continue
                for c in b:
                    try:
                        before = pa.predict(c, base)[0]
                        after = pa.predict(c, fitted)[0]
                    except (Infeasible, AdvisorError):
                        continue
                    recs.append({"source": key[0], "gpu": key[1], "a": a[0].row, "b": c.row,
                                 "group": _group_of_metric(c.metric), "before": before / c.published - 1,
                                 "after": after / c.published - 1})
    return recs


def report(recs: list[dict[str, Any]]) -> str:
    def med(v: list[float]) -> str:
        return f"{statistics.median(v):6.1%}" if v else "     -"

    lines = [f"{'timer':<14} {'pairs':>5}  {'uncalibrated':>12}  {'calibrated':>10}  {'within 15% unc/cal':>18}"]
    for g in ["gen", "old_log_prob", "ref", "update_actor", "step", "all"]:
        rs = [r for r in recs if g == "all" or r["group"] == g]
        if not rs:
            continue
        b, a = [abs(r["before"]) for r in rs], [abs(r["after"]) for r in rs]
        lines.append(f"{g:<14} {len(rs):>5}  {med(b):>12}  {med(a):>10}  "
                     f"{sum(x <= 0.15 for x in b):>8}/{sum(x <= 0.15 for x in a)} of {len(rs)}")
    lines += ["", f"{'source':<40} {'GPU':<9} {'pairs':>5} {'step unc':>8} {'step cal':>8} {'phase unc':>9} {'phase cal':>9}"]
    for key in sorted({(r["source"], r["gpu"]) for r in recs}):
        rs = [r for r in recs if (r["source"], r["gpu"]) == key]
        st = [r for r in rs if r["group"] == "step"]
        ph = [r for r in rs if r["group"] != "step"]
        lines.append(f"{key[0][:40]:<40} {key[1]:<9} {len(rs):>5} {med([abs(r['before']) for r in st]):>8} "
                     f"{med([abs(r['after']) for r in st]):>8} {med([abs(r['before']) for r in ph]):>9} "
                     f"{med([abs(r['after']) for r in ph]):>9}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--loso", action="store_true",
                    help="uncalibrated base = factors fitted without the source (placement_accuracy.fit), "
                         "as for a user whose cluster the published fit has not seen")
    ap.add_argument("--source", help="only this source (substring)")
    ap.add_argument("--loso-cache", type=Path,
                    help="with --loso: a JSON file that keeps the per-source fits between runs (they take "
                         "about a minute each; delete it after a refit of the published factors)")
    ap.add_argument("--hard-bounds", action="store_true",
                    help="keep each factor inside its published range (the table's ranges_as_hard_bounds)")
    ap.add_argument("--model-error-log", type=float,
                    help="override the calibration table's model_error_log, the log error each timer is allowed "
                         "(towards 0 the run's timers decide alone inside the published ranges)")
    args = ap.parse_args(argv)
    if not pa.DEV.is_file():
        print(f"no cases file at {pa.DEV}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    cases = pa.load_cases(pa.DEV, pa.EXTRA)
    groups = runs_of(cases)
    if args.source:
        groups = {k: v for k, v in groups.items() if args.source in k[0]}
    published = default_factors()
    cache: dict[str, dict[str, float]] = {}
    if args.loso and args.loso_cache and args.loso_cache.is_file():
        cache = json.loads(args.loso_cache.read_text())
    if args.model_error_log is not None or args.hard_bounds:
        tab = calibration.table()
        if args.model_error_log is not None:
            tab["model_error_log"] = args.model_error_log
        tab["ranges_as_hard_bounds"] = tab.get("ranges_as_hard_bounds") or args.hard_bounds
        calibration.table = lambda: tab  # type: ignore[assignment]

    def base_of(source: str) -> dict[str, float]:
        if not args.loso:
            return published
        if source not in cache:
            cache[source] = pa.fit([c for c in cases if c.case != source], pa.prior_start())
            if args.loso_cache:
                args.loso_cache.write_text(json.dumps(cache, indent=1))
        return cache[source]

    recs = transfer(groups, base_of)
    print(f"calibrated on one run, predicting the other runs of the same source and GPU type "
          f"({'base: fitted without the source' if args.loso else 'base: the published fit'}; model_error_log "
          f"{calibration.table()['model_error_log']}, ranges as hard bounds: "
          f"{bool(calibration.table().get('ranges_as_hard_bounds'))}); "
          f"{len(groups)} source x GPU groups, {sum(len(v) for v in groups.values())} runs\n")
    print(report(recs))
    print(f"\n({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
