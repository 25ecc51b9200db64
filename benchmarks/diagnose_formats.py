"""Does a diagnosis depend on the shape of the log? Every development case, re-written in every
format a user pastes, diagnosed again and compared with the diagnosis of the original file.

* Metric cases (``input_kind: metric``) whose records the reader parses: the same records in each
  format of tests/log_formats.py (veRL console, TRL dict lines, JSONL, veRL JSONL, ``key: value``
  runs, OpenRLHF tqdm postfixes, NeMo-RL console blocks, Markdown and whitespace tables,
  ``trainer_state.json``, W&B chart/history CSV and history JSON exports, a TensorBoard folder).
  Same = the same first category and the same top-3 categories.
* Crash logs (``input_kind: log``): every line behind the prefixes real runs add (Ray worker and
  vLLM actor prefixes, vLLM's and Python's logging prefixes, torchrun ``[rankN]:``, ``kubectl logs
  --timestamps``, ANSI colours, CRLF line ends). Same = the same first category.

The held-out batch is never read. Prints a table per format and the pairs that differ.

    PYTHONPATH=$PWD python benchmarks/diagnose_formats.py --shared /work/shared
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests import log_formats as lf  # noqa: E402


def metric_pairs(cases: list[dict], tmp: Path) -> tuple[list, list]:
    """(case, format, original top-3, variant top-3) for every metric case the reader parses: in each
    format, and deep in a long console log (past the lines read in full) in the formats of long logs,
    behind each runner prefix or none. Each case's variants and baseline are made once for both."""
    formats, long = [], []
    for c in cases:
        if len(c["paths"]) != 1:
            continue
        text = c["paths"][0].read_text(encoding="utf-8", errors="replace")
        if not lf.split_records(text)[0]:
            continue
        src = c.get("source", "")
        base = lf.top_categories(c["paths"], src)
        variants = lf.case_variants(text, tmp / c["id"])
        formats += [(c["id"], name, base, lf.top_categories(paths, src)) for name, paths in variants.items()]
        long += [(c["id"], label, base, lf.top_categories([f], src))
                 for label, f in lf.long_variants(variants, tmp / c["id"]).items()]
    return formats, long


def log_pairs(cases: list[dict], tmp: Path) -> list[tuple[str, str, list[str], list[str]]]:
    rows = []
    for c in cases:
        if len(c["paths"]) != 1:
            continue
        raw = c["paths"][0].read_bytes().decode("utf-8", errors="replace")
        src = c.get("source", "")
        base = lf.top_categories(c["paths"], src, 1)
        folder = tmp / c["id"]
        folder.mkdir(parents=True, exist_ok=True)
        for name, wrap in lf.PREFIXES.items():
            f = folder / f"{name}.txt"
            f.write_bytes(wrap(raw).encode("utf-8"))
            rows.append((c["id"], name, base, lf.top_categories([f], src, 1)))
    return rows


def _report(rows: list, title: str) -> list[str]:
    agg: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for _, name, base, got in rows:
        agg[name][0] += base != got
        agg[name][1] += 1
    out = [f"{title:<36} {'pairs':>6} {'differ':>7}"]
    out += [f"{k:<36} {n:>6} {d:>7}" for k, (d, n) in agg.items()]
    out.append(f"{'total':<36} {sum(n for _, n in agg.values()):>6} {sum(d for d, _ in agg.values()):>7}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", type=Path, default=None, help="the shared folder (default: ../shared)")
    ap.add_argument("--show", action="store_true", help="list every pair that differs")
    args = ap.parse_args(argv)
    shared = args.shared / "cases" / "diagnosis" if args.shared else None
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        metric, long = metric_pairs(lf.development_cases("metric", shared), Path(tmp) / "m")
        log = log_pairs(lf.development_cases("log", shared), Path(tmp) / "l")
    print("\n".join(_report(metric, "metric format")))
    print()
    print("\n".join(_report(long, "deep in a long log")))
    print()
    print("\n".join(_report(log, "crash-log prefix")))
    print(f"\n{len(metric) + len(long) + len(log)} pairs in {time.perf_counter() - t0:.1f} s")
    if args.show:
        for cid, name, base, got in metric + long + log:
            if base != got:
                print(f"DIFF {cid} [{name}]: {base} -> {got}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
