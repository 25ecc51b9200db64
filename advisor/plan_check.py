"""validate_plan: the Plan re-checked as a whole, with the method's defaults made explicit."""

from __future__ import annotations

from pydantic import BaseModel, Field

from advisor.plan import OFFLINE_METHODS, ONLINE_METHODS, Method, Plan, plan_to_yaml


class PlanCheck(BaseModel):
    """The result of validate_plan: the plan is structurally valid; these are the warnings."""

    valid: bool = True
    warnings: list[str] = Field(default_factory=list)
    resident_roles: list[str] = Field(default_factory=list,
                                      description="Roles that hold weights on GPUs during a step.")
    online: bool = False
    plan_yaml: str = ""

    def to_text(self) -> str:
        lines = [f"plan is valid ({'on-policy' if self.online else 'offline'}); resident roles: "
                 f"{', '.join(self.resident_roles)}"]
        lines += [f"  warning: {w}" for w in self.warnings] or ["  no warnings"]
        return "\n".join(lines)


def resident_roles(plan: Plan) -> list[str]:
    """Roles whose weights a step needs on the trainers (advisor.resolve.roles_in_play, less the
    rollout engine)."""
    from advisor.resolve import resolve

    return [r.value for r in resolve(plan).trainer_roles]


def validate_plan(plan: Plan) -> PlanCheck:
    """Validate a Plan (the schema has already rejected impossible values) and list soft problems."""
    warnings: list[str] = list(plan.migration_notes)
    if plan.method in OFFLINE_METHODS and plan.critic is not None:
        warnings.append(f"critic is set but {plan.method.value} is offline and never uses a critic")
    if plan.method != Method.PPO and plan.critic is not None:
        warnings.append(f"critic is only used by PPO; {plan.method.value} ignores it")
    if plan.method in ONLINE_METHODS and plan.reward is None and plan.reward_function is None:
        warnings.append("on-policy method without a reward model or reward_function: "
                        "set reward (a learned RM) or reward_function (a verifier)")
    if plan.method in (Method.GRPO, Method.DAPO, Method.DR_GRPO, Method.GSPO, Method.RLOO) and \
            (plan.algorithm.group_size or 0) == 1:
        warnings.append("group_size 1 gives a zero group baseline: use n >= 2 (typically 4-16)")
    per_node = plan.hardware.gpus_per_node
    if plan.method in ONLINE_METHODS and plan.rollout.tp > per_node:
        warnings.append(f"rollout.tp {plan.rollout.tp} spans nodes ({per_node} GPUs per node): "
                        "cross-node tensor parallelism runs over the network; prefer more engines")
    for role, rm in plan.roles().items():
        if rm.parallel.tp > per_node:
            warnings.append(f"{role}.parallel.tp {rm.parallel.tp} spans nodes ({per_node} GPUs per node)")
    warnings += _bf16_warnings(plan)
    return PlanCheck(warnings=warnings, resident_roles=resident_roles(plan),
                     online=plan.method in ONLINE_METHODS, plan_yaml=plan_to_yaml(plan))


def _bf16_warnings(plan: Plan) -> list[str]:
    """Pre-Ampere cards (V100) have no bf16: a bf16 role there runs in emulation or fails."""
    from advisor.catalog import hardware_gpu
    from advisor.errors import AdvisorError

    try:
        gpu = hardware_gpu(plan.hardware)
    except AdvisorError:
        return []  # an unknown GPU is reported by the tools that need its numbers
    if gpu.bf16_supported:
        return []
    return [f"{role}.dtype is bf16 but {gpu.name} has no bf16 tensor cores: set {role}.dtype: fp16"
            for role, rm in plan.roles().items() if rm.dtype == "bf16"]
