"""resolve(plan) -> ResolvedPlan: every fact derived from a Plan, decided once.

A Plan says what the user asked for; many facts follow from it (which roles are in play, which
pool holds each, how many sequences a step trains, which run mode). Before this module each of
budget_memory, the time model, the placement search and render decided those facts on its own,
and the copies disagreed (the default pool held different roles in each). Now they all read the
one ``ResolvedPlan``.

The anchors resolve the same way: veRL's ``TaskRunner`` builds one role -> resource-pool mapping
and asks ``need_reference_policy`` / ``need_critic`` from one place
(verl/trainer/main_ppo.py, verl/trainer/ppo/utils.py); TRL's ``GRPOConfig.__post_init__`` derives
its batch numbers once (trl/trainer/grpo_config.py).

Model specs and the GPU entry are looked up lazily (and once): render needs no model dimensions,
so a plan naming a local checkpoint the catalog does not know still renders.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from functools import cached_property
from typing import Literal

from pydantic import BaseModel, ConfigDict

from advisor.plan import OFFLINE_METHODS, ONLINE_METHODS, Method, ModelSpec, Parallelism, Plan, Role, RoleModel

RunMode = Literal["colocated", "split", "one_step_off", "fully_async"]
ASYNC_MODES: frozenset[str] = frozenset({"one_step_off", "fully_async"})

TRAINER_ROLES: tuple[Role, ...] = (Role.POLICY, Role.REFERENCE, Role.REWARD, Role.CRITIC)
"""Roles that hold weights in the training processes (the rollout engine is the fifth role)."""

GROUP_METHODS = frozenset({Method.GRPO, Method.DR_GRPO, Method.GSPO, Method.DAPO, Method.RLOO})
"""Methods whose baseline is the group of responses to one prompt (need n >= 2)."""

PAIRED_METHODS = frozenset({Method.DPO, Method.ORPO, Method.SIMPO, Method.REWARD_MODEL})
"""Methods that run a chosen and a rejected sequence per example (TRL DPOTrainer/RewardTrainer
concatenate both; OpenRLHF's DPO/RM trainers likewise)."""

KL_METHODS = frozenset(ONLINE_METHODS)
"""Online methods whose KL coefficient defaults to 0.001 when the plan leaves it open (veRL
``actor.kl_loss_coef`` / ``algorithm.kl_ctrl.kl_coef`` default, OpenRLHF ``--init_kl_coef``)."""

DEFAULT_GROUP_SIZE = 8
"""Responses per prompt when a group method leaves ``algorithm.group_size`` open (TRL
``GRPOConfig.num_generations`` default 8)."""

DEFAULT_DYNAMIC_TOKENS = 16384
"""Token budget per micro-batch under dynamic batching when none is set (veRL
``actor.ppo_max_token_len_per_gpu`` default 16384)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


class ResolvedPool(_Frozen):
    """A set of GPUs and the roles it holds (colocated roles time-share every GPU of it)."""

    name: str
    nodes: int
    gpus_per_node: int
    roles: tuple[str, ...]

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def engine(self) -> bool:
        """The pool runs the rollout engine."""
        return Role.ROLLOUT in self.roles


class ResolvedRole(_Frozen):
    """One role in play: whose weights, how held, where."""

    role: Role
    model: RoleModel
    field: str  # the Plan field the weights come from (plan.reference falls back to plan.policy)
    explicit: bool  # set on the Plan (else it shares the policy's weights and settings)
    trains: bool
    param_offload: bool
    optimizer_offload: bool
    parallel: Parallelism
    pool: str


class Batch(_Frozen):
    """The effective batch numbers of one step (prompts -> sequences -> optimizer and micro-steps)."""

    n: int                      # responses per prompt (1 offline)
    pair: int                   # sequences per example (2 for chosen/rejected methods)
    prompts: int                # prompts (examples) per step
    sequences: int              # sequences per step = prompts x n x pair
    mini_batch: int             # prompts per optimizer step
    mini_batch_sequences: int   # sequences per optimizer step
    optimizer_steps: int        # optimizer steps per step (mini-batches x PPO epochs)
    micro_per_gpu: int          # sequences per forward/backward per rank (per-rank micro-batch)
    micro_set: bool             # the plan gave micro_batch_size_per_gpu
    dynamic: bool               # token-budget micro-batching
    max_token_len_per_gpu: int | None  # the token budget when dynamic
    kl_coef: float
    dp: int                     # data-parallel ranks of the policy
    micro_steps: int            # micro-batches one rank runs per optimizer step (grad accumulation)


class ResolvedPlan(_Frozen):
    """Every fact derived from a Plan, computed once by ``resolve``. Read it; never recompute it."""

    plan: Plan
    online: bool
    mode: RunMode
    roles: tuple[Role, ...]               # in play, in order; includes Role.ROLLOUT when online
    role_info: dict[Role, ResolvedRole]   # the trainer roles in play
    pools: tuple[ResolvedPool, ...]
    role_pool: dict[Role, str]
    pools_explicit: bool
    batch: Batch
    is_cpu: bool
    notes: tuple[str, ...]

    # ------------------------------------------------------------------ derived views

    @property
    def recomputes_old_logprobs(self) -> bool:
        """Whether each step runs the policy's forward pass for the old log-probs (PPO's ratio).

        veRL's fully-async trainer takes the rollout engine's log-probs instead: its
        fully_async_ppo_trainer.yaml sets ``async_training.use_rollout_log_probs: True`` (passed
        to ``actor.use_rollout_log_probs``) and ``compute_prox_log_prob: False``
        (recipe/fully_async_policy/, volcengine/verl), and its doc's tables leave old_log_prob
        empty for those runs. TRL computes them only with more than one epoch per batch
        (GRPOTrainer: ``num_iterations > 1``); every other trainer recomputes them."""
        if not self.online:
            return False
        fw = self.plan.framework.value
        if fw == "verl" and self.mode == "fully_async":
            return False
        return fw != "trl" or self.plan.algorithm.epochs_per_batch > 1

    @property
    def trainer_roles(self) -> tuple[Role, ...]:
        return tuple(r for r in self.roles if r != Role.ROLLOUT)

    @property
    def uses_reference(self) -> bool:
        return Role.REFERENCE in self.roles

    @property
    def is_async(self) -> bool:
        return self.mode in ASYNC_MODES

    def has(self, role: str) -> bool:
        return role in self.roles

    def pool_of(self, role: str) -> ResolvedPool:
        """The pool holding ``role``; a role not in play is looked up on the policy's pool."""
        name = self.role_pool.get(Role(role), self.role_pool[Role.POLICY])
        return next(p for p in self.pools if p.name == name)

    def offload(self, role: str) -> ResolvedRole:
        """The resolved offload switches (and weights) of ``role``, also for a role not in play
        (a renderer still writes the reference's switch when KL is off)."""
        r = Role(role)
        if r in self.role_info:
            return self.role_info[r]
        return _role_info(self.plan, r, self.role_pool[Role.POLICY])

    @property
    def total_gpus(self) -> int:
        return sum(p.gpus for p in self.pools)

    @property
    def offloaded(self) -> tuple[Role, ...]:
        """Trainer roles whose parameters leave the GPU between their phases."""
        return tuple(r for r, info in self.role_info.items() if info.param_offload)

    @property
    def resident(self) -> tuple[Role, ...]:
        return tuple(r for r in self.trainer_roles if r not in self.offloaded)

    # ------------------------------------------------------------------ catalog lookups, once

    @cached_property
    def specs(self) -> dict[Role, ModelSpec]:
        """Exact dimensions of every role in play (the rollout engine serves the policy's weights),
        through the catalog's lookup. Looked up on first use, then kept."""
        from advisor.catalog import resolve_role_model

        out: dict[Role, ModelSpec] = {}
        for role, info in self.role_info.items():
            out[role] = resolve_role_model(info.model, info.field)
        if Role.ROLLOUT in self.roles:
            out[Role.ROLLOUT] = out[Role.POLICY]
        return out

    def spec(self, role: str) -> ModelSpec:
        role = Role(role)
        if role in self.specs:
            return self.specs[role]
        if role == Role.REWARD:
            from advisor.errors import AdvisorError

            raise AdvisorError("no reward model in the plan", field="plan.reward")
        # a role not in play (e.g. a reference with kl_coef 0) still has the policy's weights
        from advisor.catalog import resolve_role_model

        rm = getattr(self.plan, role.value, None) or self.plan.policy
        return resolve_role_model(rm, f"plan.{role.value}" if getattr(self.plan, role.value, None) else "plan.policy")

    @cached_property
    def gpu(self):
        """The GPU of ``hardware``: its ``gpu_spec`` numbers, else the catalog entry of
        ``hardware.gpu`` (AdvisorError naming the field when unknown)."""
        from advisor.catalog import hardware_gpu

        return hardware_gpu(self.plan.hardware, field="hardware.gpu")

    @cached_property
    def nvlink_domain(self) -> int:
        """GPUs that reach each other over NVLink: the catalog's ``nvlink_domain`` where the
        NVSwitch fabric spans several nodes (GB200 NVL72: 72 GPUs over 18 trays of 4, NVIDIA's
        GB200 NVL72 specifications), else one node. A group of at most this many GPUs (a TP,
        EP or reshard group, two pools that exchange weights) stays on NVLink; a larger one
        crosses the node NICs. Never below ``hardware.gpus_per_node``; 1 on the host CPU."""
        if self.is_cpu:
            return self.plan.hardware.gpus_per_node
        gpn = self.plan.hardware.gpus_per_node
        return max(gpn, self.gpu.nvlink_domain or gpn)


