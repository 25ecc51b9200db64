"""Metric rules: each ``check`` named in advisor/data/diagnosis_rules.yaml, over the run's series.

A check returns ``None`` when the metrics it needs are absent (reported as "skipped"), an empty
list when it passed, or hits (severity, summary, evidence, extra cause). Thresholds come from the
table's ``params``; the trend helpers are robust to noise (advisor/diagnosis/trends.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import median
from typing import Any, Callable

from advisor.diagnosis.samples import SampleFormat
from advisor.diagnosis.model import Evidence, LogLine
from advisor.diagnosis.trends import levels, spikes, trend
from advisor.metrics.store import Series, SeriesStore


@dataclass
class RuleHit:
    severity: str
    summary: str
    evidence: list[Evidence] = field(default_factory=list)
    cause: str = ""
    category: str | None = None  # overrides the rule's category (a sub-case with its own name)
    confidence: float | None = None  # None: derived from the number of points behind the evidence


@dataclass
class RuleContext:
    store: SeriesStore
    framework: str | None = None
    max_response_length: int | None = None
    # round 31: the cap as the pasted input states it (engine.py _TEXT_CAP), read only by the clip-ratio checks: a
    # multi-turn run's response_length counts tool observations, so it is no cap for the length-near-cap checks
    stated_max_response_length: int | None = None
    on_policy: bool | None = None
    samples: SampleFormat | None = None  # printed prompts/completions (advisor/diagnosis/samples.py)

    @property
    def clip_cap(self) -> int | None:
        """The cap the clip-ratio checks compare response_length/max with: the Plan's, else the one the input states."""
        return self.max_response_length or self.stated_max_response_length

    def series(self, name: str) -> Series | None:
        s = self.store.get(name)
        return s if s is not None and s.finite_count > 0 else None

    def values(self, name: str) -> list[float]:
        s = self.series(name)
        return s.buckets()[1] if s is not None else []

    def evidence(self, name: str, note: str = "", values: list[float] | None = None,
                 steps: list[int] | None = None) -> Evidence:
        s = self.store.get(name)
        if s is None:
            return Evidence(kind="metric", metric=name, note=note)
        means = s.buckets()[1]
        vals = values if values is not None else _sample(means)
        at = list(steps) if steps else []
        steps_all = s.buckets()[0]
        return Evidence(kind="metric", metric=name, key=s.key,
                        step_first=steps_all[0] if steps_all else s.first_step,
                        step_last=s.last_step, values=[_round(v) for v in vals], steps=at, note=note)

    def components(self) -> list[str]:
        return [n for n in self.store.names() if n.startswith("reward_component:")]


def _round(v: float) -> float:
    if not math.isfinite(v) or v == 0:
        return v
    return float(f"{v:.6g}")


def _sample(values: list[float], k: int = 8) -> list[float]:
    if len(values) <= k:
        return list(values)
    idx = [round(i * (len(values) - 1) / (k - 1)) for i in range(k)]
    return [values[i] for i in idx]


def _fmt(v: float) -> str:
    return f"{v:.4g}"


# ----------------------------------------------------------------------------- checks


def check_nonfinite(ctx: RuleContext, p: dict[str, Any]) -> list[RuleHit] | None:
    seen = False
    hits = []
    for name in p["metrics"]:
        s = ctx.store.get(name)
        if s is None:
            continue
        seen = True
        if s.nonfinite:
            ev = ctx.evidence(name, note=f"{s.nonfinite} non-finite value(s), first at step "
                                        f"{s.first_nonfinite_step} (line {s.first_nonfinite_line})")
            before = [v for v in s.buckets()[2][-5:]]
            if before:
                ev.values = [_round(v) for v in before]
            hits.append(RuleHit("error", f"{s.key or name} became NaN/Inf at step {s.first_nonfinite_step} "
                                         f"({s.nonfinite} of {s.count} logged values).", [ev]))
    if not seen:
        return None
    if len(hits) > 1:  # one finding, all metrics as evidence
        first = hits[0]
        for h in hits[1:]:
            first.evidence.extend(h.evidence)
        hits = [first]
    return hits


def check_entropy_collapse(ctx: RuleContext, p: dict[str, Any]) -> list[RuleHit] | None:
    vals = ctx.values("entropy")
    if not vals:
        return None
    if len(vals) < p["min_points"]:
        if len(vals) == 2 and vals[1] < p["floor"] and vals[0] > 2 * p["floor"]:  # two points: the floor only
            return [RuleHit("error", f"Policy entropy fell from {_fmt(vals[0])} to {_fmt(vals[1])} "
                                     f"(< {p['floor']}).", [ctx.evidence("entropy")])]
        return []
    start, end = levels(vals)
    if start <= 0:
        return []
    drop = 1.0 - end / start
    tr = trend(vals)
    if (drop >= p["drop"] and tr.direction != "up") or (end < p["floor"] and start > 2 * p["floor"]):
        sev = "error"
    elif drop >= p["warn_drop"] and tr.direction == "down":
        sev = "warning"
    else:
        return _entropy_fall_from_peak(ctx, vals, end, p)
    ev = [ctx.evidence("entropy", note=f"trend {tr.direction}, n={tr.n}")]
    rose = _reward_rose(ctx, p) if sev == "error" else None
    if rose is not None:  # the entropy was spent on reward: the trade-off of a learning run, not a collapse yet
        r0, r1 = rose
        ev.append(ctx.evidence("reward_mean", note=f"start {_fmt(r0)} -> recent {_fmt(r1)}, rising, not falling at the end"))
        return [RuleHit("warning", f"Policy entropy fell {drop:.0%} (from {_fmt(start)} to {_fmt(end)}) while the reward "
                                   f"rose ({_fmt(r0)} -> {_fmt(r1)}): the usual entropy-for-reward trade-off; a collapse "
                                   "if the reward stops rising below its goal with the entropy this low.", ev)]
    return [RuleHit(sev, f"Policy entropy fell {drop:.0%} (from {_fmt(start)} to {_fmt(end)}).", ev)]


