"""Framework and physical rules that reject a placement, each with its reason and source.

The rule texts (rationale, source, which frameworks) are data in
``advisor/data/placement_rules.yaml``; this module holds one small check per rule id. A check
takes the Plan (with its placement filled in) and the resolved model dimensions, and returns
``(field, message, allowed)`` for every way the plan breaks the rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable


from advisor import yamlio
from advisor.errors import AdvisorError
from advisor.placement.models import RuleViolation
from advisor.plan import Method, ModelSpec, Plan, Pool
from advisor.resolve import GROUP_METHODS, resolve

DATA = Path(__file__).resolve().parent.parent / "data" / "placement_rules.yaml"

TRAIN_ROLES = ("policy", "reference", "reward", "critic")


@lru_cache(maxsize=1)
def rule_table() -> dict[str, dict[str, Any]]:
    rows = yamlio.safe_load(DATA.read_text())["rules"]
    return {r["id"]: r for r in rows}


@dataclass
class Context:
    """What checks need besides the Plan: pools, active roles and model dimensions."""

    plan: Plan
    pools: list[Pool]
    roles: list[str]
    specs: dict[str, ModelSpec]

    def pool(self, role: str) -> Pool | None:
        hits = [p for p in self.pools if role in p.roles]
        return hits[0] if hits else None

    @property
    def n(self) -> int:
        return resolve(self.plan).batch.n

    def parallel(self, role: str):
        rm = getattr(self.plan, role, None)
        return (rm or self.plan.policy).parallel


Problem = tuple[str, str, str | None]
Check = Callable[[Context], Iterable[Problem]]
CHECKS: dict[str, Check] = {}


def check(rule_id: str) -> Callable[[Check], Check]:
    def deco(fn: Check) -> Check:
        CHECKS[rule_id] = fn
        return fn
    return deco


# --------------------------------------------------------------------------- checks


@check("pools_cover_roles")
def _cover(ctx: Context) -> Iterable[Problem]:
    for role in ctx.roles:
        on = [p.name for p in ctx.pools if role in p.roles]
        if not on:
            yield ("plan.placement.pools", f"role {role} is on no pool", f"add {role} to one pool's roles")
        elif len(on) > 1:
            yield ("plan.placement.pools", f"role {role} is on {len(on)} pools ({', '.join(on)})",
                   "each role on exactly one pool")


@check("tp_divides_heads")
def _tp_heads(ctx: Context) -> Iterable[Problem]:
    for role, spec in ctx.specs.items():
        tp = ctx.plan.rollout.tp if role == "rollout" else ctx.parallel(role).tp
        field = "plan.rollout.tp" if role == "rollout" else f"plan.{role}.parallel.tp"
        if spec.num_heads % tp:
            yield (field, f"TP {tp} does not divide the {spec.num_heads} attention heads of {spec.name}",
                   "a divisor of num_heads: " + ", ".join(str(d) for d in _divisors(spec.num_heads) if d <= 64))


@check("tp_kv_heads")
def _tp_kv(ctx: Context) -> Iterable[Problem]:
    for role, spec in ctx.specs.items():
        if spec.attention == "mla":
            continue
        tp = ctx.plan.rollout.tp if role == "rollout" else ctx.parallel(role).tp
        field = "plan.rollout.tp" if role == "rollout" else f"plan.{role}.parallel.tp"
        kv = spec.num_kv_heads
        if (tp <= kv and kv % tp) or (tp > kv and tp % kv):
            yield (field, f"TP {tp} neither divides nor is a multiple of the {kv} KV heads of {spec.name}",
                   f"a divisor or multiple of {kv}")


@check("tp_within_node")
def _tp_node(ctx: Context) -> Iterable[Problem]:
    for role in ctx.specs:
        pool = ctx.pool(role)
        if pool is None:
            continue
        tp = ctx.plan.rollout.tp if role == "rollout" else ctx.parallel(role).tp
        # NVLink reaches across the trays of a rack-scale domain (GB200 NVL72: 72 GPUs over 18 trays of 4)
        try:
            rack = resolve(ctx.plan).nvlink_domain
        except AdvisorError:  # an unknown GPU is reported by its own check
            rack = 0
        domain = rack if rack > ctx.plan.hardware.gpus_per_node else pool.gpus_per_node
        if tp > domain:
            field = "plan.rollout.tp" if role == "rollout" else f"plan.{role}.parallel.tp"
            yield (field, f"TP {tp} spans nodes: pool {pool.name} has {pool.gpus_per_node} GPUs per node"
                   + (f" and an NVLink domain of {domain}" if domain > pool.gpus_per_node else ""),
                   f"<= {domain}")


@check("model_parallel_divides_pool")
def _mp_pool(ctx: Context) -> Iterable[Problem]:
    for role in TRAIN_ROLES:
        if role not in ctx.roles:
            continue
        pool = ctx.pool(role)
        if pool is None:
            continue
        par = ctx.parallel(role)
        width = par.tp * par.pp * par.cp
        if pool.gpus % width:
            yield (f"plan.{role}.parallel", f"tp*pp*cp = {width} does not divide the {pool.gpus} GPUs of pool {pool.name}",
                   f"a divisor of {pool.gpus}")


@check("rollout_tp_divides_pool")
def _roll_pool(ctx: Context) -> Iterable[Problem]:
    if "rollout" not in ctx.roles:
        return
    pool = ctx.pool("rollout")
    if pool is None:
        return
    tp, eng = ctx.plan.rollout.tp, ctx.plan.rollout.engines
    if pool.gpus % tp:
        yield ("plan.rollout.tp", f"rollout TP {tp} does not tile the {pool.gpus} GPUs of pool {pool.name}",
               f"a divisor of {pool.gpus}")
    if eng is not None and eng * tp > pool.gpus:
        yield ("plan.rollout.engines", f"{eng} engines x TP {tp} = {eng * tp} GPUs exceed pool {pool.name} ({pool.gpus})",
               f"engines <= {pool.gpus // tp}")


@check("pp_divides_layers")
def _pp_layers(ctx: Context) -> Iterable[Problem]:
    for role, spec in ctx.specs.items():
        if role == "rollout":
            continue
        pp = ctx.parallel(role).pp
        if pp > spec.num_layers:
            yield (f"plan.{role}.parallel.pp", f"PP {pp} exceeds the {spec.num_layers} layers of {spec.name}",
                   f"<= {spec.num_layers}")
        elif pp > 2 and spec.num_layers % pp and not _uneven_ok(spec.num_layers, pp):
            yield (f"plan.{role}.parallel.pp", f"PP {pp} cannot split the {spec.num_layers} layers of {spec.name} "
                   "even with custom first/last stages", "a divisor of num_layers")


def _uneven_ok(layers: int, pp: int) -> bool:
    """Megatron's first/last-stage layer counts absorb a remainder: some first, last >= 1 leave
    the middle pp-2 stages an equal share (veRL's 235B recipe: 94 layers on PP8, last stage 6)."""
    return any((layers - first - last) % (pp - 2) == 0 and layers - first - last >= pp - 2
               for first in range(1, layers) for last in range(1, layers - first))


@check("ep_divides_experts")
def _ep(ctx: Context) -> Iterable[Problem]:
    for role, spec in ctx.specs.items():
        if role == "rollout":
            continue
        ep = ctx.parallel(role).ep
        if ep > 1 and not spec.is_moe:
            yield (f"plan.{role}.parallel.ep", f"EP {ep} on the dense model {spec.name}", "1 for dense models")
        elif ep > 1 and spec.num_experts % ep:
            yield (f"plan.{role}.parallel.ep", f"EP {ep} does not divide the {spec.num_experts} experts of {spec.name}",
                   f"a divisor of {spec.num_experts}")


@check("pp_cp_ep_need_megatron")
def _megatron(ctx: Context) -> Iterable[Problem]:
    if ctx.plan.memory.train_backend == "megatron":
        return
    for role in TRAIN_ROLES:
        if role not in ctx.roles:
            continue
        par = ctx.parallel(role)
        for name in ("pp", "cp", "ep"):
            if getattr(par, name) > 1:
                yield (f"plan.{role}.parallel.{name}",
                       f"{name.upper()} {getattr(par, name)} needs the Megatron backend (train_backend is "
                       f"{ctx.plan.memory.train_backend})", "1, or memory.train_backend: megatron")


@check("sp_divides_heads")
def _sp(ctx: Context) -> Iterable[Problem]:
    for role, spec in ctx.specs.items():
        if role == "rollout":
            continue
        sp = ctx.parallel(role).sp
        if sp > 1 and (spec.num_heads % sp):
            yield (f"plan.{role}.parallel.sp", f"Ulysses SP {sp} does not divide the {spec.num_heads} heads of {spec.name}",
                   "a divisor of num_heads")
        pool = ctx.pool(role)
        if sp > 1 and pool is not None and pool.gpus % sp:
            yield (f"plan.{role}.parallel.sp", f"SP {sp} does not divide the {pool.gpus} GPUs of pool {pool.name}",
                   f"a divisor of {pool.gpus}")


@check("fsdp_size_divides_pool")
def _fsdp(ctx: Context) -> Iterable[Problem]:
    for role in TRAIN_ROLES:
        if role not in ctx.roles:
            continue
        pool = ctx.pool(role)
        fs = ctx.parallel(role).fsdp_size
        if pool is not None and fs > 0 and pool.gpus % fs:
            yield (f"plan.{role}.parallel.fsdp_size", f"fsdp_size {fs} does not divide the {pool.gpus} GPUs of pool {pool.name}",
                   f"-1 or a divisor of {pool.gpus}")


def _train_world(ctx: Context) -> int:
    pool = ctx.pool("policy")
    if pool is None:
        return 1
    par = ctx.parallel("policy")
    if ctx.plan.memory.train_backend == "megatron":
        return max(pool.gpus // (par.tp * par.pp * par.cp), 1)
    return pool.gpus


@check("verl_batch_divisible")
def _verl_batch(ctx: Context) -> Iterable[Problem]:
    d = ctx.plan.data
    if d.use_dynamic_bsz:
        return
    world = _train_world(ctx)
    micro = (d.micro_batch_size_per_gpu or 1) if ctx.plan.memory.train_backend == "megatron" else 1
    need = world * micro
    real = d.train_batch_size * ctx.n
    if real % need:
        yield ("plan.data.train_batch_size",
               f"train_batch_size x n = {real} is not divisible by {need} (the {world} data-parallel ranks"
               + (f" x micro {micro}" if micro > 1 else "") + ")",
               f"a multiple of {need // _gcd(need, ctx.n)} prompts, or data.use_dynamic_bsz: true")


@check("verl_mini_batch_divisible")
def _verl_mini(ctx: Context) -> Iterable[Problem]:
    d = ctx.plan.data
    pool = ctx.pool("policy")
    if pool is None:
        return
    sp = ctx.parallel("policy").sp
    dp = _train_world(ctx) // (sp if ctx.plan.memory.train_backend != "megatron" else 1)
    mini = (d.mini_batch_size or d.train_batch_size) * ctx.n
    if mini % max(dp, 1) or mini // max(dp, 1) == 0:
        yield ("plan.data.mini_batch_size",
               f"mini_batch_size x n = {mini} sequences do not split evenly over {dp} data-parallel ranks",
               f"a multiple of {dp // _gcd(dp, ctx.n)} prompts")
    elif d.micro_batch_size_per_gpu and not d.use_dynamic_bsz and (mini // dp) % d.micro_batch_size_per_gpu:
        yield ("plan.data.micro_batch_size_per_gpu",
               f"{mini // dp} sequences per rank per mini-batch are not divisible by micro {d.micro_batch_size_per_gpu}",
               f"a divisor of {mini // dp}")


@check("verl_mini_le_train")
def _verl_mini_le(ctx: Context) -> Iterable[Problem]:
    d = ctx.plan.data
    if d.mini_batch_size and d.mini_batch_size > d.train_batch_size:
        yield ("plan.data.mini_batch_size", f"mini_batch_size {d.mini_batch_size} > train_batch_size {d.train_batch_size}",
               f"<= {d.train_batch_size}")


@check("split_batch_divisible")
def _split_batch(ctx: Context) -> Iterable[Problem]:
    if ctx.plan.placement.mode not in ("one_step_off", "fully_async") or "rollout" not in ctx.roles:
        return
    pool = ctx.pool("rollout")
    if pool is None:
        return
    engines = pool.gpus // ctx.plan.rollout.tp
    real = ctx.plan.data.train_batch_size * ctx.n
    if engines and real % engines:
        yield ("plan.data.train_batch_size", f"{real} sequences do not split evenly over {engines} rollout engines",
               f"a multiple of {engines // _gcd(engines, ctx.n)} prompts")


@check("openrlhf_colocate_all")
def _orl_colocate(ctx: Context) -> Iterable[Problem]:
    if ctx.plan.placement.mode != "colocated" or "rollout" not in ctx.roles:
        return
    actor, roll = ctx.pool("policy"), ctx.pool("rollout")
    if actor is None or roll is None:
        return
    engines = ctx.plan.rollout.engines or roll.gpus // ctx.plan.rollout.tp
    if actor.gpus != engines * ctx.plan.rollout.tp:
        yield ("plan.rollout.engines", f"colocate_all needs actor GPUs ({actor.gpus}) == vLLM engines x TP "
               f"({engines} x {ctx.plan.rollout.tp})", f"engines = {actor.gpus // ctx.plan.rollout.tp}")


@check("openrlhf_group_needs_n")
def _group_n(ctx: Context) -> Iterable[Problem]:
    if ctx.plan.method in GROUP_METHODS and ctx.n < 2:
        yield ("plan.algorithm.group_size", f"{ctx.plan.method.value} needs >= 2 responses per prompt (got {ctx.n})", ">= 2")


@check("openrlhf_rollout_batch_vs_world")
def _orl_world(ctx: Context) -> Iterable[Problem]:
    actor = ctx.pool("policy")
    if actor is None or not ctx.plan.is_online:
        return
    micro = ctx.plan.data.micro_batch_size_per_gpu or 1
    have = ctx.n * ctx.plan.data.train_batch_size // micro
    need = actor.gpus // ctx.parallel("policy").tp
    if have < need:
        yield ("plan.data.train_batch_size", f"{have} rollout micro-batches for {need} actor ranks",
               f">= {need * micro // ctx.n} prompts")


@check("trl_roles_on_trainer")
def _trl_roles(ctx: Context) -> Iterable[Problem]:
    if ctx.plan.method == Method.PPO:
        yield ("plan.method", "TRL 1.16 has no PPO trainer (no critic)", "grpo, rloo, dpo, kto, ... or another framework")
    policy = ctx.pool("policy")
    for role in ("reference", "reward", "critic"):
        pool = ctx.pool(role)
        if role in ctx.roles and pool is not None and policy is not None and pool.name != policy.name:
            yield ("plan.placement.pools", f"TRL runs {role} inside the training processes, not on pool {pool.name}",
                   f"put {role} on pool {policy.name}")


@check("trl_no_async")
def _trl_async(ctx: Context) -> Iterable[Problem]:
    if ctx.plan.placement.mode in ("one_step_off", "fully_async"):
        yield ("plan.placement.mode", f"TRL has no {ctx.plan.placement.mode} trainer", "colocated or split (vLLM server mode)")


@check("trl_batch_divisible")
def _trl_batch(ctx: Context) -> Iterable[Problem]:
    policy = ctx.pool("policy")
    if policy is None or not ctx.plan.is_online:
        return
    gen = ctx.plan.data.train_batch_size * ctx.n
    micro = ctx.plan.data.micro_batch_size_per_gpu or 1
    if gen % (micro * policy.gpus):
        yield ("plan.data.train_batch_size", f"generation batch {gen} is not divisible by per_device_train_batch_size "
               f"x world = {micro} x {policy.gpus}", f"a multiple of {micro * policy.gpus // _gcd(micro * policy.gpus, ctx.n)} prompts")


@check("async_needs_split")
def _async_split(ctx: Context) -> Iterable[Problem]:
    if ctx.plan.placement.mode not in ("one_step_off", "fully_async") or "rollout" not in ctx.roles:
        return
    pol, roll = ctx.pool("policy"), ctx.pool("rollout")
    if pol is not None and roll is not None and pol.name == roll.name:
        yield ("plan.placement.mode", f"{ctx.plan.placement.mode} needs the rollout on its own pool (it shares {pol.name})",
               "a pool with roles [rollout] only")


@check("colocated_shares_pool")
def _colocated(ctx: Context) -> Iterable[Problem]:
    if ctx.plan.placement.mode != "colocated" or "rollout" not in ctx.roles:
        return
    pol, roll = ctx.pool("policy"), ctx.pool("rollout")
    if pol is not None and roll is not None and pol.name != roll.name:
        yield ("plan.placement.mode", f"colocated but rollout is on {roll.name} and policy on {pol.name}",
               "mode split (separate pools) or one pool for both")


# --------------------------------------------------------------------------- running them


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _gcd(a: int, b: int) -> int:
    import math
    return math.gcd(a, b) or 1


def context_for(plan: Plan) -> Context:
    """The resolved roles and model specs; the pools as the plan lists them (so a role missing
    from every listed pool is reported, not silently placed), else the one default pool."""
    from advisor.placement.timemodel import pools_of

    rp = resolve(plan)
    roles = [r.value for r in rp.roles]
    specs: dict[str, ModelSpec] = {r.value: s for r, s in rp.specs.items()}
    pools = list(plan.placement.pools) if plan.placement.pools else pools_of(plan)
    return Context(plan=plan, pools=pools, roles=roles, specs=specs)


def check_plan(plan: Plan, ctx: Context | None = None) -> list[RuleViolation]:
    """Every rule the plan breaks, for its framework, with the rule's source."""
    ctx = ctx or context_for(plan)
    out: list[RuleViolation] = []
    for rule_id, row in rule_table().items():
        fw = row["frameworks"]
        if fw != "all" and plan.framework.value not in fw:
            continue
        for field, message, allowed in CHECKS[rule_id](ctx):
            out.append(RuleViolation(rule=rule_id, field=field, message=message, allowed=allowed,
                                     source=str(row["source"])))
    return out


def missing_checks() -> list[str]:
    """Rule ids in the table without a check (and the reverse): a test keeps these in step."""
    table = set(rule_table())
    return sorted(table ^ set(CHECKS))
