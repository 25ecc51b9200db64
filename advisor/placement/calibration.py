"""Fit the time model's efficiency factors and the memory allocator terms on one real run.

The published fit (advisor/data/time_model.yaml) is one set of factors for every cluster; the
first run on a user's own cluster is better evidence about that cluster. This module reads the
per-phase timers and memory peaks a framework logs (the ``calibration:`` table of
time_model.yaml names them, with the framework source of each), predicts the same phases for the
run's Plan, and fits the factors to the measurement:

- a maximum a posteriori fit in log space (scipy.optimize.least_squares, trust-region reflective
  with bounds). Each factor's prior is its published value, with its published range (for
  data-centre GPUs) read as a 95% interval; on a CPU the ranges do not apply and are widened
  tenfold (``off_gpu_prior_widening``). Each timer's log error weighs 1/model_error_log^2: the
  model's own error between two settings on one cluster (what no calibration can transfer). A
  timer moves the factors it informs in proportion to their sensitivity and prior width, so a
  generation timer that three factors explain about equally moves each a little instead of
  pushing one far out (which the next setting, with other sensitivities, would pay in full), and
  a factor that a timer barely sees stays at its published value. A timer that measures nothing
  the model predicts is skipped, never forced. Factors stay inside their physical bounds; with
  ``ranges_as_hard_bounds`` they also stay inside their published ranges. Two alternatives were
  measured on held-out pairs (benchmarks/calibration_transfer.py, README "Calibration profiles")
  and not adopted: the ranges as hard bounds (no better on held-out pairs, and the FSDP2 update
  check worse), and the run's timers deciding alone inside those bounds (model_error_log -> 0.02:
  the log-prob phases transfer better, the step and the whole worse - one run is one setting, and
  a full fit imports that setting's own model error into every other prediction);
- the whole step then sets ``step_overhead_s`` (what the phases leave unexplained), weighed in
  seconds against its published range the same way; a run with only a step
  timer moves the factors of every phase the step contains;
- the fit is refused when the run has fewer than ``min_steps`` steps with timers after the
  warm-up step, so one noisy step never becomes a profile;
- memory: veRL's ``perf/max_memory_allocated_gb`` and ``perf/max_memory_reserved_gb`` (the
  actor update) set ``allocator_reserve_fraction`` from the reserved-minus-allocated gap.

The result is an ``advisor.profiles.Profile`` with every check before and after. Pure: the
caller reads the run (rl_advisor.calibrate_tool) and saves the profile.
"""

from __future__ import annotations

import math
import re
import statistics
from typing import Any, Iterable, Literal

from advisor.errors import AdvisorError
from advisor.metrics.model import MetricPoint
from advisor.placement.timemodel import default_factors, factor_ranges, factor_variant, load_table, predict_step
from advisor.plan import Plan
from advisor.profiles import PhaseCheck, Profile, applied

Clock = Literal["wall", "cpu"]
Statistic = Literal["median", "min"]

PHYSICAL = {"efficiency": (1e-4, 1.0), "mfu": (1e-4, 1.0)}
"""Bounds a calibrated factor may take: efficiencies in (0, 1]; fixed costs any positive value."""


def table() -> dict[str, Any]:
    return load_table()["calibration"]


def _bounds(name: str) -> tuple[float, float]:
    for key, b in PHYSICAL.items():
        if key in name:
            return b
    return (1e-6, 1e5)


# --------------------------------------------------------------------------- reading timers


