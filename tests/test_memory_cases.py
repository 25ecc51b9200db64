"""Regression suite: every published case in tests/cases/memory gets the published verdict.

Each case file holds a Plan, the published outcome and the checks (fits / oom at each point of a
batch search, or a measured per-GPU peak within its tolerance). All cases run against the one set of
constants in advisor/data/memory_constants.yaml — nothing here is tuned per case.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.memory import budget_memory
from advisor.plan import plan_from_dict

CASES = Path(__file__).parent / "cases" / "memory"

# Published points the model gets wrong today, with the reason. strict=True: when a change fixes one,
# the suite says so and the entry must be removed.
KNOWN_MISSES: dict[tuple[str, str], str] = {
    ("verl_grpo_lora_qwen2.5-32b_4xh100", "nproc=44 (largest that fit)"):
        "predicted 80.0 of 79.2 GiB (+1.0%; 45 at 80.75 is rightly OOM, 40 rightly fits): the 44/45 "
        "window is 0.74 GiB wide and the 14B (58/59) and 72B (22/23) windows it must share constants "
        "with leave only -0.23..+0.39 and -0.49..+0.49 GiB of slack, so moving 32B down by 0.8 GiB "
        "needs a term that grows with the MLP width (32B: I/h = 5.4 vs 2.7 and 3.6) - e.g. a smaller "
        "backward working set - plus a compensating offset; no such term is sourced yet",
    ("verl_grpo_min_qwen2-72b_32gpu", "32 x H800"):
        "predicted ~83.5 of 79.2 GiB (+5%; the 96 GB H20 variant is right). Resident at the update "
        "peak: fp32 params 8.5 + Adam 16.9 GiB (offloaded between phases, loaded for update_actor), "
        "checkpointed activations 16.8 + logits 3.9 GiB for the rank's 13.8k tokens (one micro-batch, "
        "so the 8.5 GiB of grad shards no longer add), and 22.4 GiB of gathered units. The excess is "
        "in the gathered term: the 4.6 GiB bf16 root (embedding + lm_head) is counted twice by "
        "gather_inflight_factor, but counting it once flips the 14B/72B LoRA boundaries (59 and 23 "
        "then fit), so that factor is compensating for something the LoRA cases need; unresolved "
        "without a measured FSDP1 peak (benchmarks/gpu_memory_calibration.py --device cuda)",
    ("llamafactory_7282_70b_full_sft_8xh200", "ZeRO-3 offload measured peak"):
        "predicted 23.3 GiB vs '27G of 141G' in nvidia-smi (the issue's G is nvidia-smi MiB/1024, "
        "141G = the 140.4 GiB H200 total, so ~27 GiB reserved + CUDA context): -14%. The reading did "
        "not move from batch 1 to 64, so it is buffers and allocator cache, not activations; "
        "ds_z3_offload_config's real buffers (stage3_max_live_parameters 1e9 bf16 = 1.9 GiB, prefetch "
        "bucket 0.9 h^2 and reduce bucket h^2 = 0.24 GiB with HF 'auto', grads and optimizer on the "
        "host) are already within the 11.7 GiB gathered term; the rest is caching-allocator reserve of "
        "differently sized gather buffers (2.1 GB embedding/lm_head vs 1.7 GB layers) that needs a "
        "measured ZeRO-3 peak to model",
}


def _set(data: dict[str, Any], path: str, value: Any) -> None:
    cur = data
    parts = path.split(".")
    for p in parts[:-1]:
        cur = cur.setdefault(p, {})
    cur[parts[-1]] = value


def load_cases() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    out = []
    for f in sorted(CASES.glob("*.yaml")):
        case = yaml.safe_load(f.read_text(encoding="utf-8"))
        for check in case["checks"]:
            out.append((case["id"], case, check))
    return out


def plan_for(case: dict[str, Any], check: dict[str, Any]):
    data = copy.deepcopy(case["plan"])
    for path, value in (check.get("set") or {}).items():
        _set(data, path, value)
    return plan_from_dict(data)


def _params():
    for cid, case, check in load_cases():
        marks = []
        miss = KNOWN_MISSES.get((cid, check["name"]))
        if miss:
            marks.append(pytest.mark.xfail(reason=miss, strict=True))
        yield pytest.param(case, check, id=f"{cid}::{check['name']}", marks=marks)


def test_case_files_are_well_formed():
    cases = load_cases()
    assert len({c[0] for c in cases}) >= 10
    for cid, case, check in cases:
        assert check["expect"] in ("fits", "oom", "measured"), cid
        assert set(check) <= {"name", "set", "expect", "peak_gib", "tolerance"}, (cid, check)
        assert case["published"], cid


@pytest.mark.parametrize("case,check", list(_params()))
def test_published_verdict(case, check):
    budget = budget_memory(plan_for(case, check))
    worst = max(budget.pools, key=lambda p: p.peak_gib - p.capacity_gib)
    where = f"peak {worst.peak_gib:.2f} / {worst.capacity_gib:.2f} GiB in {worst.binding_phase} ({worst.binding_term})"
    if check["expect"] == "fits":
        assert budget.fits, f"published fits, predicted OOM: {where}"
    elif check["expect"] == "oom":
        assert not budget.fits, f"published OOM, predicted fits: {where}"
    else:
        measured = check["peak_gib"]
        err = abs(worst.peak_gib - measured) / measured
        assert err <= check.get("tolerance", 0.10), f"measured {measured} GiB, predicted: {where} ({err:.1%})"
