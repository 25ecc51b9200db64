"""choose_method: rank post-training methods for an objective, with the rule behind every point.

The decision logic is data (``advisor/data/method_rules.yaml``): per-method facts (feasibility,
resident roles, on/off-policy, what to watch) and scoring rules, each with a rationale and the
guide section or paper it comes from. This module only derives facts from the inputs, applies
the rules (``advisor.rulebook``) and sorts.

Facts come from the Objective (what signal exists, exploration, credit assignment, priority,
budget), the Plan (response length, LoRA, KL), the policy model (size, MoE) and the hardware
(total HBM, accelerator family).
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import BaseModel, Field

from advisor import rulebook
from advisor.errors import AdvisorError
from advisor.plan import DataKind, Hardware, Method, ModelSpec, Objective, Plan, Role

FACTS = ("task", "data", "dataset_size", "needs_exploration", "needs_value_function", "has_judge_model",
         "has_sft_model", "ecosystem", "priority", "gpu_hours", "total_gpus", "accelerator_family",
         "model_params_b", "model_is_moe", "max_response_length", "full_ft_copies")

TRAINED_BYTES_PER_PARAM = 16
"""bf16 weights (2) + bf16 grads (2) + fp32 master (4) + Adam m, v (8): the ZeRO paper's 2+2+12
(guide/memory-budgeting.md §2)."""
LORA_BYTES_PER_PARAM = 2
"""With LoRA the base weights are frozen bf16; adapter states are negligible."""


# --------------------------------------------------------------------------- output models


class MethodChoice(BaseModel):
    """One ranked method with the reasons for its score."""

    method: Method
    label: str
    score: float
    rationale: list[str] = Field(description="Each rule that scored this method: points, reason, rule id.")
    sources: list[str] = Field(default_factory=list, description="Where the rules come from.")
    guide_section: str
    resident_roles: list[Role]
    on_policy: bool
    watch: list[str]
    caveats: list[str] = Field(default_factory=list)


class NotRecommended(BaseModel):
    method: Method
    reasons: list[str]


class MethodRecommendation(BaseModel):
    """choose_method's answer: feasible methods best first, and why the others are out."""

    best: Method | None
    ranked: list[MethodChoice]
    not_recommended: list[NotRecommended]
    facts: dict[str, Any] = Field(default_factory=dict, description="The facts the rules were applied to.")
    notes: list[str] = Field(default_factory=list)

    def to_text(self) -> str:
        lines = []
        if self.ranked:
            head = f"{'#':>2}  {'method':<20} {'score':>5}  {'policy':<10} {'resident roles':<34} guide"
            lines += [head, "-" * len(head)]
            for i, c in enumerate(self.ranked, 1):
                roles = ", ".join(r.value for r in c.resident_roles)
                lines.append(f"{i:>2}  {c.method.value:<20} {c.score:>5g}  "
                             f"{'on' if c.on_policy else 'off':<10} {roles:<34} {c.guide_section}")
            top = self.ranked[0]
            lines += ["", f"Recommended: {top.label} ({top.method.value})", "Why:"]
            lines += [f"  {r}" for r in top.rationale]
            lines += ["Watch:"] + [f"  - {w}" for w in top.watch]
            if top.caveats:
                lines += ["Caveats:"] + [f"  - {c}" for c in top.caveats]
            if len(self.ranked) > 1:
                second = self.ranked[1]
                lines += ["", f"Runner-up: {second.label} ({second.method.value}), score {second.score:g}"]
        else:
            lines.append("No method is feasible with the signal available.")
        if self.not_recommended:
            lines += ["", "Not recommended:"]
            for n in self.not_recommended:
                lines.append(f"  {n.method.value:<20} {'; '.join(n.reasons)}")
        if self.notes:
            lines += ["", "Notes:"] + [f"  - {n}" for n in self.notes]
        return "\n".join(lines)


# --------------------------------------------------------------------------- the rule table