# --------------------------------------------------------------------------- the rules


def roles_in_play(plan: Plan, kl_coef: float) -> tuple[Role, ...]:
    """The roles a step needs, following the guide's role table and veRL's need_reference_policy /
    need_critic: PPO: policy, reference (KL > 0), reward model (when learned), critic. GRPO family:
    policy, reference when KL > 0, reward model when learned. DPO/KTO: policy + reference (in the
    loss). ORPO/SimPO/SFT/reward-model training: the policy only. Online methods add the rollout
    engine."""
    roles = [Role.POLICY]
    if plan.method in ONLINE_METHODS:
        if kl_coef > 0:
            roles.append(Role.REFERENCE)
        if plan.reward is not None:
            roles.append(Role.REWARD)
        if plan.method == Method.PPO:
            roles.append(Role.CRITIC)
        roles.append(Role.ROLLOUT)
    elif plan.method in (Method.DPO, Method.KTO):
        roles.append(Role.REFERENCE)
    return tuple(roles)


def optimizer_steps_on_host(backend: str, optimizer_offload: bool) -> bool:
    """THE rule for where an offloaded optimizer steps (the memory ledger and the time model read
    it): DeepSpeed's ZeRO-Offload keeps master weights, Adam moments and fp32 grads on the host and
    runs CPU Adam there (ZeRO-Offload, Ren et al. 2021, arXiv:2101.06840); Megatron's offloaded
    optimizer as veRL's large-MoE recipes run it (``optimizer_offload`` with
    ``override_optimizer_config.optimizer_cpu_offload`` and ``optimizer_offload_fraction`` 1:
    Megatron-Core's HybridDeviceOptimizer, megatron/core/optimizer/cpu_offloading/) does the same.
    FSDP's optimizer offload only parks the states on the host between phases; the step runs on
    the GPU."""
    return optimizer_offload and backend in ("deepspeed", "megatron")


