"""plan_placement: search placements, prune by framework rules and memory, rank by the time model.

The search is HybridFlow's (perf-anchors.md §2.1) made explicit and tested: enumerate layouts
and parallelism (advisor.placement.enumerate), reject what a framework would refuse
(advisor.placement.rules, each with its reason), score the rest with the calibrated step-time
model (advisor.placement.timemodel), and check memory with advisor.memory.budget_memory in
rank order until ``top_k`` plans fit. The plan as given is scored under the same model, so
the report can say by how much and why the best plan beats it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from pydantic import validate_call

from advisor.errors import AdvisorError, FieldProblem
from advisor.placement.enumerate import candidates
from advisor.memory.models import PoolBudget
from advisor.placement.models import (Candidate, CostEstimate, Layout, PlacementReport, Rejection,
                                      TimeModelInfo)
from advisor.placement.resources import k8s_resources, ray_resources
from advisor.placement.rules import check_plan
from advisor.placement.timemodel import Infeasible, default_factors, load_table, pools_of, predict_step
from advisor.plan import Plan

MEMORY_SOURCE = "budget_memory (advisor.memory, phase-resolved ledger)"
MEMORY_CHECK_LIMIT = 400
"""Memory is checked in rank order; past this many failures the slower rest is not checked."""


# --------------------------------------------------------------------------- memory: one switchable call


def memory_verdict(plan: Plan) -> tuple[bool, list[PoolBudget], str]:
    """(fits, verdict per pool, source): budget_memory's phase-resolved verdict, per pool."""
    from advisor.memory import budget_memory

    try:
        budget = budget_memory(plan)
    except AdvisorError as exc:
        return False, [], f"budget_memory rejected the plan: {exc}"
    return bool(budget.fits), list(budget.pools), MEMORY_SOURCE


# --------------------------------------------------------------------------- explaining


def _phase_totals(c: Candidate) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for ph in c.time.phases:
        if not ph.overlapped:
            out[ph.phase] += ph.seconds
    return out


def explain_difference(winner: Candidate, other: Candidate, other_name: str = "it") -> str:
    """Why ``other`` is slower than ``winner``: the step-time gap and the phases that make it."""
    gap = other.time.step_s - winner.time.step_s
    if abs(gap) < 1e-6:
        return f"{other_name} ties with the best plan ({winner.time.step_s:.1f} s per step)."
    a, b = _phase_totals(winner), _phase_totals(other)
    diffs = sorted(((b.get(k, 0.0) - a.get(k, 0.0), k) for k in set(a) | set(b)), key=lambda x: -abs(x[0]))
    parts = [f"{k} {d:+.1f} s" for d, k in diffs[:3] if abs(d) >= 0.05]
    overl = [ph.phase for ph in winner.time.phases if ph.overlapped]
    name = other_name if other.label == "as given" else f"{other_name} ({other.label})"
    text = (f"{name} takes {other.time.step_s:.1f} s per step vs {winner.time.step_s:.1f} s "
            f"({gap / winner.time.step_s:+.0%}); phase differences: {', '.join(parts) or 'none'}.")
    if overl:
        text += f" The best plan hides {', '.join(sorted(set(overl)))} behind the other pool's work ({winner.layout})."
    if other.time.bottleneck != winner.time.bottleneck:
        text += f" Its bottleneck is {other.time.bottleneck}; the best plan's is {winner.time.bottleneck}."
    return text


def _notes(plan: Plan) -> list[str]:
    """Trade-offs of a layout that the step time does not show."""
    mode = plan.placement.mode
    out = []
    if mode == "one_step_off":
        out.append("one_step_off trains on rollouts from the previous policy (one step stale): keep the "
                   "importance-sampling / clip corrections on, watch KL and clip fraction")
    elif mode == "fully_async":
        out.append("fully_async streams rollouts from policies up to a few steps old: bound the staleness "
                   "and keep importance-sampling corrections on")
    elif mode == "colocated":
        out.append("colocated: every role time-shares the GPUs, so the rollout engine's memory fraction, "
                   "offload and sleep settings decide what fits (see budget_memory)")
    if len(pools_of(plan)) > 1:
        out.append("separate pools: the weights are sent to the rollout engines every step (weight_sync) "
                   "and idle GPUs on one side show up as the non-overlapped part of the step")
    return out


