"""What the category hypotheses of diagnose_run (advisor/diagnosis/similar.py: class_findings) would
have done on held-out batches, each with the rules as they were frozen when that batch was measured.

Why this measure: the rules have since been tuned on every development batch, so scoring the
hypotheses beside today's rules on those batches would show only the few cases today's rules still
miss. A held-out batch was measured once, at a freeze of the rules (tests/cases/diagnosis/README.md);
the commit that recorded it holds exactly those rules. For each batch B in ``FREEZES`` this script
checks that commit out in a temporary git worktree, runs its own diagnose_accuracy on batch B's cases
(reproducing the recorded figure), and then adds what the hypotheses add today where the engine offers
them, when those rules found nothing at all and read no metric record: the ``CLASS_TOP`` nearest categories of a ``KnownCaseIndex`` built from the packaged
known cases of batches before B only (and the curated shared cases, batch 0), so no case of B or of a
later batch is in it. Judged like diagnose_accuracy (first category for a crash log, top 3 otherwise;
a healthy case passes without an error finding, and hypotheses are never errors).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/class_fallback_retro.py [--show]

Needs the git history (a clone, not an archive); about 2-4 minutes. Prints per batch the
recorded figure, the figure with hypotheses, and how often hypotheses were offered on problem and on
healthy cases (on a healthy case they are info-level hypotheses, not alarms, but they are a cost).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

import diagnose_accuracy as acc  # noqa: E402
import known_cases as known  # noqa: E402

from advisor.diagnosis import similar  # noqa: E402

FREEZES = {27: "38c9940", 28: "8ecb72f", 29: "58b91a5", 30: "05d0cd2", 31: "17546ee", 32: "9da3dda",
           33: "e048b03", 34: "eb5a4f2", 35: "f0eed0b", 36: "68f8ac7", 37: "58ccefc", 38: "e255fce",
           39: "a07ab2a", 40: "91f1edf", 41: "f60e14f"}
"""Held-out batch -> the commit that measured it once at its freeze (git log: "Batch N measured once ...";
batch 35 was measured with batch 34 at f0eed0b). The current validation batch is not here: it is
measured by diagnose_accuracy.py, once per freeze; it joins this table when it joins development."""

_AT_FREEZE = """
import json, sys
from pathlib import Path
sys.path[:0] = ["benchmarks", "."]
import diagnose_accuracy as acc
out = []
for c in acc.load_cases(None):
    if int(c.get("batch", 0)) != {batch} or c.get("origin") != "tests/cases":
        continue
    res = acc.diagnose_cli(c["paths"], False, c.get("source", ""))
    ok, _ = acc.judge(c, res)
    out.append({{"id": c["id"], "passed": ok, "categories": [f["category"] for f in res["findings"]],
                "points": res.get("points_read", 0)}})
print(json.dumps(out))
"""


def at_freeze(batch: int, commit: str, tmp: Path) -> list[dict]:
    """Batch ``batch``'s cases diagnosed by the rules of ``commit`` (its own code, in a worktree)."""
    wt = tmp / f"b{batch}"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "-q", "--detach", str(wt), commit], check=True)
    try:
        run = subprocess.run([sys.executable, "-c", _AT_FREEZE.format(batch=batch)], cwd=wt, check=True,
                             capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(wt)})
        return json.loads(run.stdout.strip().splitlines()[-1])
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(wt)], check=True)


def hypotheses(text: str, index: similar.KnownCaseIndex, source: str) -> list[str]:
    """The categories class_findings offers for ``text`` against ``index`` (same gate, same order)."""
    return similar.class_categories(text, index, similar.CLASS_MIN_TERMS, frozenset([source]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--show", action="store_true", help="list the cases the hypotheses change")
    args = ap.parse_args(argv)
    table = similar.packaged_table()
    cases = {c["id"]: c for c in acc.load_cases(None) if c["origin"] == "tests/cases"}
    total: Counter[str] = Counter()
    print(f"{'batch':<6} {'at freeze':<12} {'+ hypotheses':<13} offered: problem / healthy")
    with tempfile.TemporaryDirectory() as tmp:
        for batch, commit in FREEZES.items():
            index = similar.KnownCaseIndex([e for e in table["cases"] if int(e["batch"]) < batch])
            rows = at_freeze(batch, commit, Path(tmp))
            n = len(rows)
            before = after = offered = offered_healthy = healthy = 0
            for r in rows:
                case = cases[r["id"]]
                add = []
                if not r["categories"] and not r["points"]:
                    text = known.case_text(case["paths"])
                    add = hypotheses(text, index, case["source"])
                is_healthy = case["expected"] in acc.HEALTHY
                ok = r["passed"] if is_healthy else acc.judge(case, {"findings": [
                    {"category": c, "severity": "info"} for c in r["categories"] + add]})[0]
                before += r["passed"]
                after += ok
                healthy += is_healthy
                offered += bool(add) and not is_healthy
                offered_healthy += bool(add) and is_healthy
                if args.show and ok != r["passed"]:
                    print(f"    {'fixed' if ok else 'broke'} {r['id']} ({case['expected']}): {add}")
            total.update(n=n, before=before, after=after, offered=offered, healthy=healthy,
                         offered_healthy=offered_healthy)
            print(f"{batch:<6} {before:>3}/{n:<8} {after:>3}/{n:<9} {offered:>3} / {offered_healthy}")
    t = total
    print(f"{'all':<6} {t['before']:>3}/{t['n']} = {t['before'] / t['n']:.0%}  {t['after']:>3}/{t['n']} = "
          f"{t['after'] / t['n']:.0%}  offered on {t['offered']}/{t['n'] - t['healthy']} problem cases and "
          f"{t['offered_healthy']}/{t['healthy']} healthy ones")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