class _MethodFacts(BaseModel):
    label: str
    guide_section: str
    on_policy: bool
    base_score: float = 0
    roles: list[Role]
    roles_if_learned_reward: list[Role] = Field(default_factory=list)
    requires: list[dict[str, Any]] = Field(default_factory=list)
    missing: str
    watch: list[str]
    caveats: list[str] = Field(default_factory=list)


_Rule = rulebook.ScoreRule[Method]


class _Exclusion(rulebook.Exclusion):
    methods: list[Method]


class MethodRules(BaseModel):
    methods: dict[Method, _MethodFacts]
    rules: list[_Rule]
    exclusions: list[_Exclusion] = Field(default_factory=list)


@functools.cache
def load_method_rules() -> MethodRules:
    """Load and validate method_rules.yaml (cached). A bad fact or operator is a data bug."""
    table = rulebook.load_rule_table("method_rules.yaml", MethodRules, "methods", Method, FACTS)
    for m, f in table.methods.items():
        for i, req in enumerate(f.requires):
            rulebook.check_when(req, FACTS, f"methods.{m.value}.requires[{i}]")
    return table


def rules_markdown() -> str:
    """The scoring rules as a Markdown table (the guide's generated 'choose_method's rules')."""
    t = load_method_rules()
    return rulebook.rules_markdown(t.rules, t.exclusions, "methods")


# --------------------------------------------------------------------------- facts


def _facts(objective: Objective, plan: Plan | None, spec: ModelSpec | None,
           hardware: Hardware | None, notes: list[str]) -> dict[str, Any]:
    from advisor.catalog import hardware_gpu

    f: dict[str, Any] = {
        "task": objective.task.value,
        "data": sorted({d.value for d in objective.data}),
        "dataset_size": objective.dataset_size,
        "needs_exploration": objective.needs_exploration,
        "needs_value_function": objective.needs_value_function,
        "has_judge_model": objective.has_judge_model,
        "has_sft_model": objective.has_sft_model,
        "ecosystem": objective.ecosystem.value,
        "priority": objective.priority.value,
        "gpu_hours": objective.budget.gpu_hours,
        "total_gpus": None, "accelerator_family": None, "model_params_b": None, "model_is_moe": None,
        "max_response_length": plan.data.max_response_length if plan else None,
        "full_ft_copies": None,
    }
    gpu = None
    if hardware is not None:
        gpu = hardware_gpu(hardware)
        f["total_gpus"] = hardware.total_gpus
        f["accelerator_family"] = gpu.family
    if spec is not None:
        params = spec.params or 0
        f["model_params_b"] = round(params / 1e9, 3)
        f["model_is_moe"] = spec.is_moe
        if gpu is not None and params:
            lora = bool(plan and plan.memory.lora_rank > 0)
            per_param = LORA_BYTES_PER_PARAM if lora else TRAINED_BYTES_PER_PARAM
            total_bytes = gpu.hbm_gib * 2**30 * hardware.total_gpus  # type: ignore[union-attr]
            f["full_ft_copies"] = round(total_bytes / (params * per_param), 2)
            if lora:
                notes.append("LoRA is set in the plan: memory fit counted at 2 B/param (frozen bf16 base)")
    return f


def _learned_reward(facts: dict[str, Any]) -> bool:
    data = facts["data"]
    return "prompts_with_reward_model" in data or (
        bool(facts["has_judge_model"]) and "prompts_with_verifier" not in data)


# --------------------------------------------------------------------------- the tool


