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
    ("verl_grpo_lora_qwen2.5-32b_4xh100", "nproc=45 (first OOM)"):
        "predicted 78.7 of 79.2 GiB (0.5 GiB short; 46 at 79.3 is rightly OOM, 44 rightly fits). With "
        "every term measured or derived (benchmarks/activation_calibration.py), the three veRL LoRA "
        "searches leave an unexplained ~18 GiB that is nearly the same for 14B, 32B and 72B "
        "(benchmarks/memory_constant_fit.py sees it as allocator terms); the shared constants place it "
        "within 0.5 GiB of all three windows but not inside the 32B one without losing 14B's 58",
    ("verl_grpo_min_qwen2-72b_32gpu", "32 x H800"):
        "predicted 84.3 of 79.2 GiB (+6%; the 96 GB H20 variant is right). With no allocator terms "
        "(fragmentation, in-flight gathers, reserve) the measured and derived terms sum to 62.6 GiB, "
        "so the recipe has ~16.6 GiB for them while the veRL LoRA searches need ~18 GiB: the fitted "
        "constants cannot serve both. The in-flight factor on this run's 11.2 GiB of gathered units "
        "(bf16 root 4.6 + two layers 3.3 + one fp32 layer gradient 3.3) is the largest allocator "
        "term here; a measured FSDP1 peak (benchmarks/gpu_memory_calibration.py --device cuda) would "
        "settle it",
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
