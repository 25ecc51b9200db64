"""budget_memory against the estimators people use today, on the published cases.

For every check in tests/cases/memory (published fits / OOM points of batch searches, recipes
published as runnable, and measured peaks) this prints, in one table:
  * budget_memory: predicted per-GPU peak of the worst pool and its verdict;
  * DeepSpeed's estimators (estimate_zero2/zero3_model_states_mem_needs, the code formulas in
    advisor.memory.terms) for the trained model on the same GPUs and offload flags — model states
    only, as the tool reports them;
  * accelerate estimate-memory's "Training using Adam" (max of the parts, no sharding) for the
    trained model in bf16;
each with its verdict (fits when the estimate is at most the usable memory) and whether that
verdict matches the published outcome; measured cases add the relative error of the peak.
All three are computed in this run from the same Plans.

    python benchmarks/memory_accuracy.py            # table + summary
    python benchmarks/memory_accuracy.py --markdown
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from advisor.catalog import get_gpu, resolve_role_model  # noqa: E402
from advisor.memory import budget_memory  # noqa: E402
from advisor.constants import const  # noqa: E402
from advisor.memory.roles import backend_of  # noqa: E402
from advisor.memory.terms import (GIB, accelerate_estimate, deepspeed_zero2_estimate,  # noqa: E402
                                  deepspeed_zero3_estimate, param_parts)
from advisor.plan import Plan, plan_from_dict  # noqa: E402

CASES = REPO / "tests" / "cases" / "memory"


def _set(data: dict, path: str, value) -> None:
    cur = data
    parts = path.split(".")
    for p in parts[:-1]:
        cur = cur.setdefault(p, {})
    cur[parts[-1]] = value


def checks():
    for f in sorted(CASES.glob("*.yaml")):
        case = yaml.safe_load(f.read_text(encoding="utf-8"))
        for check in case["checks"]:
            data = copy.deepcopy(case["plan"])
            for path, value in (check.get("set") or {}).items():
                _set(data, path, value)
            yield case["id"], check, plan_from_dict(data)


def deepspeed_estimate(plan: Plan) -> float:
    """GiB per GPU from DeepSpeed's estimator for the trained model (ZeRO-3 formula for FSDP,
    ZeRO-3 and Megatron; ZeRO-2 formula for stages 0-2)."""
    spec = resolve_role_model(plan.policy, "policy")
    parts = param_parts(spec)
    gpus = plan.placement.pools[0].gpus if plan.placement.pools else plan.hardware.total_gpus
    gpn = min(gpus, plan.hardware.gpus_per_node)
    nodes = max(1, gpus // gpn)
    m = plan.memory
    stage = m.zero_stage if backend_of(plan) == "deepspeed" else 3
    if stage >= 3:
        gpu, _ = deepspeed_zero3_estimate(parts.total, parts.largest_layer, gpn, nodes,
                                          offload_params=m.param_offload, offload_optimizer=m.optimizer_offload)
    else:
        gpu, _ = deepspeed_zero2_estimate(parts.total, gpn, nodes, cpu_offload=m.optimizer_offload)
    return gpu / GIB


def accelerate_training(plan: Plan) -> float:
    spec = resolve_role_model(plan.policy, "policy")
    return accelerate_estimate(4 * param_parts(spec).total, "bfloat16")["training_adam"] / GIB


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    rows = []
    score = {"ours": [0, 0], "deepspeed": [0, 0], "accelerate": [0, 0]}
    errors: dict[str, list[float]] = {"ours": [], "deepspeed": [], "accelerate": []}
    for cid, check, plan in checks():
        cap = get_gpu(plan.hardware.gpu).hbm_gib * const("usable_hbm_fraction")
        b = budget_memory(plan)
        worst = max(b.pools, key=lambda p: p.peak_gib - p.capacity_gib)
        est = {"ours": (worst.peak_gib, b.fits), "deepspeed": None, "accelerate": None}
        ds = deepspeed_estimate(plan)
        ac = accelerate_training(plan)
        est["deepspeed"] = (ds, ds <= cap)
        est["accelerate"] = (ac, ac <= cap)
        expect = check["expect"]
        cells = []
        for name in ("ours", "deepspeed", "accelerate"):
            peak, fits = est[name]
            if expect == "measured":
                err = (peak - check["peak_gib"]) / check["peak_gib"]
                errors[name].append(abs(err))
                cells.append(f"{peak:7.1f} {err:+6.0%}")
            else:
                ok = fits == (expect == "fits")
                score[name][0] += ok
                score[name][1] += 1
                cells.append(f"{peak:7.1f} {'fits' if fits else 'OOM '} {'ok' if ok else 'XX'}")
        rows.append((cid[:44], check["name"][:30], expect if expect != "measured" else f"{check['peak_gib']:g} GiB",
                     f"{cap:.1f}", *cells))
    headers = ("case", "check", "published", "usable", "budget_memory", "DeepSpeed est.", "accelerate est.")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    sep = " | " if args.markdown else "  "
    line = sep.join(h.ljust(w) for h, w in zip(headers, widths))
    print(("| " + line + " |") if args.markdown else line)
    print(("|" + "|".join("-" * (w + 2) for w in widths) + "|") if args.markdown else "  ".join("-" * w for w in widths))
    for r in rows:
        text = sep.join(c.ljust(w) for c, w in zip(r, widths))
        print(("| " + text + " |") if args.markdown else text)
    print()
    base = score["deepspeed"][0] or 1
    for name in ("ours", "deepspeed", "accelerate"):
        right, total = score[name]
        mean_err = sum(errors[name]) / len(errors[name]) if errors[name] else float("nan")
        print(f"{name:<11} verdicts right {right}/{total} ({right / total:.0%}); x{right / base:.2f} vs DeepSpeed; "
              f"mean |error| on measured peaks {mean_err:.0%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