def read_timers(points: Iterable[MetricPoint], clock: Clock = "wall") -> dict[str, dict[int, float]]:
    """Per timer group, the seconds of each step (step -> seconds); derived groups included."""
    groups = table()["groups"]
    pats = {g["name"]: [re.compile(p) for p in g.get("raw_cpu" if clock == "cpu" else "raw", [])] for g in groups}
    first = {g["name"]: [re.compile(p) for p in g.get("raw_first", [])] if clock == "wall" else [] for g in groups}
    out: dict[str, dict[int, float]] = {g["name"]: {} for g in groups}
    for i, pt in enumerate(points):
        step = pt.step if pt.step is not None else i + 1
        for g in groups:
            name = g["name"]
            val = None
            # a timer that measures exactly the group's phases wins over a wider one the framework
            # also logs (veRL: generate_sequences inside gen; see the table's raw_first)
            hits = [v for k, v in pt.raw.items() if any(p.match(k) for p in first[name])]
            if hits:
                val = sum(hits)
            if val is None and clock == "wall":
                for m in g.get("metrics", []):
                    if m in pt.values:
                        val = pt.values[m]
                        break
            if val is None and pats[name]:
                hits = [v for k, v in pt.raw.items() if any(p.match(k) for p in pats[name])]
                if hits:
                    val = sum(hits)
            if val is not None and math.isfinite(val) and val >= 0:
                out[name][step] = out[name].get(step, 0.0) + val if name != "step" else val
    for g in groups:
        d = g.get("derive")
        if d and not out[g["name"]]:
            a, b = out.get(d["from"], {}), out.get(d["minus"], {})
            out[g["name"]] = {s: a[s] - b[s] for s in a if s in b and a[s] - b[s] > 0}
    return {k: v for k, v in out.items() if v}


def measured(timers: dict[str, dict[int, float]], statistic: Statistic = "median",
             warmup: int | None = None) -> dict[str, tuple[float, int]]:
    """(statistic over the steps after the warm-up, number of steps) per group."""
    w = table()["warmup_steps"] if warmup is None else warmup
    out = {}
    for name, per_step in timers.items():
        steps = sorted(per_step)
        vals = [per_step[s] for s in steps[w:]] if len(steps) > w else []
        if vals:
            out[name] = (statistics.median(vals) if statistic == "median" else min(vals), len(vals))
    return out


# --------------------------------------------------------------------------- predicting


def predicted(plan: Plan, factors: dict[str, float]) -> dict[str, float]:
    """The time model's seconds for every timer group of ``plan``."""
    st = predict_step(plan, factors)
    out: dict[str, float] = {}
    for g in table()["groups"]:
        if g["phases"] == ["*"]:
            out[g["name"]] = st.step_s
            continue
        hits = [p.seconds for p in st.phases if p.phase in g["phases"]]
        if hits:
            out[g["name"]] = sum(hits)
    return out


def _box(plan: Plan, key: str) -> tuple[float, float]:
    """Bounds of ``key`` in a fit: its physical bounds and, with the table's
    ``ranges_as_hard_bounds`` on a data-centre GPU, its published range as well."""
    plo, phi = _bounds(key)
    lo, hi = factor_ranges().get(key, (0.0, 0.0))
    if (not table().get("ranges_as_hard_bounds") or plan.hardware.gpu.strip().lower() == "cpu"
            or not (lo > 0 and hi > lo)):
        return plo, phi
    return max(lo, plo), min(hi, phi)


def _prior_sd(plan: Plan, key: str) -> float | None:
    """Log-scale prior SD of ``key``: its published range read as a 95% interval (4 SD wide); None
    (no prior) for a factor with no range. Off data-centre GPUs (a CPU run) the ranges do not apply: they are
    widened ``off_gpu_prior_widening``-fold, so the run alone sets the factors and the ranges'
    relative widths only decide which of several factors one timer moves most."""
    lo, hi = factor_ranges().get(key, (0.0, 0.0))
    if not (lo > 0 and hi > lo):
        return None
    sd = math.log(hi / lo) / 4
    return sd * float(table()["off_gpu_prior_widening"]) if plan.hardware.gpu.strip().lower() == "cpu" else sd


