"""What every framework mapping shares: the support matrix, derived batch numbers, GPU pools,
and a collector for the Plan settings that do not carry over."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any


from advisor import yamlio
from advisor.errors import AdvisorError, FieldProblem
from advisor.plan import Framework, Method, Plan
from advisor.render.models import NotCarried


@cache
def support_table() -> dict[str, Any]:
    text = resources.files("advisor.render").joinpath("support.yaml").read_text(encoding="utf-8")
    return yamlio.safe_load(text)


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


GROUP_METHODS = {Method.GRPO, Method.DR_GRPO, Method.GSPO, Method.DAPO, Method.RLOO}


@dataclass
class Derived:
    """Numbers every mapping needs, with the defaults chosen when the Plan leaves them open."""

    n: int                 # responses per prompt
    train_batch: int       # prompts per step
    mini_batch: int        # prompts per optimizer step
    micro: int             # sequences per fwd/bwd per GPU
    gpus: int
    nodes: int
    gpus_per_node: int
    kl_coef: float
    use_ref: bool
    clip_high: float  # upper PPO clip; DAPO's clip-higher 0.28 when the plan leaves high == low


def derive(plan: Plan, notes: list[str]) -> Derived:
    a, d = plan.algorithm, plan.data
    if a.group_size is not None:
        n = a.group_size
    elif plan.method in GROUP_METHODS:
        n = 8
        notes.append("algorithm.group_size not set: rendered 8 responses per prompt")
    else:
        n = 1
    micro = d.micro_batch_size_per_gpu
    if micro is None:
        micro = 1
        if not d.use_dynamic_bsz:
            notes.append("data.micro_batch_size_per_gpu not set: rendered 1 (raise it if memory allows)")
    kl = a.kl_coef if a.kl_coef is not None else (0.001 if plan.method in GROUP_METHODS | {Method.PPO, Method.REINFORCE_PP} else 0.0)
    clip_high = a.clip_ratio_high
    if plan.method == Method.DAPO and a.clip_ratio_high == a.clip_ratio_low:
        clip_high = 0.28
        notes.append("DAPO: algorithm.clip_ratio_high equals clip_ratio_low; rendered DAPO's clip-higher 0.28 "
                     "(Yu et al. 2025)")
    return Derived(n=n, train_batch=d.train_batch_size, mini_batch=d.mini_batch_size or d.train_batch_size,
                   micro=micro, gpus=plan.hardware.total_gpus, nodes=plan.hardware.nodes,
                   gpus_per_node=plan.hardware.gpus_per_node, kl_coef=kl, use_ref=kl > 0, clip_high=clip_high)


# --------------------------------------------------------------------------- GPU pools


@dataclass
class PoolShape:
    name: str
    nodes: int
    gpus_per_node: int
    roles: list[str]

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node


def pools(plan: Plan) -> list[PoolShape]:
    """GPU pools of the plan: the explicit placement, else one pool of every GPU with every role.

    H3's ``advisor.placement.resources`` will own the richer resource plan; until it lands this is
    the one place that reads ``plan.placement.pools``.
    """
    if plan.placement.pools:
        return [PoolShape(p.name, p.nodes, p.gpus_per_node, list(p.roles)) for p in plan.placement.pools]
    roles = ["policy", "rollout"]
    roles += [r for r in ("reference", "reward", "critic") if getattr(plan, r) is not None]
    return [PoolShape("all", plan.hardware.nodes, plan.hardware.gpus_per_node, roles)]


def pool_for(plan: Plan, role: str) -> PoolShape:
    for p in pools(plan):
        if role in p.roles:
            return p
    return pools(plan)[0]


def is_cpu(plan: Plan) -> bool:
    """A plan for a machine without accelerators (local smoke runs)."""
    return plan.hardware.gpu.strip().lower() == "cpu"


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
