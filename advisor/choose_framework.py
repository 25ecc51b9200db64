"""choose_framework: rank RLHF frameworks for a method, scale, accelerator and shop.

The knowledge is data (``advisor/data/framework_facts.yaml``): each framework's support for each
method in its current release (with the launch entry point and the release it was checked
against), scoring rules for scale, model size, accelerator family and ecosystem, and hard
exclusions. This module derives the facts, applies the table (``advisor.rulebook``), ranks, and
writes a "why not" for every framework that did not win.
"""

from __future__ import annotations

import functools
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from advisor import rulebook
from advisor.choose_method import model_spec_for
from advisor.errors import AdvisorError
from advisor.plan import (OFFLINE_METHODS, ONLINE_METHODS, Ecosystem, Framework, Hardware, Method,
                          ModelSpec, Plan)

FACTS = ("method", "on_policy", "offline", "task", "total_gpus", "nodes", "model_params_b", "model_is_moe",
         "accelerator_family", "ecosystem", "priority")

Support = Literal["full", "partial", "experimental", "none"]


# --------------------------------------------------------------------------- output models


class FrameworkChoice(BaseModel):
    framework: Framework
    label: str
    score: float
    support: Support = Field(description="How the release supports the method.")
    reasons: list[str] = Field(description="Support level and each rule that scored it, with points.")
    release_checked: str = Field(description="The release the support facts were checked against.")
    verified: bool = Field(description="False when the facts come from the seed guide, not a release.")
    entrypoint: str | None = Field(None, description="How the method is launched on this framework.")
    renderable: bool = Field(description="render_config can write this framework's launch config.")
    caveats: list[str] = Field(default_factory=list)
    rule_points: dict[str, float] = Field(default_factory=dict, description="Points per fired rule id.")


class WhyNot(BaseModel):
    framework: Framework
    reason: str


class FrameworkRecommendation(BaseModel):
    """choose_framework's answer: feasible frameworks best first, and why not each of the others."""

    method: Method
    best: Framework | None
    ranked: list[FrameworkChoice]
    why_not: list[WhyNot]
    facts: dict[str, Any] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)

    def to_text(self) -> str:
        lines = [f"Method: {self.method.value}"]
        if self.ranked:
            head = f"{'#':>2}  {'framework':<11} {'score':>5}  {'support':<12} {'render':<6} release checked"
            lines += ["", head, "-" * (len(head) + 30)]
            for i, c in enumerate(self.ranked, 1):
                lines.append(f"{i:>2}  {c.framework.value:<11} {c.score:>5g}  {c.support:<12} "
                             f"{'yes' if c.renderable else 'no':<6} {c.release_checked}")
            top = self.ranked[0]
            lines += ["", f"Recommended: {top.label}", f"  launch: {top.entrypoint or '(see docs)'}", "Why:"]
            lines += [f"  {r}" for r in top.reasons]
            if top.caveats:
                lines += ["Caveats:"] + [f"  - {c}" for c in top.caveats]
        else:
            lines.append("No framework supports this method with these constraints.")
        if self.why_not:
            lines += ["", "Why not the others:"]
            lines += [f"  {w.framework.value:<11} {w.reason}" for w in self.why_not]
        if self.notes:
            lines += ["", "Notes:"] + [f"  - {n}" for n in self.notes]
        return "\n".join(lines)


# --------------------------------------------------------------------------- the fact table


class _MethodSupport(BaseModel):
    support: Support
    entrypoint: str | None = None
    note: str | None = None


class _RenderRow(BaseModel):
    entry: str | None = None
    reason: str | None = None
    rationale: str | None = None
    source: str

    @model_validator(mode="after")
    def _one(self) -> "_RenderRow":
        if (self.entry is None) == (self.reason is None):
            raise ValueError("a render row has exactly one of entry (rendered) or reason (refused)")
        return self


class _FrameworkFacts(BaseModel):
    label: str
    release_checked: str
    verified: bool
    version: str | None = Field(None, description="The release render_config targets (renderable frameworks).")
    render: dict[Method, _RenderRow] = Field(default_factory=dict)
    accelerators: list[Literal["cuda", "rocm", "tpu"]]
    summary: str
    methods: dict[Method, _MethodSupport]
    ecosystem_notes: dict[str, str] = Field(default_factory=dict)
    source: str

    @property
    def renderable(self) -> bool:
        """render_config writes this framework's launch config (it has render rows)."""
        return bool(self.render)


_Rule = rulebook.ScoreRule[Framework]


class _Exclusion(rulebook.Exclusion):
    frameworks: list[Framework]