def _map(plan: Plan, f0: dict[str, float], free: list[str], targets: dict[str, float], sigma: float,
         ) -> dict[str, float]:
    """Maximum a posteriori log-factors: sum over timers of ((log predicted - log measured) / sigma)^2
    plus, per factor, ((log f - log published) / prior SD)^2, each factor inside its bounds
    (``_box``); scipy's trust-region reflective solver handles the bounds."""
    import numpy as np
    from scipy.optimize import least_squares

    box = [_box(plan, k) for k in free]
    lo = np.log([b[0] for b in box])
    hi = np.log([b[1] for b in box])
    th0 = np.log([f0[k] for k in free])
    start = np.clip(th0, lo + 1e-9, hi - 1e-9)
    sds = [_prior_sd(plan, k) for k in free]
    w = np.array([1.0 / sd if sd else 0.0 for sd in sds])
    sc = np.array([sd or 1.0 for sd in sds])
    groups = sorted(targets)
    logt = np.log([targets[g] for g in groups])

    def resid(th: Any) -> Any:
        p = predicted(plan, {**f0, **{k: math.exp(v) for k, v in zip(free, th)}})
        r = (np.log([max(p.get(g, 0.0), 1e-12) for g in groups]) - logt) / sigma
        return np.concatenate([r, w * (th - th0)])

    sol = least_squares(resid, start, bounds=(lo, hi), method="trf", diff_step=1e-3, x_scale=sc,
                        xtol=1e-10, ftol=1e-10, gtol=1e-10, max_nfev=200 * (len(free) + 1))
    return {**f0, **{k: math.exp(float(v)) for k, v in zip(free, sol.x)}}


def fit(plan: Plan, meas: dict[str, tuple[float, int]], base: dict[str, float] | None = None,
        ) -> tuple[dict[str, float], list[str]]:
    """Factors that bring ``plan``'s prediction towards ``meas`` (see the module docstring)."""
    tab = table()
    f = dict(base or default_factors())
    start = dict(f)
    notes: list[str] = []
    sigma = float(tab["model_error_log"])
    groups = [g for g in tab["groups"] if g["name"] in meas and g["factors"]]
    phase_groups = [g for g in groups if g["phases"] != ["*"]]
    step_group = next((g for g in groups if g["phases"] == ["*"]), None)
    pred0 = predicted(plan, f)
    informs: dict[str, list[str]] = {}
    for g in phase_groups:
        if g["name"] not in pred0:
            notes.append(f"{g['name']}: measured, but the model has no such phase for this plan; not fitted")
            continue
        informs[g["name"]] = [k for k in (factor_variant(plan, x) for x in g["factors"]) if k in f and f[k] > 0]
    if not informs and step_group is not None:
        # a step timer alone: it informs every phase's factors through the phases it contains
        keys = sorted({factor_variant(plan, k) for x in tab["groups"] if x["phases"] != ["*"] for k in x["factors"]})
        informs["step"] = [k for k in keys if k in f and f[k] > 0]
    free = sorted({k for ks in informs.values() for k in ks})
    if free:
        f = _map(plan, f, free, {g: meas[g][0] for g in informs}, sigma)
    if step_group is not None and "step" not in informs:
        # the whole step: step_overhead_s takes what the fitted phases leave unexplained
        key = step_group["factors"][0]
        target = meas["step"][0]
        gap = target - predicted(plan, {**f, key: 0.0})["step"]
        lo, hi = factor_ranges().get(key, (0.0, 0.0))
        if plan.hardware.gpu.strip().lower() == "cpu" or hi <= lo:
            val = max(gap, 0.0)
        else:
            # weighed (in seconds) against its published range like every other factor
            v_p, v_m = ((hi - lo) / 4) ** 2, (sigma * target) ** 2
            val = max((f[key] / v_p + gap / v_m) / (1 / v_p + 1 / v_m), 0.0)
            if table().get("ranges_as_hard_bounds"):
                val = min(max(val, lo), hi)
        f[key] = val
        if gap < 0:
            notes.append(f"step: the fitted phases alone take {target - gap:.3g} s, more than the measured "
                         f"{target:.3g} s (phases overlap in this run); step_overhead_s set to {f[key]:.3g}")
        elif f[key] < 0.9 * gap:
            notes.append(f"step: {gap:.3g} s of the measured step is not explained by the phases; step_overhead_s "
                         f"moved to {f[key]:.3g} s only (published range [{lo:g}, {hi:g}] s)")
        free.append(key)
    hard = bool(tab.get("ranges_as_hard_bounds")) and plan.hardware.gpu.strip().lower() != "cpu"
    for key in free:
        lo, hi = factor_ranges().get(key, (None, None))
        if lo is None or hi <= lo:
            continue
        at_end = lo > 0 and min(abs(f[key] / lo - 1), abs(f[key] / hi - 1)) < 1e-3
        if hard and at_end and abs(f[key] - start[key]) > 1e-3 * max(start[key], 1e-9):
            notes.append(f"{key} = {f[key]:.4g} stops at the end of its published range [{lo:g}, {hi:g}]: the run "
                         "asks for more than the range allows on this hardware, so what is left is the model's miss")
        elif not lo <= f[key] <= hi:
            notes.append(f"{key} = {f[key]:.4g}, outside the published range [{lo:g}, {hi:g}] for data-centre "
                         "GPUs: this cluster behaves differently from the published ones")
    return f, notes


