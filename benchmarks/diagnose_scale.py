"""How diagnose_run scales with log size: time and peak memory on generated veRL logs of 10k, 100k
and 1M lines, side by side with a bare single-pass line read of the same file.

The diagnosis reads the first lines of a file in full and then only the lines one Hyperscan scan
of each chunk picks (advisor/diagnosis/prefilter.py; a pure-Python loop finds the same lines when
the ``hyperscan`` package is missing, much slower), plus the context-marker lines near an error
line (a second scan of those windows only); metric records past the first 256 are sampled
(NaN/Inf records always read). The last line prints the ratio at the largest size and the engine.

Both are timed in wall-clock and in CPU seconds (``time.process_time``; the steadier of the two on
a machine shared with other work). Each measurement runs in a fresh subprocess (so peak RSS is that
run's own), and the two alternate, ``--repeat`` times per size: the table shows the median run
of each side, and the last line the ratio of the medians with the range of the pairwise ratios. The
baseline is
``for line in open(f, errors="replace"): pass``; the diagnosis is ``rl_advisor.diagnose_tool.
diagnose_path(f)`` (metric readers + log-signature scan + rules, one streaming pass). The clock starts
after the imports (a server or CLI imports once) and includes the first call's start-up work
(loading the tables, compiling the scans and patterns). Linear time
shows as a constant microseconds-per-line column; bounded memory as a flat peak-RSS column.

    python benchmarks/diagnose_scale.py                 # 10k, 100k, 1M lines
    python benchmarks/diagnose_scale.py --sizes 10000 100000
    python benchmarks/diagnose_scale.py --repeat 9     # more runs per size (medians; default 5)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, {repo!r})
mode, path = sys.argv[1], sys.argv[2]
if mode == "diagnose":
    from rl_advisor.diagnose_tool import diagnose_path
    from advisor.diagnosis.prefilter import engine
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0, c0 = time.perf_counter(), time.process_time()
if mode == "bare":
    n = 0
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            n += 1
    extra = {{"lines": n}}
else:
    d = diagnose_path(path)
    extra = {{"lines": d.lines_read, "points": d.points_read, "engine": engine().kind,
              "findings": [f.category for f in d.findings[:4]]}}
dt, cpu = time.perf_counter() - t0, time.process_time() - c0
rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"seconds": dt, "cpu_seconds": cpu, "peak_rss_mb": rss1 / 1024, "rss_before_mb": rss0 / 1024,
                  **extra}}))
"""

NOISE = [
    "(WorkerDict pid={pid}) INFO {ts} vllm_engine.py:212] Avg prompt throughput: {a:.1f} tokens/s, "
    "Avg generation throughput: {b:.1f} tokens/s, Running: {r} reqs",
    "(TaskRunner pid={pid}) Training Progress:  {p}%|##        | {s}/20000 [1:02:03<3:10:00, 12.3s/it]",
    "(WorkerDict pid={pid}) [rank{r}]:[W {ts} ProcessGroupNCCL.cpp:4115] Warning: TORCH_NCCL_AVOID_RECORD_STREAMS",
    "(WorkerDict pid={pid}) INFO {ts} fsdp_workers.py:655] Actor use_remove_padding=True",
]


def _step_line(t: int, rng: random.Random) -> str:
    m = {
        "actor/entropy": 0.6 * (0.6 + 0.4 * math.exp(-t / 5000)) * math.exp(rng.gauss(0, 0.05)),
        "actor/kl_loss": 0.001 + 0.02 * min(1.0, t / 50000) + abs(rng.gauss(0, 0.001)),
        "actor/pg_loss": rng.gauss(0, 0.05), "actor/pg_clipfrac": abs(rng.gauss(0.002, 0.001)),
        "actor/ppo_kl": rng.gauss(0, 1e-4), "actor/grad_norm": math.exp(rng.gauss(math.log(0.3), 0.3)),
        "actor/lr": 1e-6, "critic/score/mean": 0.5 + rng.gauss(0, 0.05), "critic/score/max": 1.0,
        "critic/score/min": 0.0, "critic/advantages/max": 2.1, "critic/advantages/min": -2.1,
        "response_length/mean": 420 + rng.gauss(0, 20), "response_length/max": 1024.0,
        "response_length/clip_ratio": abs(rng.gauss(0.01, 0.004)), "timing_s/gen": 30 + rng.gauss(0, 2),
        "timing_s/old_log_prob": 8.0, "timing_s/ref": 7.5, "timing_s/update_actor": 40 + rng.gauss(0, 2),
        "timing_s/step": 95 + rng.gauss(0, 3), "perf/throughput": 2500 + rng.gauss(0, 80),
        "perf/max_memory_allocated_gb": 61.2, "training/global_step": t,
    }
    return f"(TaskRunner pid=4242) step:{t} - " + " - ".join(
        f"{k}:np.float64({v:.6g})" if k.startswith("actor/") else f"{k}:{v:.6g}" for k, v in m.items())