def expert_tensor_parallel(plan: Plan, par: Parallelism) -> int:
    """Tensor-parallel size of the MoE expert layers: ``parallel.etp`` when set, else the default
    each framework runs. Megatron-Core sets an unset expert_tensor_parallel_size to the tensor
    parallel size (megatron/core/parallel_state.py initialize_model_parallel), and veRL passes
    its null default through (ppo_megatron_trainer.yaml); NeMo-RL's base config sets it to 1
    (examples/configs/grpo_math_1B.yaml, policy.megatron_cfg.expert_tensor_parallel_size)."""
    if par.etp:
        return par.etp
    return 1 if plan.framework.value == "nemo_rl" else par.tp


def run_mode(plan: Plan) -> RunMode:
    """One run mode: ``placement.mode`` (offline methods have no rollout and run colocated)."""
    if plan.method in OFFLINE_METHODS:
        return "colocated"
    return plan.placement.mode


def default_pool(plan: Plan, roles: tuple[Role, ...]) -> ResolvedPool:
    """THE default-pool rule: an empty ``placement.pools`` is one pool of every GPU holding every
    role in play (veRL's hybrid engine: one global resource pool for all roles)."""
    hw = plan.hardware
    return ResolvedPool(name="all", nodes=hw.nodes, gpus_per_node=hw.gpus_per_node,
                        roles=tuple(r.value for r in roles))