# --------------------------------------------------------------------------- memory


MEMORY_METRICS = ("max_memory_gb", "max_memory_reserved_gb")


def read_memory(points: Iterable[MetricPoint]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for pt in points:
        for m in MEMORY_METRICS:
            v = pt.values.get(m)
            if v is not None and math.isfinite(v) and v > 0:
                out.setdefault(m, []).append(v)
    return out


def _memory_predicted(plan: Plan) -> tuple[float, float, float, float] | None:
    """(allocated, reserved, fragmentation, capacity) GiB of the actor update phase."""
    from advisor.memory import budget_memory

    try:
        budget = budget_memory(plan)
    except AdvisorError:
        return None
    ph = next((p for p in budget.phases if p.phase == "actor_update"), None)
    if ph is None:
        return None
    gap_terms = {"fragmentation", "allocator_reserve"}
    outside = {"cuda_context", "nccl"}
    alloc = sum(t.gib for t in ph.terms if t.name not in gap_terms | outside)
    frag = sum(t.gib for t in ph.terms if t.name == "fragmentation")
    reserve = sum(t.gib for t in ph.terms if t.name == "allocator_reserve")
    cap = budget.pools[0].capacity_gib if budget.pools else 0.0
    return alloc, alloc + frag + reserve, frag, cap


def fit_memory(plan: Plan, mem: dict[str, list[float]], min_steps: int) -> tuple[dict[str, float], list[PhaseCheck], list[str]]:
    """``allocator_reserve_fraction`` from the measured reserved-minus-allocated gap."""
    if not all(len(mem.get(m, [])) >= min_steps for m in MEMORY_METRICS):
        return {}, [], ([f"memory: {min_steps}+ steps of perf/max_memory_allocated_gb and perf/max_memory_reserved_gb "
                         "are needed to fit the allocator terms; memory not calibrated"] if mem else [])
    # veRL divides by 1024**3 (verl/workers/engine_workers.py): the "_gb" values are GiB already
    alloc_m = max(mem["max_memory_gb"])
    res_m = max(mem["max_memory_reserved_gb"])
    before = _memory_predicted(plan)
    if before is None:
        return {}, [], ["memory: budget_memory cannot budget this plan's actor update; memory not calibrated"]
    alloc_p, res_p, frag, cap = before
    from advisor.constants import const

    arf = min(max((res_m - alloc_m - frag) / cap, 0.0), 0.3) if cap > 0 else const("allocator_reserve_fraction")
    fitted = {"allocator_reserve_fraction": round(arf, 5)}
    with applied(Profile(name="fit", memory_constants=fitted)):
        after = _memory_predicted(plan)
    n = len(mem["max_memory_gb"])
    checks = [PhaseCheck(phase="actor_update allocated", unit="GiB", measured=alloc_m, before=alloc_p,
                         after=after[0] if after else alloc_p, points=n),
              PhaseCheck(phase="actor_update reserved", unit="GiB", measured=res_m, before=res_p,
                         after=after[1] if after else res_p, points=n)]
    return fitted, checks, []


# --------------------------------------------------------------------------- the whole calibration


def _with_measured_lengths(plan: Plan, points: list[MetricPoint], warm: int) -> tuple[Plan, list[str]]:
    """The run's own mean response length in place of the plan's assumption: the timers measured
    that run, and a length error must not be absorbed into the efficiency factors."""
    vals = [p.values["response_length_mean"] for p in points[warm:] if "response_length_mean" in p.values]
    vals = [v for v in vals if math.isfinite(v) and v > 0]
    if not vals:
        return plan, []
    mean = max(1, min(round(statistics.median(vals)), plan.data.max_response_length))
    data = plan.data.model_copy(update={"mean_response_length": mean})
    return plan.model_copy(update={"data": data}), [f"mean response length {mean} tokens taken from the run's log"]


def calibrate_points(plan: Plan, points: list[MetricPoint], name: str, source: str = "", *,
                     clock: Clock = "wall", statistic: Statistic | None = None, created: str = "",
                     min_steps: int | None = None, warmup: int | None = None) -> Profile:
    """A profile fitted on the metric ``points`` of one run of ``plan``.

    ``min_steps``/``warmup`` default to the table's; only a caller holding published run means
    (one line that already averages a whole run) should lower them."""
    tab = table()
    min_steps = int(tab["min_steps"] if min_steps is None else min_steps)
    warm = int(tab["warmup_steps"] if warmup is None else warmup)
    stat = statistic or tab["statistic"]
    plan, len_note = _with_measured_lengths(plan, points, warm)
    timers = read_timers(points, clock)
    meas = measured(timers, stat, warm)
    usable = {k: v for k, v in meas.items() if v[1] >= min_steps}
    model_groups = [g["name"] for g in tab["groups"] if g["factors"]]
    if not any(k in usable for k in model_groups):
        logged = max((len(v) for v in timers.values()), default=0)
        seen = ", ".join(f"{k}: {v[1]} steps" for k, v in meas.items()) or (
            f"{logged} logged step(s) with timers, none left after the warm-up" if logged
            else "no per-phase timers or step times")
        raise AdvisorError(f"too few points to calibrate: need at least {min_steps} steps with timers after the "
                           f"{warm} warm-up step(s); found {seen}", field="source", value=source,
                           allowed=f"a run with >= {min_steps + warm} logged steps (veRL timing_s/*, "
                                   "OpenRLHF timing/*, TRL step_time, NeMo-RL timers)")
    with applied(None):
        published = default_factors()
    before = predicted(plan, published)
    fitted, notes = fit(plan, usable, published)
    after = predicted(plan, fitted)
    checks = [PhaseCheck(phase=g, measured=usable[g][0], before=before[g], after=after[g], points=usable[g][1])
              for g in [x["name"] for x in tab["groups"]] if g in usable and g in before]
    for g, (val, n) in meas.items():
        if n < min_steps and g in model_groups:
            notes.append(f"{g}: only {n} steps after warm-up (< {min_steps}); not fitted")
    mem_fit, mem_checks, mem_notes = fit_memory(plan, read_memory(points), min_steps)
    band = None
    steps = sorted(timers.get("step", {}).items())[warm:]
    if len(steps) >= min_steps:
        vals = sorted(v for _, v in steps)
        lo, hi = vals[int(0.16 * (len(vals) - 1))], vals[math.ceil(0.84 * (len(vals) - 1))]
        band = round(max((hi - lo) / 2 / statistics.median(vals), 0.05), 4)
    changed = {k: round(v, 6) for k, v in fitted.items() if abs(v - published.get(k, v)) > 1e-12 * max(1.0, abs(v))}
    return Profile(name=name, source=source, created=created, framework=plan.framework.value, gpu=plan.hardware.gpu,
                   time_factors=changed, memory_constants=mem_fit, checks=checks + mem_checks, band=band,
                   notes=notes + mem_notes + len_note + [f"statistic: {stat} over steps after the warm-up; clock: {clock}"])