def _candidate(label: str, plan: Plan, time: Any) -> Candidate:
    pools = pools_of(plan)
    roll = next((p for p in pools if "rollout" in p.roles), None)
    par = {r: (getattr(plan, r) or plan.policy).parallel for r in ("policy", "reference", "critic", "reward")
           if r == "policy" or getattr(plan, r) is not None}
    return Candidate(label=label, layout=plan.placement.mode, pools=pools, parallel=par, rollout_tp=plan.rollout.tp,
                     rollout_engines=(plan.rollout.engines or (roll.gpus // plan.rollout.tp if roll else 0)),
                     time=time, notes=_notes(plan))


# --------------------------------------------------------------------------- the tool


def _check_args(price_per_gpu_hour: float | None, steps: int | None, top_k: int) -> None:
    problems = []
    if price_per_gpu_hour is not None and (not math.isfinite(price_per_gpu_hour) or price_per_gpu_hour < 0):
        problems.append(FieldProblem(field="price_per_gpu_hour", value=price_per_gpu_hour,
                                     message="must be a finite price >= 0", allowed="USD per GPU-hour, e.g. 2.5"))
    if steps is not None and steps <= 0:
        problems.append(FieldProblem(field="steps", value=steps, message="must be positive", allowed=">= 1"))
    if not 1 <= top_k <= 50:
        problems.append(FieldProblem(field="top_k", value=top_k, message="out of range", allowed="1..50"))
    if problems:
        raise AdvisorError(problems)


def time_model_info() -> TimeModelInfo:
    from advisor.profiles import active_label

    fit = load_table().get("fit", {})
    return TimeModelInfo(factors=default_factors(), fit_rows=int(fit.get("rows", 0)),
                         fit_median_abs_error=float(fit.get("median_abs_error", 0.0)),
                         fit_max_abs_error=float(fit.get("max_abs_error", 0.0)),
                         loso_median_abs_error=fit.get("cv_median_abs_error"),
                         source="advisor/data/time_model.yaml, fitted by benchmarks/placement_accuracy.py --fit",
                         profile=active_label())


def evaluate_given(plan: Plan) -> tuple[Candidate | None, list[str]]:
    """The plan's own placement under the same rules and model (None + reasons if it cannot run)."""
    violations = check_plan(plan)
    try:
        time = predict_step(plan)
    except Infeasible as exc:
        return None, [str(exc)] + [v.message for v in violations]
    cand = _candidate("as given", plan, time)
    cand.violations = violations
    fits, mem, _ = memory_verdict(plan)
    cand.memory, cand.fits, cand.memory_checked = mem, fits, True
    return cand, [v.message for v in violations] + ([] if fits else ["does not fit in memory"])


@validate_call
def plan_placement(plan: Plan, price_per_gpu_hour: float | None = None, steps: int | None = None,
                   top_k: int = 5, modes: list[Layout] | None = None) -> PlacementReport:
    """Rank placements of ``plan`` (layout, pools, per-role parallelism, rollout TP x engines) by
    predicted step time, after pruning with the frameworks' rules and the memory budget. Returns the
    best as an updated Plan, why the runner-up lost, the plan-as-given under the same model, Ray
    placement groups and Kubernetes/Kueue resources, and GPU-hours/cost for ``steps`` steps
    (default: data.total_steps) at ``price_per_gpu_hour`` (default: objective.budget.price_per_gpu_hour).
    ``modes`` limits the layouts searched (e.g. colocated and split only, to stay on-policy)."""
    _check_args(price_per_gpu_hour, steps, top_k)
    scored: list[tuple[float, str, Plan, Any]] = []
    rejections: dict[str, Rejection] = {}

    def reject(rule: str, reason: str, label: str, source: str = "") -> None:
        r = rejections.get(rule)
        if r is None:
            rejections[rule] = Rejection(rule=rule, reason=reason, count=1, example=label, source=source)
        else:
            r.count += 1

    seen: set[str] = set()
    considered = 0
    given, given_problems = evaluate_given(plan)
    for label, cand in candidates(plan):
        if modes and cand.placement.mode not in modes:
            continue
        considered += 1
        key = _key(cand)
        if key in seen:
            continue
        seen.add(key)
        violations = check_plan(cand)
        if violations:
            v = violations[0]
            reject(v.rule, f"{v.field}: {v.message}", label, v.source)
            continue
        try:
            t = predict_step(cand)
        except Infeasible as exc:
            reject("rollout_kv_cache", str(exc), label, "perf-anchors.md 1.6 (vLLM KV pool)")
            continue
        scored.append((t.step_s, label, cand, t))
    if given is not None and given.fits and not given.violations:
        gkey = _key(plan)
        same = [s for s in scored if _key(s[2]) == gkey]  # the same placement: keep the "as given" name,
        scored = [s for s in scored if _key(s[2]) != gkey]  # but the searched copy (explicit pools, engines)
        scored.append((given.time.step_s, "as given", same[0][2] if same else plan, given.time))
    scored.sort(key=lambda x: (x[0], x[1] != "as given"))
    ranked: list[Candidate] = []
    memory_source = MEMORY_SOURCE
    checked = 0
    for _step_s, label, cand, t in scored:
        if len(ranked) >= top_k:
            break
        if checked >= MEMORY_CHECK_LIMIT:
            reject("memory_not_checked", f"stopped after the {MEMORY_CHECK_LIMIT} fastest candidates failed the "
                   "memory budget", label)
            continue
        checked += 1
        fits, mem, memory_source = memory_verdict(cand)
        if not fits:
            worst = min(mem, key=lambda m: m.headroom_gib) if mem else None
            reject("memory", f"pool {worst.name} peaks at {worst.peak_gib:.1f} of {worst.capacity_gib:.1f} GiB "
                   f"({worst.binding_phase}: {worst.binding_term}"
                   + (f"; {worst.failed_check})" if worst.failed_check else ")") if worst else memory_source,
                   label, memory_source)
            continue
        c = _candidate(label, cand, t)
        c.memory, c.fits, c.memory_checked = mem, True, True
        ranked.append(c)
    if not ranked:
        reasons = [f"{r.rule} x{r.count}: {r.reason}" for r in sorted(rejections.values(), key=lambda r: -r.count)]
        raise AdvisorError([FieldProblem(
            field="plan.hardware", value=f"{plan.hardware.nodes} x {plan.hardware.gpus_per_node} {plan.hardware.gpu}",
            message=f"no placement of {considered} candidates passes the framework rules and fits in memory",
            allowed="more or larger GPUs, offload/LoRA (see budget_memory fixes), or other batch sizes; first "
                    "reasons: " + "; ".join(reasons[:4]))])
    best = ranked[0]
    if len(ranked) > 1:
        runner = explain_difference(best, ranked[1], "the runner-up")
    else:
        runner = "no other candidate passed the rules and the memory budget."
    if given is not None:
        versus = explain_difference(best, given, "the plan as given")
        if given_problems:
            versus += " As given it also has problems: " + "; ".join(given_problems[:3]) + "."
    else:
        versus = "the plan as given cannot run: " + "; ".join(given_problems[:3])
    rej = sorted(rejections.values(), key=lambda r: -r.count)
    best_plan = _best_plan(plan, scored, best)
    n_steps = steps or plan.data.total_steps
    price = price_per_gpu_hour if price_per_gpu_hour is not None else \
        (plan.objective.budget.price_per_gpu_hour if plan.objective else None)
    cost = None
    if n_steps:
        gpus = best.time.total_gpus
        hours = best.time.step_s * n_steps / 3600
        budget = plan.objective.budget.gpu_hours if plan.objective else None
        cost = CostEstimate(steps=n_steps, step_s=best.time.step_s, wall_hours=round(hours, 3), gpus=gpus,
                            gpu_hours=round(hours * gpus, 2), price_per_gpu_hour=price,
                            cost_usd=round(hours * gpus * price, 2) if price is not None else None,
                            budget_gpu_hours=budget,
                            within_budget=(hours * gpus <= budget) if budget is not None else None)
    return PlacementReport(best=best, ranked=ranked, runner_up_lost=runner, given=given, versus_given=versus,
                           rejected=rej, candidates_considered=considered, best_plan=best_plan,
                           ray=ray_resources(best_plan), k8s=k8s_resources(best_plan), cost=cost,
                           time_model=time_model_info(), memory_source=memory_source)


def _key(plan: Plan) -> str:
    """Identity of a placement: layout, pools, per-role parallelism, rollout TP and engines."""
    pools = [(p.name if len(pools_of(plan)) > 1 else "", p.nodes, p.gpus_per_node, sorted(p.roles)) for p in pools_of(plan)]
    roll = next((p for p in pools_of(plan) if "rollout" in p.roles), None)
    engines = plan.rollout.engines or (roll.gpus // plan.rollout.tp if roll else 0)
    return repr((plan.placement.mode, pools, plan.policy.parallel.model_dump_json(), plan.rollout.tp, engines))


def _best_plan(original: Plan, scored: list[tuple[float, str, Plan, Any]], best: Candidate) -> Plan:
    for _, label, cand, _ in scored:
        if label == best.label:
            return cand
    return original