def generate(path: Path, lines: int, seed: int = 0, step_every: int = 10) -> None:
    """A veRL driver log: one step line every ``step_every`` lines between worker noise, a NaN
    grad_norm near the end and a Ray ActorDiedError as the last line."""
    rng = random.Random(seed)
    step = 0
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(lines - 1):
            if i % step_every == 0:
                step += 1
                line = _step_line(step, rng)
                if i == (lines * 9 // 10) // step_every * step_every:
                    line = line.replace("actor/grad_norm:np.float64(", "actor/grad_norm:np.float64(nan) - x:(")
            else:
                line = rng.choice(NOISE).format(pid=rng.randint(1000, 9999), ts="11-30 10:00:00", a=rng.random() * 100,
                                                b=rng.random() * 3000, r=rng.randint(0, 7), p=rng.randint(0, 99),
                                                s=step)
            fh.write(line + "\n")
        fh.write("ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n")


def measure(mode: str, path: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD.format(repo=str(REPO)), mode, str(path)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _median(results: list[dict]) -> dict:
    """The run whose wall-clock time is the median (its other figures with it), plus the median
    CPU time and the spread of the wall-clock times."""
    ordered = sorted(results, key=lambda r: r["seconds"])
    out = dict(ordered[(len(ordered) - 1) // 2])
    out["cpu_seconds"] = statistics.median(r["cpu_seconds"] for r in results)
    out["all_seconds"] = [r["seconds"] for r in results]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--repeat", type=int, default=5, help="runs of each side per size (medians reported)")
    ap.add_argument("--workdir", type=Path, default=None, help="where to write the generated logs")
    args = ap.parse_args(argv)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="diagnose-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in args.sizes:
        path = work / f"verl-{n}.log"
        t0 = time.perf_counter()
        generate(path, n)
        gen_s = time.perf_counter() - t0
        # bare read and diagnosis alternate, each in a fresh process; the medians of the repeats
        # go into the table (one slow run on a shared machine does not decide the ratio)
        runs = [(measure("bare", path), measure("diagnose", path)) for _ in range(args.repeat)]
        bare, diag = _median([b for b, _ in runs]), _median([d for _, d in runs])
        assert diag["lines"] == bare["lines"] == n, (diag, bare)
        rows.append((n, path.stat().st_size / 1e6, bare, diag, gen_s))
        path.unlink()
    print(f"{'lines':>9} {'file MB':>8} | {'bare s':>7} {'diag s':>7} {'ratio':>6} | {'bare us/l':>9} "
          f"{'diag us/l':>9} | {'bare peak MB':>12} {'diag peak MB':>12} {'diag-imports MB':>15} | "
          f"{'points':>7}  top findings")
    for n, mb, bare, diag, _ in rows:
        print(f"{n:>9} {mb:>8.1f} | {bare['seconds']:>7.2f} {diag['seconds']:>7.2f} "
              f"{diag['seconds'] / bare['seconds']:>6.1f} | {1e6 * bare['seconds'] / n:>9.2f} "
              f"{1e6 * diag['seconds'] / n:>9.2f} | {bare['peak_rss_mb']:>12.1f} {diag['peak_rss_mb']:>12.1f} "
              f"{diag['peak_rss_mb'] - diag['rss_before_mb']:>15.1f} | {diag['points']:>7}  "
              f"{', '.join(diag['findings'])}")
    if len(rows) > 1:
        # marginal cost between sizes: start-up (imports, tables) cancels out; equal = linear
        print()
        for (n0, _, _, d0, _), (n1, _, _, d1, _) in zip(rows, rows[1:]):
            print(f"marginal cost {n0:,} -> {n1:,} lines: {1e6 * (d1['seconds'] - d0['seconds']) / (n1 - n0):.2f} us/line")
        first, last = rows[0], rows[-1]
        print(f"peak RSS growth {first[0]:,} -> {last[0]:,} lines: "
              f"{last[3]['peak_rss_mb'] - first[3]['peak_rss_mb']:+.1f} MB")
    n, _, bare, diag, _ = rows[-1]
    # CPU seconds too: on a shared machine the wall-clock ratio moves with the other processes' load
    ratios = sorted(d / b for b, d in zip(bare["all_seconds"], diag["all_seconds"]))
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{n:,} lines, median of {len(ratios)} runs each: diagnose {diag['seconds'] / bare['seconds']:.2f}x a "
          f"bare read in wall-clock time, {diag['cpu_seconds'] / bare['cpu_seconds']:.2f}x in CPU time (goal <= 3x); "
          f"pairwise wall-clock ratios {ratios[0]:.2f}-{ratios[-1]:.2f}; load average {load}; "
          f"pre-filter: {diag.get('engine')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
