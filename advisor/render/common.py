"""What every framework mapping shares: the support matrix, the resolved batch numbers and GPU
pools, and a collector for the Plan settings that do not carry over."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any


from advisor.errors import AdvisorError, FieldProblem
from advisor.plan import Framework, Method, Plan
from advisor.render.models import NotCarried
from advisor.resolve import ResolvedPool, resolve


@cache
def support_table() -> dict[str, Any]:
    """The render rows of the one support table (advisor/data/framework_facts.yaml):
    ``{"versions": {fw: release}, "matrix": {fw: {method: {entry|reason, ...}}}}``."""
    from advisor.choose_framework import load_framework_facts

    facts = load_framework_facts().frameworks
    return {"versions": {f.value: ff.version for f, ff in facts.items() if ff.renderable},
            "matrix": {f.value: {m.value: row.model_dump(exclude_none=True) for m, row in ff.render.items()}
                       for f, ff in facts.items() if ff.renderable}}


def renderable_frameworks() -> frozenset[Framework]:
    return frozenset(Framework(f) for f in support_table()["matrix"])


def framework_version(framework: Framework) -> str:
    return str(support_table()["versions"][framework.value])


def support_row(framework: Framework, method: Method) -> dict[str, Any]:
    """The matrix row; raises AdvisorError with the documented reason for unsupported pairs."""
    matrix = support_table()["matrix"]
    if framework.value not in matrix:
        raise AdvisorError(
            f"rl-advisor does not render configs for {framework.value}",
            field="framework", value=framework.value,
            allowed=", ".join(sorted(matrix)))
    row = matrix[framework.value].get(method.value)
    if row is None or "reason" in row:
        reason = row["reason"] if row else "no entry in the support matrix"
        supported = sorted(m for m, r in matrix[framework.value].items() if "entry" in r)
        raise AdvisorError([FieldProblem(
            field="method", value=method.value,
            message=f"{method.value} cannot be rendered for {framework.value} "
                    f"{framework_version(framework)}: {reason} (source: {row.get('source') if row else '-'})",
            allowed=f"{framework.value} renders: {', '.join(supported)}")])
    return row


def supported_pairs() -> list[tuple[Framework, Method]]:
    out = []
    for fw, rows in support_table()["matrix"].items():
        for m, row in rows.items():
            if "entry" in row:
                out.append((Framework(fw), Method(m)))
    return out


def unsupported_pairs() -> list[tuple[Framework, Method, str]]:
    out = []
    for fw, rows in support_table()["matrix"].items():
        for m, row in rows.items():
            if "reason" in row:
                out.append((Framework(fw), Method(m), row["reason"]))
    return out


def rl_advisor_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("rl-advisor")
    except metadata.PackageNotFoundError:
        return "0.1.0"


# --------------------------------------------------------------------------- derived numbers


@dataclass
class Derived:
    """The resolved batch numbers every mapping needs (advisor.resolve decides them once), plus
    the render-only choice of DAPO's clip-higher."""

    n: int                 # responses per prompt
    train_batch: int       # prompts per step
    mini_batch: int        # prompts per optimizer step
    micro: int             # sequences per fwd/bwd per GPU
    nodes: int
    gpus_per_node: int
    kl_coef: float
    use_ref: bool
    clip_high: float  # upper PPO clip; DAPO's clip-higher 0.28 when the plan leaves high == low


def derive(plan: Plan, notes: list[str]) -> Derived:
    rp = resolve(plan)
    b, a = rp.batch, plan.algorithm
    notes += list(rp.notes)
    clip_high = a.clip_ratio_high
    if plan.method == Method.DAPO and a.clip_ratio_high == a.clip_ratio_low:
        clip_high = 0.28
        notes.append("DAPO: algorithm.clip_ratio_high equals clip_ratio_low; rendered DAPO's clip-higher 0.28 "
                     "(Yu et al. 2025)")
    return Derived(n=b.n, train_batch=b.prompts, mini_batch=b.mini_batch, micro=b.micro_per_gpu,
                   nodes=plan.hardware.nodes,
                   gpus_per_node=plan.hardware.gpus_per_node, kl_coef=b.kl_coef,
                   use_ref=rp.online and rp.uses_reference, clip_high=clip_high)


# --------------------------------------------------------------------------- GPU pools


def pools(plan: Plan) -> tuple[ResolvedPool, ...]:
    """GPU pools of the plan, as resolved (advisor.resolve holds the one default-pool rule)."""
    return resolve(plan).pools


def pool_for(plan: Plan, role: str) -> ResolvedPool:
    return resolve(plan).pool_of(role)


def is_cpu(plan: Plan) -> bool:
    """A plan for a machine without accelerators (local smoke runs)."""
    return resolve(plan).is_cpu


# --------------------------------------------------------------------------- not carried


@dataclass
class Carry:
    """Collects Plan settings a framework has no equivalent for."""

    items: list[NotCarried] = field(default_factory=list)

    def drop(self, field_: str, value: Any, reason: str) -> None:
        self.items.append(NotCarried(field=field_, value=value, reason=reason))


def memory_knob_lines(plan: Plan) -> list[str]:
    """The plan's memory knobs, one `key: value` per line, for artifact headers."""
    m = plan.memory
    data = m.model_dump(mode="json")
    lines = [f"{k}: {v}" for k, v in data.items()]
    lines.append(f"policy.dtype: {plan.policy.dtype}")
    lines.append(f"rollout.tp: {plan.rollout.tp}, rollout.sleep_level: {plan.rollout.sleep_level}")
    return lines
