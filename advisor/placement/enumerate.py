"""Enumerate placements of a Plan: layouts, pool sizes, per-role parallelism, rollout TP x engines.

Layouts (HybridFlow's placement search, perf-anchors.md §2.1, plus the async layouts of §2.5):

- ``colocated``: every role on one pool, time-sliced (veRL hybrid engine, OpenRLHF colocate_all);
- ``split``: actor+reference on a training pool, the rollout engines on their own pool;
- ``split`` with the critic and reward model on a pool of their own (OpenRLHF's distributed roles);
- ``one_step_off``: the split pools, generation of step N+1 overlapping training of step N;
- ``fully_async``: the split pools with streaming generation (the long tail is hidden).

Pool sizes are rectangles (nodes x GPUs per node): whole nodes for the rollout, or the same
share of every node (the veRL recipe's 4 generation + 12 training GPUs on 2 nodes). Per-role
parallelism follows the training backend: FSDP (Ulysses SP, fsdp_size), Megatron (TP, PP, EP,
CP) or DeepSpeed (data parallel only). Rollout TP runs over the powers of two up to a node.
Nothing here judges a candidate: the rules, the memory budget and the time model do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from advisor.plan import Parallelism, Placement, Plan, Pool
from advisor.resolve import resolve

POW2 = (1, 2, 4, 8, 16, 32, 64)


@dataclass(frozen=True)
class Layout:
    label: str
    mode: str
    pools: tuple[Pool, ...]


def training_roles(plan: Plan) -> list[str]:
    return [r.value for r in resolve(plan).trainer_roles]


def _rollout_shares(plan: Plan) -> list[tuple[int, int]]:
    """(nodes, gpus_per_node) rectangles for a rollout pool carved out of the cluster."""
    n, g = plan.hardware.nodes, plan.hardware.gpus_per_node
    out: list[tuple[int, int]] = []
    if n == 1:
        out += [(1, q) for q in range(1, g) if q in POW2 or q * 4 == g * 3]
    else:
        whole = sorted({max(1, round(n * f)) for f in (1 / 8, 1 / 4, 3 / 8, 1 / 2, 5 / 8, 3 / 4)} - {n})
        out += [(k, g) for k in whole]
        out += [(n, q) for q in (1, 2, 4) if q < g]  # the same share of every node
    return out


def layouts(plan: Plan) -> Iterator[Layout]:
    n, g = plan.hardware.nodes, plan.hardware.gpus_per_node
    train_roles = training_roles(plan)
    online = resolve(plan).online
    all_roles = train_roles + (["rollout"] if online else [])
    yield Layout(f"colocated {n * g} GPUs", "colocated", (Pool(name="all", nodes=n, gpus_per_node=g, roles=all_roles),))
    if not online:
        return
    side = [r for r in train_roles if r in ("critic", "reward")]
    core = [r for r in train_roles if r not in side]
    for rn, rg in _rollout_shares(plan):
        if rn == n:  # the same share of every node: training keeps the rest of each node
            tn, tg = n, g - rg
        else:
            tn, tg = n - rn, g
        rollout = Pool(name="rollout", nodes=rn, gpus_per_node=rg, roles=["rollout"])
        train = Pool(name="train", nodes=tn, gpus_per_node=tg, roles=list(train_roles))
        tag = f"{tn * tg}+{rn * rg}"
        for mode in ("split", "one_step_off", "fully_async"):
            yield Layout(f"{mode} train {tn * tg} + rollout {rn * rg}", mode, (train, rollout))
        if side and tn * tg >= 2:
            # actor+ref on one half of the training GPUs, critic/reward on the other
            if tn > 1 and tn % 2 == 0:
                a, b = Pool(name="actor", nodes=tn // 2, gpus_per_node=tg, roles=core), \
                    Pool(name="critic-reward" if len(side) > 1 else side[0], nodes=tn // 2, gpus_per_node=tg, roles=side)
            elif tg % 2 == 0:
                a, b = Pool(name="actor", nodes=tn, gpus_per_node=tg // 2, roles=core), \
                    Pool(name="critic-reward" if len(side) > 1 else side[0], nodes=tn, gpus_per_node=tg // 2, roles=side)
            else:
                continue
            yield Layout(f"split actor {a.gpus} + critic/reward {b.gpus} + rollout {rn * rg} ({tag})", "split",
                         (a, b, rollout))


def parallel_options(plan: Plan, pool_gpus: int) -> list[Parallelism]:
    """Per-role parallelism for a training pool of ``pool_gpus`` GPUs, by backend."""
    from advisor.placement.timemodel import role_spec

    spec, _ = role_spec(plan, "policy")
    g = plan.hardware.gpus_per_node
    backend = plan.memory.train_backend
    long_seq = plan.data.max_seq_len >= 8192
    if backend in ("fsdp", "fsdp2"):
        sps = [1, 2, 4, 8] if long_seq else [1]
        # full sharding over the pool, or hybrid sharding inside each node when the pool spans nodes
        sizes = [-1] + ([g] if pool_gpus > g and pool_gpus % g == 0 and plan.framework.value == "verl" else [])
        if plan.framework.value != "verl":
            sps = [1]  # Ulysses SP is a veRL knob
        return [Parallelism(sp=sp, fsdp_size=fs) for sp in sps if sp <= pool_gpus for fs in sizes]
    if backend == "deepspeed":
        return [Parallelism()]
    out = []
    eps = [e for e in POW2 if e <= min(spec.num_experts, pool_gpus)] if spec.is_moe else [1]
    cps = [1, 2] if plan.data.max_seq_len >= 16384 else [1]
    for tp in (t for t in POW2 if t <= g):
        for pp in (p for p in POW2 if p <= 16):
            for cp in cps:
                width = tp * pp * cp
                if width > pool_gpus or pool_gpus % width:
                    continue
                for ep in eps:
                    if ep > pool_gpus // (tp * pp * cp) * tp:  # EP ranks come from DP x TP
                        continue
                    out.append(Parallelism(tp=tp, pp=pp, cp=cp, ep=ep))
    return out


def rollout_tps(plan: Plan, pool_gpus: int) -> list[int]:
    g = plan.hardware.gpus_per_node
    return [t for t in POW2 if t <= min(g, pool_gpus) and pool_gpus % t == 0]


def apply(plan: Plan, layout: Layout, par: Parallelism, rollout_tp: int) -> Plan:
    """The plan with this layout, parallelism and rollout shape written in."""
    data = plan.model_dump(mode="python")
    data["placement"] = Placement(mode=layout.mode, pools=list(layout.pools)).model_dump(mode="python")
    for role in ("policy", "reference", "critic"):
        if data.get(role) is not None:
            data[role]["parallel"] = par.model_dump(mode="python")
    rollout_pool = next((p for p in layout.pools if "rollout" in p.roles), None)
    if rollout_pool is not None:
        data["rollout"]["tp"] = rollout_tp
        data["rollout"]["engines"] = rollout_pool.gpus // rollout_tp
    return Plan.model_validate(data)


def candidates(plan: Plan) -> Iterator[tuple[str, Plan]]:
    """Every (label, plan) the planner should score."""
    for lay in layouts(plan):
        train_pool = next(p for p in lay.pools if "policy" in p.roles)
        rollout_pool = next((p for p in lay.pools if "rollout" in p.roles), None)
        tps = rollout_tps(plan, rollout_pool.gpus) if rollout_pool is not None else [plan.rollout.tp]
        for par in parallel_options(plan, train_pool.gpus):
            for tp in tps:
                par_txt = _par_text(par)
                label = f"{lay.label}; train {par_txt}" + (f"; rollout TP{tp} x {rollout_pool.gpus // tp}"
                                                            if rollout_pool is not None else "")
                yield label, apply(plan, lay, par, tp)


def _par_text(par: Parallelism) -> str:
    parts = [f"{k.upper()}{getattr(par, k)}" for k in ("tp", "pp", "cp", "ep", "sp") if getattr(par, k) > 1]
    if par.fsdp_size > 0:
        parts.append(f"FSDP{par.fsdp_size}")
    return " ".join(parts) or "DP"