def _reward_rose(ctx: RuleContext, p: dict[str, Any]) -> tuple[float, float] | None:
    """(start, recent) of the reward when it rose over the run (a significant up trend, the recent level at least
    ``reward_rise`` of the reward's range above its start) and does not fall over the last third; else None.
    Cui et al. (arXiv 2505.22617) fit R = -a*exp(H) + b on healthy runs: reward is bought with entropy, so an
    entropy fall while the reward climbs is how a run learns (veRL's published GSM8K baselines, docs/algo/baseline.md,
    fall 87-94% in entropy as the score rises). What makes it a collapse is the reward stalling or falling with the
    entropy spent, which the error keeps."""
    rew = ctx.values("reward_mean")
    if len(rew) < p["min_points"]:
        return None
    r0, r1 = levels(rew)
    span = max(rew) - min(rew)
    if span <= 0 or r1 - r0 < p["reward_rise"] * span or trend(rew).direction != "up":
        return None
    tail = rew[-max(3, len(rew) // 3):]
    if trend(tail).direction == "down":
        return None
    return r0, r1


def _entropy_fall_from_peak(ctx: RuleContext, vals: list[float], end: float, p: dict[str, Any]) -> list[RuleHit]:
    """Entropy that first rose (a warm-up, clip-higher, a temperature change) and then collapsed: the fall is
    measured from the level it fell from, the highest value before the last third, not from the initial policy
    (round 14: a report's step table 0.60 -> 0.73 -> 0.23). A warning at the rule's warn_drop, and only when
    every point from the peak on falls (n < 6 after the peak) or the Mann-Kendall trend from the peak is down: one
    high point followed by noise is not a collapse."""
    head = vals[:len(vals) - max(1, len(vals) // 3)]
    if not head:
        return []
    peak_at = max(range(len(head)), key=head.__getitem__)
    peak, after = head[peak_at], vals[peak_at:]
    if peak <= 0 or len(after) < 2 or 1.0 - end / peak < p["warn_drop"]:
        return []
    falling = all(b < a for a, b in zip(after, after[1:])) if len(after) < 6 else trend(after).direction == "down"
    if not falling:
        return []
    steps = ctx.series("entropy").buckets()[0] if ctx.series("entropy") is not None else []
    at = f" at step {steps[peak_at]}" if peak_at < len(steps) else ""
    return [RuleHit("warning", f"Policy entropy fell {1.0 - end / peak:.0%} from its peak ({_fmt(peak)}{at}) to "
                               f"{_fmt(end)}.", [ctx.evidence("entropy", note=f"fall from the peak, n={len(after)}")])]


def check_entropy_explosion(ctx: RuleContext, p: dict[str, Any]) -> list[RuleHit] | None:
    vals = ctx.values("entropy")
    rew = ctx.values("reward_mean")
    if len(vals) < p["min_points"] or len(rew) < p["min_points"]:
        return None
    start, end = levels(vals)
    if end > p["level"] and start > 0 and end / start > p["rise"] and trend(rew).direction == "down":
        return [RuleHit("warning", f"Entropy rose from {_fmt(start)} to {_fmt(end)} while the reward fell.",
                        [ctx.evidence("entropy"), ctx.evidence("reward_mean")])]
    return []


def check_reward_shortcut(ctx: RuleContext, p: dict[str, Any]) -> list[RuleHit] | None:
    rew = ctx.values("reward_mean")
    length = ctx.values("response_length_mean")
    if len(rew) < p["min_points"] or len(length) < p["min_points"]:
        return None
    r0, r1 = levels(rew)
    l0, l1 = levels(length)
    if r1 < r0:
        return []  # the reward fell: not a shortcut that pays
    lost = []
    for name in ctx.components():
        c = ctx.values(name)
        if len(c) >= p["min_points"]:
            c0, c1 = levels(c)
            if c0 >= p["component_from"] and c1 <= p["component_to"]:
                lost.append((name, c0, c1))
    length_collapse = l0 > 0 and l1 / l0 <= p["length_ratio"]
    if not lost and not length_collapse:
        return []
    if not lost and not (length_collapse and r1 > r0):
        return []
    ev = [ctx.evidence("reward_mean", note=f"start {_fmt(r0)} -> recent {_fmt(r1)}"),
          ctx.evidence("response_length_mean", note=f"start {_fmt(l0)} -> recent {_fmt(l1)}")]
    parts = []
    for name, c0, c1 in lost:
        ev.append(ctx.evidence(name, note=f"{_fmt(c0)} -> {_fmt(c1)}"))
        parts.append(f"{name.split(':', 1)[1]} {_fmt(c0)} -> {_fmt(c1)}")
    sev = "error" if lost and (length_collapse or r1 > r0) else "warning"
    what = f"reward components lost: {', '.join(parts)}; " if parts else ""
    return [RuleHit(sev, f"Reward held or rose ({_fmt(r0)} -> {_fmt(r1)}) while {what}mean length went "
                         f"{_fmt(l0)} -> {_fmt(l1)} tokens.", ev)]


def check_component_divergence(ctx: RuleContext, p: dict[str, Any]) -> list[RuleHit] | None:
    comps = {n: ctx.values(n) for n in ctx.components()}
    comps = {n: v for n, v in comps.items() if len(v) >= p["min_points"]}
    if len(comps) < 2:
        return None
    names = tuple(p["objective_names"])
    dirs = {n: trend(v).direction for n, v in comps.items()}

    def is_objective(name: str) -> bool:
        words = name.split(":", 1)[1].lower().replace("-", "_").split("_")
        return any(w in names for w in words)

    falling = [n for n in comps if is_objective(n) and dirs[n] == "down"]
    rising = [n for n in comps if not is_objective(n) and dirs[n] == "up"]
    total = ctx.values("reward_mean")
    if not falling or not rising or (len(total) >= p["min_points"] and trend(total).direction == "down"):
        return []
    ev = [ctx.evidence(n, note=f"trend {dirs[n]}") for n in falling + rising]
    desc = ", ".join(f"{n.split(':', 1)[1]} {_fmt(levels(comps[n])[0])} -> {_fmt(levels(comps[n])[1])}"
                     for n in falling + rising)
    return [RuleHit("warning", f"The task reward falls while another component rises ({desc}).", ev)]


def check_reward_hacking(ctx: RuleContext, p: dict[str, Any]) -> list[RuleHit] | None:
    rew = ctx.values("reward_mean")
    if len(rew) < p["min_points"]:
        return None
    tr = trend(rew)
    if tr.direction != "up":
        return []
    ev = [ctx.evidence("reward_mean", note=f"rising (p={tr.p:.2g})")]
    signals = []
    kl = ctx.values("kl")
    if len(kl) >= p["min_points"]:
        k0, k1 = levels(kl)
        if trend(kl).direction == "up" and k1 > p["kl_level"]:
            signals.append(f"KL {_fmt(k0)} -> {_fmt(k1)}")
            ev.append(ctx.evidence("kl"))
    length = ctx.values("response_length_mean")
    if len(length) >= p["min_points"]:
        l0, l1 = levels(length)
        if l0 > 0 and l1 / l0 >= p["length_ratio"] and trend(length).direction == "up":
            signals.append(f"length {_fmt(l0)} -> {_fmt(l1)}")
            ev.append(ctx.evidence("response_length_mean"))
    if not signals:
        return []
    evals = [n for n in ctx.store.names() if n.startswith("eval_reward")]
    eval_dirs = [trend(ctx.values(n)).direction for n in evals if len(ctx.values(n)) >= 4]
    if eval_dirs and all(d == "up" for d in eval_dirs):
        return []
    if eval_dirs and any(d == "down" for d in eval_dirs):
        sev, tail = "error", "and the held-out score falls"
    elif eval_dirs:
        sev, tail = "warning", "and the held-out score is flat"
    else:
        sev, tail = "info", "(no held-out score logged: inspect samples)"
    for n in evals[:2]:
        ev.append(ctx.evidence(n))
    return [RuleHit(sev, f"Reward rises together with {' and '.join(signals)} {tail}.", ev)]


def check_kl_explosion(ctx: RuleContext, p: dict[str, Any]) -> list[RuleHit] | None:
    seen = False
    hits: list[RuleHit] = []
    for name, floor in (("kl", p["kl_floor"]), ("ppo_kl", p["ppo_kl_floor"])):
        s = ctx.series(name)
        if s is None:
            continue
        seen = True
        steps, means, maxs, _ = s.buckets()
        idx = spikes([abs(v) for v in maxs], factor=p["factor"], floor=floor, min_prior=p["min_prior"],
                     nonzero_prior=bool(p.get("nonzero_prior", False)))
        _, recent = levels(means)
        if idx:
            # round 37: one spike that fell back at once - every later value below a factor-th of it, the recent level
            # under kl_level - is a warning, as one isolated grad-norm bump is (grad_spikes): the k3 estimator's heavy
            # tail on a few low-probability tokens lifts one step's mean (Schulman, "Approximating KL divergence",
            # joschu.net/blog/kl-approx.html); an explosion stays up
            # (the other indices may be the KL's rise from 0 to its working level, which stays: a point that does not
            # stand a factor above the values after it is such a rise, not a second spike)
            vals = [abs(v) for v in maxs]
            standing = [i for i in idx if i + 1 < len(vals) and vals[i] > p["factor"] * median(vals[i + 1:i + 21])]
            after = vals[standing[0] + 1:] if len(standing) == 1 else []
            isolated = bool(after) and idx[-1] + 1 < len(vals) \
                and max(after) * p["factor"] <= vals[standing[0]] and recent <= p["kl_level"]
            tail = " once and fell back at the next log" if isolated else ""
            hits.append(RuleHit("warning" if isolated else "error",
                                f"{s.key} spiked {len(idx)} time(s) to >{p['factor']:g}x its running "
                                f"median (max {_fmt(max(maxs[i] for i in idx))} at step "
                                f"{steps[standing[0] if isolated else idx[0]]}){tail}.",
                                [ctx.evidence(name, values=[maxs[i] for i in idx[:8]], steps=[steps[i] for i in idx[:8]],
                                              note=f"spike steps {[steps[i] for i in idx[:8]]}")]))
        elif recent > p["kl_level"] or max(maxs) > 100 * p["kl_level"]:
            what = "Per-token KL to the reference" if name == "kl" else "KL between old and new policy (ppo_kl)"
            hits.append(RuleHit("error", f"{what} is {_fmt(recent)} (max {_fmt(max(maxs))}; > {p['kl_level']:g}).",
                                [ctx.evidence(name)]))
    s = ctx.series("ratio_mean")
    if s is not None:
        seen = True
        vals = s.buckets()[1]
        bad = [v for v in vals if v < p["ratio_low"] or v > p["ratio_high"]]
        if bad:
            hits.append(RuleHit("error", f"PPO ratio mean left [{p['ratio_low']}, {p['ratio_high']}] "
                                         f"({len(bad)} logs, e.g. {_fmt(bad[0])}).", [ctx.evidence("ratio_mean")]))
    if not seen:
        return None
    if len(hits) > 1:
        for h in hits[1:]:
            hits[0].evidence.extend(h.evidence)
        hits = hits[:1]
    return hits


def check_kl_drift(ctx: RuleContext, p: dict[str, Any]) -> list[RuleHit] | None:
    rew = ctx.values("reward_mean")
    for name, level in (("kl_seq", p["kl_seq_level"]), ("kl", p["kl_level"])):
        kl = ctx.values(name)
        if len(kl) < p["min_points"] or len(rew) < p["min_points"] - 1:
            continue
        tk = trend(kl)
        k0, k1 = levels(kl)
        r0, r1 = levels(rew)
        if tk.direction == "up" and k1 > level and r1 <= r0:
            return [RuleHit("warning", f"{ctx.series(name).key} rises {_fmt(k0)} -> {_fmt(k1)} while the reward "
                                       f"goes {_fmt(r0)} -> {_fmt(r1)}.",
                            [ctx.evidence(name), ctx.evidence("reward_mean")])]
        return []
    return None


def check_truncation(ctx: RuleContext, p: dict[str, Any]) -> list[RuleHit] | None:
    hits: list[RuleHit] = []
    seen = False
    clip = ctx.values("response_clip_ratio")
    mx = ctx.values("response_length_max")
    cap = ctx.clip_cap
    if clip and cap and mx and max(mx) < cap:
        clip = []  # round 31: no response reached the configured cap, so the ratio is not truncation (clip_ratio_artifact)
    if clip:
        seen = True
        _, recent = levels(clip)
        if recent >= p["error"]:
            hits.append(RuleHit("error", f"{recent:.0%} of responses are cut at the length cap (recent median).",
                                [ctx.evidence("response_clip_ratio")]))
        elif recent >= p["warn"]:
            hits.append(RuleHit("warning", f"{recent:.1%} of responses are cut at the length cap (> "
                                           f"{p['warn']:.0%}).", [ctx.evidence("response_clip_ratio")]))
    eos = ctx.values("num_eos_tokens")
    if eos:
        seen = True
        if len(eos) >= 2 and max(eos) == 0:
            hits.append(RuleHit("error", f"No response ended with EOS in any of {len(eos)} logs "
                                         "(val/num_eos_tokens = 0): every completion is truncated.",
                                [ctx.evidence("num_eos_tokens")]))
    cap = ctx.max_response_length
    mean = ctx.values("response_length_mean")
    if cap and mean:
        seen = True
        _, recent = levels(mean)
        if recent >= p["cap_mean_fraction"] * cap:
            hits.append(RuleHit("error", f"Mean response length {_fmt(recent)} is at the cap "
                                         f"max_response_length={cap}.", [ctx.evidence("response_length_mean")]))
    if not seen:
        return None
    if len(hits) > 1:
        hits.sort(key=lambda h: h.severity != "error")
        for h in hits[1:]:
            hits[0].evidence.extend(h.evidence)
        hits = hits[:1]
    return hits


def check_length_explosion(ctx: RuleContext, p: dict[str, Any]) -> list[RuleHit] | None:
    length = ctx.values("response_length_mean")
    if len(length) < p["min_points"]:
        return None
    l0, l1 = levels(length)
    if l0 <= 0 or l1 / l0 < p["ratio"] or trend(length).direction != "up":
        return []
    clip = ctx.values("response_clip_ratio")
    near_cap = bool(clip) and levels(clip)[1] >= p["clip_level"]
    if ctx.max_response_length:
        near_cap = near_cap or l1 >= 0.7 * ctx.max_response_length
    if not near_cap:
        return []
    return [RuleHit("warning", f"Mean response length grew {l1 / l0:.1f}x ({_fmt(l0)} -> {_fmt(l1)}) into the cap.",
                    [ctx.evidence("response_length_mean")] + ([ctx.evidence("response_clip_ratio")] if clip else []))]


def check_zero_variance(ctx: RuleContext, p: dict[str, Any]) -> list[RuleHit] | None:
    eps = p["eps"]
    seen = False
    hits = []
    amax, amin = ctx.series("advantages_max"), ctx.series("advantages_min")
    rmax, rmin = ctx.series("reward_max"), ctx.series("reward_min")
    if amax and amin and rmax and rmin:
        seen = True
        a_hi, a_lo = amax.buckets()[2], amin.buckets()[3]
        r_hi, r_lo = rmax.buckets()[2], rmin.buckets()[3]
        n = min(len(a_hi), len(a_lo), len(r_hi), len(r_lo))
        dead = [i for i in range(n) if abs(a_hi[i]) < eps and abs(a_lo[i]) < eps and r_hi[i] - r_lo[i] > eps]
        if dead and len(dead) >= max(1, n // 2):
            hits.append(RuleHit("error", f"Advantages are exactly 0 (max = min = 0) on {len(dead)} of {n} logs although "
                                         "rewards in the batch differ — every group is uniform or each sample is its own "
                                         "group.", [ctx.evidence("advantages_max"), ctx.evidence("reward_max"),
                                                    ctx.evidence("reward_min")],
                                cause="group size 1 (rollout.n = 1) or a broken uid/index grouping"))
    frac = ctx.values("frac_reward_zero_std")
    grad = ctx.values("grad_norm")
    if frac:
        seen = True
        _, recent = levels(frac)
        if len(frac) < p["short_log"] and min(frac) >= 1.0 and grad and max(abs(g) for g in grad) == 0.0:
            # exact evidence needs no trend: every group uniform and no gradient at every logged step
            hits.append(RuleHit("error", f"Every prompt group has identical rewards (frac_reward_zero_std = 1) and "
                                         f"grad_norm is 0 in all {len(frac)} logged step(s): no learning signal.",
                                [ctx.evidence("frac_reward_zero_std"), ctx.evidence("grad_norm")], confidence=0.9))
        elif len(frac) >= 2 and recent >= p["frac_error"]:
            hits.append(RuleHit("error", f"{recent:.0%} of prompt groups have identical rewards (recent median).",
                                [ctx.evidence("frac_reward_zero_std")]))
        elif len(frac) >= 2 and recent >= p["frac_warn"]:
            hits.append(RuleHit("warning", f"{recent:.0%} of prompt groups have identical rewards (recent median).",
                                [ctx.evidence("frac_reward_zero_std")]))
    std = ctx.values("reward_std")
    if not hits and not frac and std and len(std) < p["short_log"] and max(abs(v) for v in std) == 0.0 \
            and grad and max(abs(g) for g in grad) == 0.0:
        seen = True  # TRL's reward_std is over the whole batch: 0 means every group is uniform
        hits.append(RuleHit("error", f"reward_std is 0 and grad_norm is 0 in all {len(std)} logged step(s): every "
                                     "sample got the same reward, so every advantage is 0.",
                            [ctx.evidence("reward_std"), ctx.evidence("grad_norm")], confidence=0.85))
    if not seen:
        return None
    return hits[:1]


def check_reward_constant(ctx: RuleContext, p: dict[str, Any]) -> list[RuleHit] | None:
    hits = _reward_constant(ctx, p)
    clip = ctx.values("response_clip_ratio")
    cut = levels(clip)[1] if hits and clip else 0.0
    if cut >= p["cut_share"]:
        # most responses end at the cap: an unfinished answer scores 0 under any verifier (response_truncation's error)
        for h in hits:
            h.severity = "warning"
            h.summary += f" Most responses are cut at the length cap (clip ratio {_fmt(cut)}): the " \
                         "truncation explains a constant reward."
            h.evidence.append(ctx.evidence("response_clip_ratio"))
    return hits


def _reward_constant(ctx: RuleContext, p: dict[str, Any]) -> list[RuleHit] | None:
    rmax, rmin = ctx.series("reward_max"), ctx.series("reward_min")
    length = ctx.values("response_length_mean")
    if length and levels(length)[1] < p["min_length"]:
        return []  # empty generations: not a reward problem
    if rmax and rmin:
        hi, lo = rmax.buckets()[2], rmin.buckets()[3]
        if rmax.nonfinite or rmin.nonfinite:
            return []
        n = min(len(hi), len(lo))
        if n and all(abs(hi[i] - lo[i]) < 1e-9 for i in range(n)) and max(hi) == min(lo):
            sev = "error" if n >= p["min_points_error"] else "warning"
            return [RuleHit(sev, f"Every sample got the same reward ({_fmt(hi[0])}) in all {n} logged step(s) "
                                 "while responses have normal length.",
                            [ctx.evidence("reward_max"), ctx.evidence("reward_min")]
                            + ([ctx.evidence("response_length_mean")] if length else []))]
        return []
    rew, std = ctx.values("reward_mean"), ctx.values("reward_std")
    if rew and std:
        if len(rew) >= 2 and max(abs(v) for v in std) < 1e-9 and max(rew) - min(rew) < 1e-9:
            sev = "error" if len(rew) >= p["min_points_error"] else "warning"
            return [RuleHit(sev, f"Reward is constant ({_fmt(rew[0])}) with zero spread in all {len(rew)} logs.",
                            [ctx.evidence("reward_mean"), ctx.evidence("reward_std")])]
        return []
    return None


def check_dpo_no_signal(ctx: RuleContext, p: dict[str, Any]) -> list[RuleHit] | None:
    loss = ctx.values("loss")
    margin = ctx.values("dpo_margin")
    lc, lr = ctx.values("logps_chosen"), ctx.values("logps_rejected")
    if loss and lc and lr:
        # exact evidence on any number of points: both sequence log-probs exactly 0 means no completion
        # token entered the sum (every label masked), and the loss then sits at ln 2
        dead = [i for i in range(min(len(loss), len(lc), len(lr)))
                if lc[i] == 0.0 and lr[i] == 0.0 and abs(loss[i] - math.log(2)) <= p["ln2_tol"]]
        if dead and len(dead) == min(len(loss), len(lc), len(lr)):
            return [RuleHit("error", f"DPO loss is ln 2 = 0.6931 with logps/chosen = logps/rejected = 0 exactly on "
                                     f"{len(dead)} log(s): no completion token enters the log-probabilities.",
                            [ctx.evidence("loss"), ctx.evidence("logps_chosen"), ctx.evidence("logps_rejected")],
                            cause="every completion token is masked out of the loss (prompt/completion split, "
                                  "truncation that drops the whole completion, or a label mask of -100 everywhere)",
                            confidence=0.9)]
    if len(loss) < p["min_points"] or not (margin or ctx.values("dpo_accuracy") or ctx.values("dpo_reward_chosen")):
        return None
    near = [v for v in loss if abs(v - math.log(2)) <= p["ln2_tol"]]
    if len(near) >= 0.8 * len(loss) and (not margin or max(abs(m) for m in margin) <= p["margin_eps"]):
        return [RuleHit("error", f"DPO loss sits at ln 2 = 0.6931 on {len(near)} of {len(loss)} logs"
                                 + (" and the reward margin is 0" if margin else "") + ": no update reaches the loss.",
                        [ctx.evidence("loss")] + ([ctx.evidence("dpo_margin")] if margin else []))]
    return []


def check_grad_zero(ctx: RuleContext, p: dict[str, Any]) -> list[RuleHit] | None:
    g = ctx.series("grad_norm")
    if g is not None and 0 < g.finite_count < p["min_points"]:
        # round 27, short logs: an exact zero gradient is unambiguous on one point when the same steps log
        # groups WITH reward variance (TRL frac_reward_zero_std < 1: those groups have non-zero advantages, so
        # a working backward pass gives a non-zero gradient). Zero-variance groups are then not the cause: the
        # update reaches no parameter (frozen weights, a sharded optimizer step that drops the gradients).
        zs = ctx.values("frac_reward_zero_std")
        if max(g.buckets()[2]) == 0.0 and zs and max(zs) < 1.0:
            kl = ctx.values("kl")
            ev = [ctx.evidence("grad_norm"), ctx.evidence("frac_reward_zero_std")] \
                + ([ctx.evidence("kl")] if kl and max(abs(v) for v in kl) == 0.0 else [])
            return [RuleHit("error", f"grad_norm is exactly 0 on all {g.finite_count} logged step(s) while "
                                     f"{1 - max(zs):.0%} or more of the prompt groups have reward variance: the "
                                     "update reaches no parameter.", ev,
                            cause="groups with reward variance give non-zero advantages, so a zero gradient means "
                                  "the backward pass or the optimizer does not reach the trained parameters",
                            confidence=0.7)]
    if g is None or g.finite_count < p["min_points"]:
        return None
    _, means, maxs, _ = g.buckets()
    zero_buckets = sum(1 for v in maxs if v == 0.0)
    share = zero_buckets / len(maxs)
    if share == 1.0:
        return [RuleHit("error", f"grad_norm is exactly 0 on all {g.finite_count} logged steps: nothing is trained.",
                        [ctx.evidence("grad_norm")])]
    if share >= p["share_warn"]:
        ev = [ctx.evidence("grad_norm", note=f"{share:.0%} of logs exactly 0")]
        return [RuleHit("warning", f"grad_norm is exactly 0 on {share:.0%} of logs (no signal on those steps).", ev,
                        cause="uniform reward groups or a collapsed, near-deterministic policy",
                        category="vanishing_gradient")]
    return []


def check_dpo_overopt(ctx: RuleContext, p: dict[str, Any]) -> list[RuleHit] | None:
    margin = ctx.series("dpo_margin")
    acc = ctx.series("dpo_accuracy")
    loss = ctx.series("loss")
    chosen, rejected = ctx.values("dpo_reward_chosen"), ctx.values("dpo_reward_rejected")
    if loss is None or (margin is None and not (chosen and rejected) and acc is None):
        return None
    ls = loss.buckets()[1]
    if margin is None and not (chosen and rejected):
        # round 36: a log of loss and accuracy only (LLaMA-Factory's trainer_log.jsonl): the sigmoid DPO loss
        # -log sigmoid(beta * margin) averaged over the batch is below loss_below only when every pair's scaled margin
        # is above -log(exp(loss_below) - 1) ~ 3, so loss < loss_below with accuracy 1.0 is saturation by itself
        ms = [math.inf] * len(ls)
    else:
        ms = margin.buckets()[1] if margin is not None else [c - r for c, r in zip(chosen, rejected)]
    accs = acc.buckets()[1] if acc else [1.0] * len(ms)
    n = min(len(ms), len(ls), len(accs))
    sat = [i for i in range(n) if ls[i] < p["loss_below"] and accs[i] >= p["acc_above"] and ms[i] > p["margin_above"]]
    if len(sat) < p["min_points"]:
        return []
    ev = [ctx.evidence("loss")]
    if margin is not None or (chosen and rejected):
        ev.append(ctx.evidence("dpo_margin" if margin is not None else "dpo_reward_rejected"))
    if acc:
        ev.append(ctx.evidence("dpo_accuracy"))
    cause = ""
    lr = ctx.values("lr")
    if lr and max(lr) > p["lr_high"]:
        cause = f"peak learning rate {max(lr):.2g} is above the usual DPO range (5e-7..5e-6)"
        ev.append(ctx.evidence("lr"))
    lc = ctx.values("logps_chosen")
    if len(lc) >= 3 and levels(lc)[1] < levels(lc)[0]:
        ev.append(ctx.evidence("logps_chosen", note="chosen log-probs fall too"))
    margins = (f", margins > {p['margin_above']:g} (max {_fmt(max(ms))})" if not math.isinf(max(ms))
               else " (no margins logged: a loss that low is a saturated sigmoid)")
    return [RuleHit("error", f"DPO saturated on {len(sat)} logs: loss < {p['loss_below']}, accuracy 1.0{margins}.", ev,
                    cause=cause)]


def check_grad_spikes(ctx: RuleContext, p: dict[str, Any]) -> list[RuleHit] | None:
    g = ctx.series("grad_norm")
    if g is None:
        return None
    steps, means, maxs, _ = g.buckets()
    idx = spikes(maxs, factor=p["factor"], floor=p["floor"], window=p["window"], min_prior=p["min_prior"])
    if not idx:
        return []
    # one isolated 10x bump happens in long healthy runs; repeated or huge spikes do not
    huge = spikes(maxs, factor=p["huge_factor"], floor=p["floor"], window=p["window"], min_prior=p["min_prior"])
    need = max(p["min_spikes"], g.count // 500)  # long runs: a rate, not a count
    sev = "warning" if len(idx) >= need or huge else "info"
    return [RuleHit(sev, f"grad_norm spiked {len(idx)} time(s) above {p['factor']:g}x its running median "
                               f"(max {_fmt(max(maxs[i] for i in idx))}).",
                    [ctx.evidence("grad_norm", values=[maxs[i] for i in idx[:8]], steps=[steps[i] for i in idx[:8]],
                                  note=f"spike steps {[steps[i] for i in idx[:8]]}")])]


def check_critic_divergence(ctx: RuleContext, p: dict[str, Any]) -> list[RuleHit] | None:
    vl = ctx.values("critic_value_loss")
    ev_ = ctx.values("critic_explained_var")
    cf = ctx.values("critic_vf_clipfrac")
    if not (vl or ev_ or cf):
        return None
    hits = []
    if len(vl) >= p["min_points"]:
        v0, v1 = levels(vl)
        if trend(vl).direction == "up" and v0 > 0 and v1 / v0 >= p["loss_ratio"]:
            hits.append(RuleHit("warning", f"Critic value loss keeps rising ({_fmt(v0)} -> {_fmt(v1)}).",
                                [ctx.evidence("critic_value_loss")]))
    if len(ev_) >= p["min_points"] and levels(ev_)[1] < p["ev_below"]:
        hits.append(RuleHit("warning", f"Critic explained variance stays negative ({_fmt(levels(ev_)[1])}).",
                            [ctx.evidence("critic_explained_var")]))
    if len(cf) >= p["min_points"] and levels(cf)[1] > p["clipfrac_above"]:
        hits.append(RuleHit("warning", f"{levels(cf)[1]:.0%} of value updates are clipped.",
                            [ctx.evidence("critic_vf_clipfrac")]))
    return hits[:1]


def check_logprob_mismatch(ctx: RuleContext, p: dict[str, Any]) -> list[RuleHit] | None:
    seen = False
    hits = []
    tme = ctx.values("token_mult_prob_error")
    if tme:
        seen = True
        _, recent = levels(tme)
        tr = trend(tme) if len(tme) >= p["min_points_trend"] else None
        if tr is not None and tr.direction == "up" and recent > 1.0:
            hits.append(RuleHit("error", f"token_mult_prob_error trends up (recent {_fmt(recent)}).",
                                [ctx.evidence("token_mult_prob_error")]))
        elif recent > p["tme_warn"]:
            hits.append(RuleHit("warning", f"token_mult_prob_error is {_fmt(recent)} (> {p['tme_warn']}).",
                                [ctx.evidence("token_mult_prob_error")]))
    diff = ctx.values("logprob_diff_mean")
    if diff:
        seen = True
        _, recent = levels(diff)
        tr = trend(diff) if len(diff) >= p["min_points_trend"] else None
        if recent > p["diff_warn"] or (tr is not None and tr.direction == "up" and tr.ratio > 2):
            hits.append(RuleHit("warning", f"Mean rollout-vs-trainer probability difference is {_fmt(recent)}"
                                           + (" and rising" if tr is not None and tr.direction == "up" else "") + ".",
                                [ctx.evidence("logprob_diff_mean")]))
    mkl = ctx.values("mismatch_kl")
    if mkl:
        seen = True
        _, recent = levels(mkl)
        if recent > p["mismatch_kl_warn"]:
            hits.append(RuleHit("warning", f"The rollout-vs-trainer KL (mismatch_kl) is {_fmt(recent)} "
                                           f"(> {p['mismatch_kl_warn']}; ~1e-3 when they agree).",
                                [ctx.evidence("mismatch_kl")]))
    if ctx.on_policy:
        clip, pkl = ctx.values("pg_clip_frac"), ctx.values("ppo_kl")
        if clip or pkl:
            seen = True
            c1 = levels(clip)[1] if clip else 0.0
            k1 = levels([abs(v) for v in pkl])[1] if pkl else 0.0
            if c1 > p["onpolicy_clip"] or k1 > p["onpolicy_kl"]:
                hits.append(RuleHit("warning", f"The run is on-policy (one PPO epoch, mini-batch = batch) yet "
                                               f"pg_clipfrac is {_fmt(c1)} and |ppo_kl| {_fmt(k1)}: old and new "
                                               "log-probs of the same weights differ.",
                                    [ctx.evidence(n) for n, v in (("pg_clip_frac", clip), ("ppo_kl", pkl)) if v],
                                    cause="different micro-batch sizes or kernels for the old-log-prob pass and the "
                                          "update change bf16 results (verl #6280)"))
    isr = ctx.values("is_ratio_mean")
    if isr:
        seen = True
        _, recent = levels(isr)
        if recent < p["is_low"] or recent > p["is_high"]:
            hits.append(RuleHit("warning", f"Mean importance-sampling ratio is {_fmt(recent)} (expected ~1).",
                                [ctx.evidence("is_ratio_mean")]))
    if not seen:
        return None
    return hits[:1]


def check_generation_bound(ctx: RuleContext, p: dict[str, Any]) -> list[RuleHit] | None:
    gen, step = ctx.series("timing_gen_s"), ctx.series("timing_step_s")
    if gen is None or step is None:
        return None
    g, s = gen.buckets()[1], step.buckets()[1]
    n = min(len(g), len(s))
    shares = [g[i] / s[i] for i in range(n) if s[i] > 0]
    if not shares:
        return None
    share = median(shares)
    if share <= p["share"]:
        return []
    ev = [ctx.evidence("timing_gen_s", note=f"{share:.0%} of step time"), ctx.evidence("timing_step_s")]
    tail = ""
    mx, mn = ctx.values("timing_gen_seq_max_s"), ctx.values("timing_gen_seq_mean_s")
    if mx and mn and mn[-1] > 0 and mx[-1] / mn[-1] > p["tail_ratio"]:
        tail = f"; slowest rollout {mx[-1] / mn[-1]:.2f}x the mean (long tail)"
        ev.append(ctx.evidence("timing_gen_seq_max_s"))
    return [RuleHit("warning", f"Generation takes {share:.0%} of each step ({_fmt(median(g))} of "
                               f"{_fmt(median(s))} s){tail}.", ev)]


def check_low_throughput(ctx: RuleContext, p: dict[str, Any]) -> list[RuleHit] | None:
    mfu = [v for v in ctx.values("mfu") if v > 0]
    tput = ctx.values("throughput_tokens_s")
    if not mfu and not tput:
        return None
    if mfu and median(mfu) < p["mfu_below"]:
        return [RuleHit("warning", f"MFU of the policy update is {median(mfu):.1%}.", [ctx.evidence("mfu")])]
    if tput and median(tput) < p["tokens_below"]:
        return [RuleHit("info", f"Throughput is {_fmt(median(tput))} tokens/s/GPU (reference ~2.9k for a small "
                                "model; large models are slower).", [ctx.evidence("throughput_tokens_s")])]
    return []


def check_agent_format(ctx: RuleContext, p: dict[str, Any]) -> list[RuleHit] | None:
    inv, val = ctx.values("invalid_action_ratio"), ctx.values("valid_action_ratio")
    if not inv and not val:
        return None
    if inv and levels(inv)[1] > p["invalid_above"]:
        return [RuleHit("error", f"{levels(inv)[1]:.0%} of agent actions are invalid (recent median over "
                                 f"{len(inv)} logs).", [ctx.evidence("invalid_action_ratio")]
                        + ([ctx.evidence("valid_action_ratio")] if val else []))]
    if val and levels(val)[1] < p["valid_below"]:
        return [RuleHit("error", f"Only {levels(val)[1]:.0%} of agent actions are valid.",
                        [ctx.evidence("valid_action_ratio")])]
    return []


def check_clip_ratio_artifact(ctx: RuleContext, p: dict[str, Any]) -> list[RuleHit] | None:
    clip = ctx.values("response_clip_ratio")
    mx = ctx.values("response_length_max")
    s = ctx.series("response_clip_ratio")
    if not clip or s is None or not s.key.startswith("response_length"):
        return None  # the caveat is about veRL's response_length/clip_ratio
    _, recent = levels(clip)
    cap = ctx.clip_cap
    if cap and mx:
        if max(mx) < cap and recent > 0:
            return [RuleHit("warning", f"response_length/clip_ratio is {recent:.1%} but no response reached "
                                       f"max_response_length={cap} (max {_fmt(max(mx))}): the metric is wrong on this "
                                       "veRL build.", [ctx.evidence("response_clip_ratio"),
                                                        ctx.evidence("response_length_max")])]
        return []
    if recent >= p["clip_level"]:
        return [RuleHit("info", f"Check response_length/clip_ratio ({recent:.1%}) against the configured "
                                "max_response_length before acting (known veRL metric bugs).",
                        [ctx.evidence("response_clip_ratio")] + ([ctx.evidence("response_length_max")] if mx else []))]
    return []


def check_sample_format(ctx: RuleContext, p: dict[str, Any]) -> list[RuleHit] | None:
    """Printed completions that hold none of the tag pairs the printed prompt asks for (samples.py)."""
    if ctx.samples is None or not ctx.samples.completions:
        return None
    got = ctx.samples.missing(p["min_samples"])
    if got is None:
        return []
    tags, completions = got
    asked = ", ".join(f"<{t}>...</{t}>" for t in tags)
    lines = [LogLine(line=n, text=c[:160]) for n, c in completions[:3]]
    return [RuleHit("warning", f"None of the {len(completions)} printed completions holds the {asked} the prompt asks "
                               "for: a format reward scores them all 0.",
                    [Evidence(kind="log", lines=lines, note=f"{len(completions)} completions, tags asked for: {asked}")],
                    confidence=0.6)]


CHECKS: dict[str, Callable[[RuleContext, dict[str, Any]], list[RuleHit] | None]] = {
    "nonfinite": check_nonfinite,
    "entropy_collapse": check_entropy_collapse,
    "entropy_explosion": check_entropy_explosion,
    "reward_shortcut": check_reward_shortcut,
    "reward_hacking": check_reward_hacking,
    "component_divergence": check_component_divergence,
    "kl_explosion": check_kl_explosion,
    "kl_drift": check_kl_drift,
    "truncation": check_truncation,
    "length_explosion": check_length_explosion,
    "zero_variance": check_zero_variance,
    "reward_constant": check_reward_constant,
    "dpo_no_signal": check_dpo_no_signal,
    "grad_zero": check_grad_zero,
    "dpo_overopt": check_dpo_overopt,
    "grad_spikes": check_grad_spikes,
    "critic_divergence": check_critic_divergence,
    "logprob_mismatch": check_logprob_mismatch,
    "generation_bound": check_generation_bound,
    "low_throughput": check_low_throughput,
    "agent_format": check_agent_format,
    "clip_ratio_artifact": check_clip_ratio_artifact,
    "sample_format": check_sample_format,
}