class FrameworkFacts(BaseModel):
    support_points: dict[Literal["full", "partial", "experimental"], float]
    frameworks: dict[Framework, _FrameworkFacts]
    rules: list[_Rule]
    exclusions: list[_Exclusion]

    def support(self, fw: Framework, method: Method) -> _MethodSupport:
        return self.frameworks[fw].methods.get(method) or _MethodSupport(support="none")


@functools.cache
def load_framework_facts() -> FrameworkFacts:
    """Load and validate framework_facts.yaml (cached)."""
    return rulebook.load_rule_table("framework_facts.yaml", FrameworkFacts, "frameworks", Framework, FACTS)


def support_matrix_markdown() -> str:
    """The method x framework support matrix as Markdown (for the guide's generated table)."""
    t = load_framework_facts()
    fws = list(t.frameworks)
    sym = {"full": "✔", "partial": "partly", "experimental": "experimental", "none": "✘"}
    lines = ["| Method | " + " | ".join(t.frameworks[f].label for f in fws) + " |",
             "|---|" + "---|" * len(fws)]
    for m in Method:
        lines.append(f"| {m.value} | " + " | ".join(sym[t.support(f, m).support] for f in fws) + " |")
    lines.append("| release checked | " + " | ".join(t.frameworks[f].release_checked for f in fws) + " |")
    return "\n".join(lines)


def rules_markdown() -> str:
    """The scoring rules and exclusions as a Markdown table."""
    t = load_framework_facts()
    return rulebook.rules_markdown(t.rules, t.exclusions, "frameworks")


# --------------------------------------------------------------------------- the tool


def choose_framework(method: Method | None = None, plan: Plan | None = None, hardware: Hardware | None = None,
                     model: str | None = None, ecosystem: Ecosystem | None = None) -> FrameworkRecommendation:
    """Rank TRL, veRL, OpenRLHF, NeMo-RL, MaxText-RL, RLlib and TRLX for a method.

    Uses the current releases' method support (TRL 1.16 has no PPO, OpenRLHF 0.11 no KTO, veRL
    no DPO/KTO/ORPO/SimPO/RM trainer, ORPO/SimPO only in TRL's experimental API), the scale
    (GPUs, nodes, model size), the accelerator family (CUDA/ROCm vs TPU) and the shop (PyTorch,
    Megatron, JAX). Arguments default to the plan's method, hardware, policy model and
    objective.ecosystem. Every framework that does not win gets a "why not".
    """
    notes: list[str] = []
    method = _coerce(Method, method, "method")
    ecosystem = _coerce(Ecosystem, ecosystem, "ecosystem")
    if method is None:
        if plan is None:
            raise AdvisorError("a method is needed (or a plan that has one)", field="method",
                               allowed=", ".join(m.value for m in Method) + " (see choose_method)")
        method = plan.method
    if hardware is None and plan is not None:
        hardware = plan.hardware
    if ecosystem is None:
        ecosystem = plan.objective.ecosystem if plan is not None and plan.objective else Ecosystem.PYTORCH
    spec = model_spec_for(model, plan, notes)
    facts = _facts(method, plan, hardware, spec, ecosystem, notes)
    table = load_framework_facts()

    excluded: dict[Framework, list[str]] = {}
    for e in table.exclusions:
        if rulebook.holds(e.when, facts):
            for fw in e.frameworks:
                excluded.setdefault(fw, []).append(e.reason)
    fired = [r for r in table.rules if rulebook.holds(r.when, facts)]

    ranked: list[FrameworkChoice] = []
    why_not: list[WhyNot] = []
    for fw, ff in table.frameworks.items():
        sup = table.support(fw, method)
        reasons_out = list(excluded.get(fw, []))
        if sup.support == "none":
            reasons_out.insert(0, f"{ff.label} has no {method.value} ({ff.release_checked})"
                               + (f": {sup.note}" if sup.note else ""))
        if reasons_out:
            why_not.append(WhyNot(framework=fw, reason="; ".join(reasons_out)))
            continue
        pts = table.support_points[sup.support]  # type: ignore[index]
        reasons = [f"{pts:+g} {method.value} support: {sup.support}" + (f" ({sup.note})" if sup.note else "")]
        score = pts
        rule_points: dict[str, float] = {}
        for r in fired:
            v = r.scores.get(fw)
            if v:
                score += v
                rule_points[r.id] = v
                reasons.append(f"{v:+g} {r.rationale} [{r.id}]")
        caveats = []
        if sup.support in ("partial", "experimental") and sup.note:
            caveats.append(sup.note)
        if not ff.verified:
            caveats.append(f"support facts come from the seed guide, not a checked release ({ff.release_checked})")
        if facts["ecosystem"] in ff.ecosystem_notes:
            caveats.append(ff.ecosystem_notes[facts["ecosystem"]])
        if not ff.renderable:
            caveats.append("render_config cannot write this framework's config: you write the launch script")
        ranked.append(FrameworkChoice(framework=fw, label=ff.label, score=score, support=sup.support,
                                      reasons=reasons, release_checked=ff.release_checked, verified=ff.verified,
                                      entrypoint=sup.entrypoint, renderable=ff.renderable, caveats=caveats,
                                      rule_points=rule_points))
    order_of = {f: i for i, f in enumerate(table.frameworks)}
    ranked.sort(key=lambda c: (-c.score, not c.renderable, order_of[c.framework]))
    if ranked:
        top = ranked[0]
        for c in ranked[1:]:
            why_not.append(WhyNot(framework=c.framework, reason=_lost_because(c, top)))
    why_not.sort(key=lambda w: order_of[w.framework])
    if plan is not None and ranked and plan.framework != ranked[0].framework:
        pos = next((i for i, c in enumerate(ranked, 1) if c.framework == plan.framework), None)
        notes.append(f"plan.framework is {plan.framework.value}: "
                     + (f"ranked #{pos}" if pos else "it cannot run this method here (see why_not)"))
    return FrameworkRecommendation(method=method, best=ranked[0].framework if ranked else None, ranked=ranked,
                                   why_not=why_not, facts=facts, notes=notes)


