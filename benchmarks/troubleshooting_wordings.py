"""Recall of diagnose_run on symptom wordings taken from the frameworks' own troubleshooting / FAQ / metric docs.

Why: on blind real cases most misses are prose: users describe a failure in their own words and no rule reads
that wording. Per-case wording rules do not transfer. The frameworks' and engines' documentation describes the
same failures in words, page by page, with the cause named by the page itself; it is a systematic, reproducible
source of prose symptoms, and a split by source tells whether a rule written from one project's wording reads
another project's.

Data: tests/cases/diagnosis_wordings/troubleshooting_wordings.yaml (one row per verbatim span of a public page,
its expected taxonomy category from the page's own explanation, or `healthy` for a near miss from the same pages;
the file's header says how spans were cut). Each row is diagnosed as a one-line description,
``diagnose_text('# ' + text)``.

Scoring (the corpus's rule for prose, tests/cases/diagnosis/README.md): a symptom row counts when its expected
category is among the first three findings; a healthy row counts when it gets no error-level finding.

Split by SOURCE, fixed before anything was measured (round 10):
  decide   = veRL, TRL (its docs, its removed training FAQ and logging page), NeMo-RL, OpenRLHF, ms-swift:
             rules may be written from these rows and their misses may be read;
  held-out = axolotl, vLLM, DeepSpeed, Ray, LLaMA-Factory (NVIDIA's playbook page), unsloth:
             measured once before and once after the rule change, misses not read for rules.

Run (from the repository root):
    PYTHONPATH=$PWD /work/main/.venv/bin/python benchmarks/troubleshooting_wordings.py [--misses] [--held-out]
Without ``--held-out`` only the decide part is scored (rule work); ``--misses`` prints the decide part's misses only
(the held-out part's are never printed).
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import yaml

from advisor.diagnosis import diagnose_text

DATA = Path(__file__).resolve().parent.parent / "tests" / "cases" / "diagnosis_wordings" / "troubleshooting_wordings.yaml"

DECIDE = frozenset({"verl", "trl", "trl-faq", "trl-logging", "nemo-rl", "openrlhf", "ms-swift"})
HELD_OUT = frozenset({"axolotl", "vllm", "deepspeed", "ray", "ray-api", "llama-factory", "unsloth"})


def load() -> list[dict]:
    data = yaml.safe_load(DATA.read_text(encoding="utf-8"))
    sources = data["sources"]
    rows = data["rows"]
    for r in rows:
        if r["source"] not in sources:
            raise ValueError(f"row {r['text'][:40]!r}: source {r['source']!r} is not in `sources` of {DATA.name}")
        if r["source"] not in DECIDE | HELD_OUT:
            raise ValueError(f"source {r['source']!r} is in neither part: add it to DECIDE or HELD_OUT")
        r["part"] = "decide" if r["source"] in DECIDE else "held-out"
    return rows


def judge(row: dict) -> tuple[bool, list[str]]:
    """(counts, the first three findings as category/severity) for one row."""
    findings = diagnose_text("# " + row["text"] + "\n").findings
    top = [f"{f.category}/{f.severity}" for f in findings[:3]]
    if row["expected"] == "healthy":
        return not any(f.severity == "error" for f in findings), top
    return row["expected"] in [f.category for f in findings[:3]], top


def measure(rows: list[dict] | None = None) -> dict[tuple[str, str], list[int]]:
    """{(part, 'symptom'|'healthy'|'ALL'): [ok, n]} over the rows."""
    table: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for r in rows if rows is not None else load():
        ok, _ = judge(r)
        kind = "healthy" if r["expected"] == "healthy" else "symptom"
        for key in ((r["part"], kind), (r["part"], "ALL")):
            table[key][0] += ok
            table[key][1] += 1
    return dict(table)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--misses", action="store_true", help="print the decide part's misses (never the held-out part's)")
    ap.add_argument("--held-out", action="store_true",
                    help="also score the held-out part (once per rule freeze; without it only the decide part is scored)")
    args = ap.parse_args()
    rows = [r for r in load() if args.held_out or r["part"] == "decide"]
    if args.misses:
        for r in rows:
            if r["part"] != "decide":
                continue
            ok, top = judge(r)
            if not ok:
                print(f"MISS {r['source']:11s} {r['expected']:32s} got {', '.join(top) or '-'}  | {r['text'][:150]}")
    table = measure(rows)
    per_source: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        per_source[r["source"]][0] += judge(r)[0]
        per_source[r["source"]][1] += 1
    print(f"{'part':10s} {'rows':8s} {'recall':>12s}")
    for part in ("decide", "held-out") if args.held_out else ("decide",):
        for kind in ("symptom", "healthy", "ALL"):
            ok, n = table.get((part, kind), [0, 0])
            print(f"{part:10s} {kind:8s} {ok:4d}/{n:<4d} {100 * ok / max(n, 1):5.1f}%")
    print("per source: " + ", ".join(f"{s} {ok}/{n}" for s, (ok, n) in sorted(per_source.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
