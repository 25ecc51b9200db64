"""How audit_data scales with data-set size: rows per second and peak memory on generated preference
data of 10k, 100k and 1M rows (parquet), beside a bare pyarrow scan of the same file.

Each measurement runs in a fresh subprocess (peak RSS is that run's own /proc VmHWM). The baseline reads every
row group with ``pyarrow.parquet.ParquetFile.iter_batches`` and converts it to Python rows
(``to_pylist``), the least any row-level check must do; the audit is ``rl_advisor.audit_tool.
audit_data(path, method=dpo, framework=trl)`` with estimated token counts and without the framework
loader sample (both are fixed costs, not per-row). Near-duplicate search indexes the first 50,000
rows (data_audit_rules.yaml near_duplicate.max_rows), so its memory stops growing there.

    python benchmarks/audit_scale.py                    # 10k, 100k, 1M rows
    python benchmarks/audit_scale.py --sizes 10000 100000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_CHILD = r"""
import json, sys, time
sys.path.insert(0, {repo!r})


def hwm_mb():
    # VmHWM starts afresh at exec (ru_maxrss would carry the parent's high-water mark over)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024

mode, path = sys.argv[1], sys.argv[2]
import pyarrow.parquet as pq
if mode == "audit":
    from advisor.plan import Framework, Method
    from rl_advisor.audit_tool import audit_data
    import datasketch, numpy  # imported by the audit on first use: count them as start-up, not rows
rss0 = hwm_mb()
t0 = time.perf_counter()
if mode == "bare":
    n = 0
    pf = pq.ParquetFile(path)
    for i in range(pf.num_row_groups):  # the same row-group-at-a-time scan as the audit's reader
        for rb in pf.read_row_group(i).to_batches(max_chunksize=1024):
            n += len(rb.to_pylist())
    extra = {{"rows": n}}
else:
    a = audit_data(path, method=Method.DPO, framework=Framework.TRL, consumer_check=False)
    extra = {{"rows": a.rows_read, "findings": [f"{{f.check}}:{{f.evidence.count}}" for f in a.findings[:5]]}}
dt = time.perf_counter() - t0
print(json.dumps({{"seconds": dt, "peak_rss_mb": hwm_mb(), "rss_before_mb": rss0, **extra}}))
"""

WORDS = ("the a of to and in is it you that he was for on are with as his they be at one have this from or had by "
         "word but what some we can out other were all there when up use your how said an each she which do their "
         "time if will way about many then them write would like so these her long make thing see him two has look "
         "more day could go come did number sound no most people my over know water than call first who may down "
         "side been now find any new work part take get place made live where after back little only round man year "
         "came show every good me give our under name very through just form sentence great think say help low line "
         "differ turn cause much mean before move right boy old too same tell does set three want air well also play "
         "small end put home read hand port large spell add even land here must big high such follow act why ask men "
         "change went light kind off need house picture try us again animal point mother world near build self earth").split()


def generate(path: Path, rows: int, seed: int = 0, chunk: int = 20_000) -> None:
    """Preference rows: a prompt of 15-60 random words, chosen of 30-200 and rejected of 20-180 words,
    0.5% exact duplicates and 0.1% identical pairs, written in row groups of 10k."""
    import random

    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(seed)

    def text(lo: int, hi: int) -> str:
        return " ".join(rng.choices(WORDS, k=rng.randint(lo, hi))) + "."

    writer = None
    try:
        for start in range(0, rows, chunk):
            n = min(chunk, rows - start)
            prompts = [f"Question {start + i}: {text(15, 60)}" for i in range(n)]
            chosen = [text(30, 200) for _ in range(n)]
            rejected = [text(20, 180) for _ in range(n)]
            for i in range(200, n, 200):  # 0.5% exact duplicates of the previous row
                prompts[i], chosen[i], rejected[i] = prompts[i - 1], chosen[i - 1], rejected[i - 1]
            for i in range(7, n, 1000):  # 0.1% identical pairs
                rejected[i] = chosen[i]
            table = pa.table({"prompt": prompts, "chosen": chosen, "rejected": rejected})
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema)
            writer.write_table(table, row_group_size=10_000)
    finally:
        if writer is not None:
            writer.close()


def measure(mode: str, path: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD.format(repo=str(REPO)), mode, str(path)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--workdir", type=Path, default=None, help="where to write the generated files")
    ap.add_argument("--generate", nargs=2, metavar=("ROWS", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.generate:  # in its own process, so the measured children start from a small parent
        generate(Path(args.generate[1]), int(args.generate[0]))
        return 0
    work = args.workdir or Path(tempfile.mkdtemp(prefix="audit-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in args.sizes:
        path = work / f"pairs-{n}.parquet"
        subprocess.run([sys.executable, __file__, "--generate", str(n), str(path)], check=True)
        bare = measure("bare", path)
        audit = measure("audit", path)
        assert audit["rows"] == bare["rows"] == n, (audit, bare)
        rows.append((n, path.stat().st_size / 1e6, bare, audit))
        path.unlink()
    print(f"{'rows':>9} {'file MB':>8} | {'bare rows/s':>11} {'audit rows/s':>12} {'ratio':>6} | "
          f"{'bare peak MB':>12} {'audit peak MB':>13} {'audit-imports MB':>16} | findings")
    for n, mb, bare, audit in rows:
        print(f"{n:>9} {mb:>8.1f} | {n / bare['seconds']:>11,.0f} {n / audit['seconds']:>12,.0f} "
              f"{audit['seconds'] / bare['seconds']:>6.1f} | {bare['peak_rss_mb']:>12.1f} {audit['peak_rss_mb']:>13.1f} "
              f"{audit['peak_rss_mb'] - audit['rss_before_mb']:>16.1f} | {', '.join(audit['findings'])}")
    if len(rows) > 1:
        print()
        for (n0, _, _, a0), (n1, _, _, a1) in zip(rows, rows[1:]):
            print(f"marginal cost {n0:,} -> {n1:,} rows: {1e6 * (a1['seconds'] - a0['seconds']) / (n1 - n0):.1f} us/row; "
                  f"peak RSS {a1['peak_rss_mb'] - a0['peak_rss_mb']:+.1f} MB "
                  f"({(a1['peak_rss_mb'] - a0['peak_rss_mb']) * 2**20 / (n1 - n0):.0f} bytes/row)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