def _coerce(enum: type, value: Any, field: str) -> Any:
    """Accept an enum member or its string value (CLI and plain-Python callers pass strings)."""
    if value is None or isinstance(value, enum):
        return value
    try:
        return enum(str(value).strip().lower())
    except ValueError:
        raise AdvisorError(f"unknown {field}", field=field, value=value,
                           allowed=", ".join(m.value for m in enum)) from None


def _lost_because(loser: FrameworkChoice, top: FrameworkChoice) -> str:
    """A one-line why-not for a feasible framework that scored lower than the winner: the
    support gap and the rules where the winner gained more (or the loser lost points)."""
    parts = [f"scored {loser.score:g} vs {top.score:g} for {top.label}"]
    if loser.support != top.support:
        parts.append(f"{method_support_word(loser.support)} support vs {method_support_word(top.support)}")
    ids = set(loser.rule_points) | set(top.rule_points)
    gaps = sorted(((top.rule_points.get(i, 0) - loser.rule_points.get(i, 0), i) for i in ids), reverse=True)
    for n, (gap, rid) in enumerate(gaps[:3]):
        if gap <= 0:
            break
        mine, theirs = loser.rule_points.get(rid, 0), top.rule_points.get(rid, 0)
        parts.append(f"[{rid}] {mine:+g} vs {theirs:+g}" + (f": {_rule_text(rid).rstrip('.')}" if n == 0 else ""))
    return "; ".join(parts)


def method_support_word(s: str) -> str:
    return {"full": "full", "partial": "partial", "experimental": "experimental-API"}.get(s, s)


def _rule_text(rule_id: str) -> str:
    return next((r.rationale for r in load_framework_facts().rules if r.id == rule_id), rule_id)


def _facts(method: Method, plan: Plan | None, hardware: Hardware | None, spec: ModelSpec | None,
           ecosystem: Ecosystem, notes: list[str]) -> dict[str, Any]:
    from advisor.catalog import hardware_gpu

    family = None
    if hardware is not None:
        family = hardware_gpu(hardware).family
    else:
        family = "cuda"
        notes.append("hardware not given: assuming NVIDIA (CUDA) GPUs and leaving scale rules out")
    objective = plan.objective if plan is not None else None
    return {
        "method": method.value,
        "on_policy": method in ONLINE_METHODS,
        "offline": method in OFFLINE_METHODS or method in (Method.REJECTION_SAMPLING, Method.RLAIF),
        # Unknown task = an LLM task (rl-advisor's domain); non_llm must be said explicitly.
        "task": objective.task.value if objective else "unspecified",
        "total_gpus": hardware.total_gpus if hardware else None,
        "nodes": hardware.nodes if hardware else None,
        "model_params_b": round((spec.params or 0) / 1e9, 3) if spec else None,
        "model_is_moe": spec.is_moe if spec else None,
        "accelerator_family": family,
        "ecosystem": ecosystem.value,
        "priority": objective.priority.value if objective else None,
    }