def choose_method(objective: Objective | None = None, plan: Plan | None = None, model: str | None = None,
                  hardware: Hardware | None = None) -> MethodRecommendation:
    """Rank post-training methods (DPO, KTO, ORPO, SimPO, GRPO, DAPO, Dr.GRPO, GSPO, RLOO,
    REINFORCE++, PPO, rejection sampling, reward-model training, RLAIF, SFT) for an objective.

    Give the objective (what data/signal exists, the task, priorities) directly or through
    ``plan.objective``; ``model`` (a catalog name) and ``hardware`` refine the memory rules
    (default: the plan's policy and hardware). Each ranked method carries the rules that scored
    it, the guide section, the roles that must be resident, on/off-policy, and what to watch.
    """
    notes: list[str] = []
    if objective is None:
        if plan is None or plan.objective is None:
            raise AdvisorError("an objective is needed: what task and what training signal exists",
                               field="objective", value=None,
                               allowed="objective={task: ..., data: [preference_pairs|binary_labels|"
                                       "prompts_with_verifier|prompts_with_reward_model|demonstrations|"
                                       "prompts_only|nothing]} or a plan with plan.objective")
        objective = plan.objective
    if hardware is None and plan is not None:
        hardware = plan.hardware
    spec = model_spec_for(model, plan, notes)
    facts = _facts(objective, plan, spec, hardware, notes)
    table = load_method_rules()

    ranked: list[MethodChoice] = []
    out: list[NotRecommended] = []
    fired = [r for r in table.rules if rulebook.holds(r.when, facts)]
    excluded: dict[Method, list[str]] = {}
    for e in table.exclusions:
        if rulebook.holds(e.when, facts):
            for m in e.methods:
                excluded.setdefault(m, []).append(f"{e.reason} [{e.id}]")
    learned_reward = _learned_reward(facts)
    kl_off = bool(plan is not None and plan.algorithm.kl_coef == 0)

    for order, (method, mf) in enumerate(table.methods.items()):
        if method in excluded:
            out.append(NotRecommended(method=method, reasons=excluded[method]))
            continue
        if mf.requires and not any(rulebook.holds(req, facts) for req in mf.requires):
            out.append(NotRecommended(method=method, reasons=[mf.missing]))
            continue
        score = mf.base_score
        rationale: list[str] = []
        sources: list[str] = []
        for r in fired:
            pts = r.scores.get(method)
            if pts:
                score += pts
                rationale.append(f"{pts:+g} {r.rationale} [{r.id}]")
                sources.append(r.source)
        roles = list(mf.roles)
        if learned_reward:
            roles += [r for r in mf.roles_if_learned_reward if r not in roles]
        if kl_off and mf.on_policy and Role.REFERENCE in roles:
            roles.remove(Role.REFERENCE)
        ranked.append(MethodChoice(method=method, label=mf.label, score=score, rationale=rationale,
                                   sources=list(dict.fromkeys(sources)), guide_section=mf.guide_section,
                                   resident_roles=roles, on_policy=mf.on_policy, watch=list(mf.watch),
                                   caveats=list(mf.caveats)))
    order_of = {m: i for i, m in enumerate(table.methods)}
    ranked.sort(key=lambda c: (-c.score, order_of[c.method]))

    data = set(facts["data"])
    if data <= {DataKind.NOTHING.value, DataKind.PROMPTS_ONLY.value} and not objective.has_judge_model:
        notes.append("no training signal exists yet: collect preference pairs or labels, write a verifier, "
                     "or use an LLM judge (has_judge_model) for RLAIF")
    if plan is not None and ranked:
        pos = next((i for i, c in enumerate(ranked, 1) if c.method == plan.method), None)
        if pos is None:
            notes.append(f"plan.method is {plan.method.value}, which is not feasible for this objective")
        elif pos > 1:
            notes.append(f"plan.method is {plan.method.value}, ranked #{pos} here")
    return MethodRecommendation(best=ranked[0].method if ranked else None, ranked=ranked,
                                not_recommended=out, facts=facts, notes=notes)


def model_spec_for(model: str | None, plan: Plan | None, notes: list[str]) -> ModelSpec | None:
    """The model the choose tools reason about: ``model`` (a catalog name, an error if unknown),
    else the plan's policy (a note if the catalog does not know it: size rules are skipped)."""
    from advisor.catalog import get_model, resolve_role_model

    if model:
        return get_model(model, field="model")
    if plan is not None:
        try:
            return resolve_role_model(plan.policy, "policy")
        except AdvisorError:
            notes.append(f"policy model {plan.policy.model!r} is not in the catalog: model-size rules skipped")
    return None