def _pools(plan: Plan, roles: tuple[Role, ...], notes: list[str]) -> tuple[tuple[ResolvedPool, ...], dict[Role, str]]:
    if not plan.placement.pools:
        pool = default_pool(plan, roles)
        return (pool,), {r: pool.name for r in roles}
    in_play = {r.value for r in roles}
    listed = [(p, [r for r in p.roles if r in in_play]) for p in plan.placement.pools]
    for p, kept in listed:
        dropped = [r for r in p.roles if r not in in_play]
        if dropped:
            notes.append(f"pool {p.name} lists {', '.join(dropped)}, which {plan.method.value} does not run "
                         "with these settings; not counted")
    placed = {r for _, kept in listed for r in kept}
    home = next((p.name for p, kept in listed if "policy" in kept), listed[0][0].name)
    extra: list[str] = []
    for r in roles:
        if r.value not in placed:
            extra.append(r.value)
            what = "the rollout engine" if r == Role.ROLLOUT else f"role {r.value}"
            notes.append(f"no pool lists {what}; it is placed on pool {home}")
    pools = tuple(ResolvedPool(name=p.name, nodes=p.nodes, gpus_per_node=p.gpus_per_node,
                               roles=tuple(kept + (extra if p.name == home else [])))
                  for p, kept in listed)
    role_pool: dict[Role, str] = {}
    for r in roles:
        role_pool[r] = next(p.name for p in pools if r.value in p.roles)
    return pools, role_pool


def _role_info(plan: Plan, role: Role, pool: str) -> ResolvedRole:
    """Whose weights, and the offload switches: the per-role switch or the plan-wide one
    (``memory.param_offload``/``optimizer_offload`` for the trained roles, ``memory.ref_offload``
    for the reference)."""
    own = getattr(plan, role.value)
    rm = own if own is not None else plan.policy
    trains = role == Role.POLICY or (role == Role.CRITIC and plan.method != Method.REWARD_MODEL)
    k = plan.memory
    if role == Role.POLICY:
        p_off, o_off = k.param_offload or rm.param_offload, k.optimizer_offload or rm.optimizer_offload
    elif role == Role.REFERENCE:
        p_off, o_off = k.ref_offload or (own is not None and own.param_offload), False
    elif role == Role.CRITIC:
        p_off = k.param_offload or (own is not None and own.param_offload)
        o_off = k.optimizer_offload or (own is not None and own.optimizer_offload)
    else:
        p_off, o_off = rm.param_offload, False
    return ResolvedRole(role=role, model=rm, field=f"plan.{role.value}" if own is not None else "plan.policy",
                        explicit=own is not None, trains=trains, param_offload=p_off,
                        optimizer_offload=o_off and trains,
                        parallel=rm.parallel if own is not None else plan.policy.parallel, pool=pool)


def data_parallel(plan: Plan, par: Parallelism, pool_gpus: int) -> int:
    """Data-parallel ranks of a training role: the pool over its model-parallel width (Ulysses SP
    and CP always; TP and PP only under Megatron, where FSDP/DeepSpeed replicate them)."""
    width = par.sp * par.cp * (par.tp * par.pp if plan.memory.train_backend == "megatron" else 1)
    return max(1, pool_gpus // max(1, width))


def _batch(plan: Plan, policy_par: Parallelism, policy_pool_gpus: int, is_cpu: bool,
           notes: list[str]) -> Batch:
    a, d = plan.algorithm, plan.data
    online = plan.method in ONLINE_METHODS
    if not online:
        n = 1
    elif a.group_size is not None:
        n = a.group_size
    elif plan.method in GROUP_METHODS:
        n = DEFAULT_GROUP_SIZE
        notes.append(f"algorithm.group_size not set: {DEFAULT_GROUP_SIZE} responses per prompt")
    else:
        n = 1
    pair = 2 if plan.method in PAIRED_METHODS else 1
    micro = d.micro_batch_size_per_gpu or 1
    if d.micro_batch_size_per_gpu is None and not d.use_dynamic_bsz:
        notes.append("data.micro_batch_size_per_gpu not set: 1 sequence per GPU per micro-batch "
                     "(raise it if memory allows)")
    tokens = None
    if d.use_dynamic_bsz:
        tokens = d.max_token_len_per_gpu or DEFAULT_DYNAMIC_TOKENS
        if d.max_token_len_per_gpu is None:
            notes.append(f"data.max_token_len_per_gpu not set: veRL's default budget {DEFAULT_DYNAMIC_TOKENS} tokens")
    kl = a.kl_coef if a.kl_coef is not None else (0.001 if plan.method in KL_METHODS else 0.0)
    mini = d.mini_batch_size or d.train_batch_size
    dp = 1 if is_cpu else data_parallel(plan, policy_par, policy_pool_gpus)
    per_rank = mini * n * pair / dp
    if tokens:
        seq = d.max_prompt_length + d.max_response_length
        micro_steps = max(1, math.ceil(per_rank * seq / tokens - 1e-9))
    else:
        micro_steps = max(1, math.ceil(per_rank / (micro * pair) - 1e-9))
    return Batch(n=n, pair=pair, prompts=d.train_batch_size, sequences=d.train_batch_size * n * pair,
                 mini_batch=mini, mini_batch_sequences=mini * n * pair,
                 optimizer_steps=max(1, d.train_batch_size // mini) * a.epochs_per_batch,
                 micro_per_gpu=micro, micro_set=d.micro_batch_size_per_gpu is not None,
                 dynamic=d.use_dynamic_bsz, max_token_len_per_gpu=tokens, kl_coef=kl, dp=dp,
                 micro_steps=micro_steps)


def _resolve(plan: Plan) -> ResolvedPlan:
    notes: list[str] = []
    is_cpu = plan.hardware.gpu.strip().lower() == "cpu"
    a = plan.algorithm
    kl = a.kl_coef if a.kl_coef is not None else (0.001 if plan.method in KL_METHODS else 0.0)
    roles = roles_in_play(plan, kl)
    pools, role_pool = _pools(plan, roles, notes)
    info = {r: _role_info(plan, r, role_pool[r]) for r in roles if r != Role.ROLLOUT}
    pol_pool = next(p for p in pools if p.name == role_pool[Role.POLICY])
    batch = _batch(plan, info[Role.POLICY].parallel, pol_pool.gpus, is_cpu, notes)
    return ResolvedPlan(plan=plan, online=plan.method in ONLINE_METHODS, mode=run_mode(plan), roles=roles,
                        role_info=info, pools=pools, role_pool=role_pool,
                        pools_explicit=bool(plan.placement.pools), batch=batch, is_cpu=is_cpu,
                        notes=tuple(notes))


_CACHE: OrderedDict[str, ResolvedPlan] = OrderedDict()
_CACHE_SIZE = 512


def resolve(plan: Plan | ResolvedPlan) -> ResolvedPlan:
    """The ResolvedPlan of ``plan``, computed once per distinct Plan (a small LRU keyed by the
    Plan's canonical JSON, so the placement search's hundreds of candidates each resolve once
    however many modules read them). A ResolvedPlan passes through unchanged."""
    if isinstance(plan, ResolvedPlan):
        return plan
    key = plan.model_dump_json()
    hit = _CACHE.get(key)
    if hit is not None:
        _CACHE.move_to_end(key)
        return hit
    out = _resolve(plan)
    _CACHE[key] = out
    if len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return out
