"""The phase-resolved ledger: phases x roles x state, per pool, and the per-GPU peak.

One RL step runs these phases (veRL hybrid-engine order; OpenRLHF and TRL run the same set):
weight_sync (trainer -> engine, engine wakes) -> rollout -> reward_forward -> old_log_prob ->
ref_log_prob -> critic_values -> critic_update -> actor_update. Offline methods (DPO, SFT, RM)
run ref_log_prob (DPO/KTO) and actor_update only.

In each phase every role of a pool is in one state (models.State): the active role holds its full
working set; the others are resident, offloaded to host RAM, or — for the rollout engine —
asleep (sleep level 1: weights to host, KV freed; level 2: both dropped; CUDA graphs stay).
The per-GPU peak of a pool is the max over its phases of the sum of its terms (perf-anchors.md
section 0 item 1), plus the allocator reserve in phases run by the PyTorch allocator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.constants import const
from advisor.memory.engines import (EngineFootprint, hf_generate_footprint, sglang_footprint,
                                    usable_hbm_gib, vllm_footprint)
from advisor.memory.models import (HostBudget, HostTerm, MemoryBudget, PhaseLedger, PoolBudget,
                                   State, Term)
from advisor.memory.roles import RoleSetup, backend_of, state_bytes
from advisor.memory.terms import (GIB, backward_working_bytes_per_token,
                                  forward_working_bytes_per_token, logits_bytes, param_parts,
                                  stored_activation_bytes_per_token)
from advisor.plan import Framework, Method, Plan, Role
from advisor.resolve import ResolvedPlan, resolve

TRAINER_ROLES = ("policy", "reference", "reward", "critic")
SYNC_BUCKET_GIB = 2.0
"""Weight-sync bucket cap: veRL checkpoint_engine.update_weights_bucket_megabytes default 2048."""


@dataclass
class PoolSetup:
    name: str
    gpus: int
    gpus_per_node: int
    roles: list[str]
    engine: bool


# --------------------------------------------------------------------------- set-up


def _pools(rp: ResolvedPlan) -> list[PoolSetup]:
    """The resolved pools (advisor.resolve holds the one default-pool rule)."""
    return [PoolSetup(p.name, p.gpus, p.gpus_per_node, list(p.roles), p.engine) for p in rp.pools]


def _setup_role(plan: Plan, role: str, pool: PoolSetup, notes: list[str]) -> RoleSetup:
    rp = resolve(plan)
    info = rp.role_info[Role(role)]
    rm = info.model
    spec = rp.specs[Role(role)]
    trains = info.trains
    backend = backend_of(plan)
    knobs = plan.memory
    par = info.parallel
    if backend == "fsdp":
        shard = par.fsdp_size if par.fsdp_size > 0 else pool.gpus
    elif backend == "deepspeed":
        shard = max(1, pool.gpus // par.tp)
    elif backend == "megatron":
        shard = max(1, pool.gpus // (par.tp * par.pp * par.cp))
    else:
        shard = 1
    p_off, o_off = info.param_offload, info.optimizer_offload
    lora = knobs.lora_rank if role == "policy" else 0
    setup = RoleSetup(
        name=role, spec=spec, parts=param_parts(spec), trains=trains, backend=backend,
        zero_stage=knobs.zero_stage if backend == "deepspeed" else (3 if backend == "fsdp" else 0),
        pool_gpus=pool.gpus, shard=shard, tp=par.tp if backend in ("megatron", "deepspeed") else 1,
        pp=par.pp if backend == "megatron" else 1, cp=par.cp, ep=par.ep, sp=par.sp,
        lora_rank=lora, qlora=knobs.qlora and role == "policy",
        param_offload=p_off, optimizer_offload=o_off,
        state=state_bytes(plan, rm, trains, backend))
    if role == "reference" and knobs.lora_rank and plan.framework in (Framework.VERL, Framework.TRL) \
            and (plan.reference is None or plan.reference.model == plan.policy.model):
        setup.shares_weights_with = "policy"
        notes.append("LoRA: the reference is the policy with adapters disabled (no separate weights)")
    return setup


def _seq_tokens(plan: Plan) -> tuple[float, str]:
    d = plan.data
    if plan.memory.remove_padding:
        p = d.mean_prompt_length or d.max_prompt_length
        r = d.mean_response_length or d.max_response_length
        src = "mean" if (d.mean_prompt_length or d.mean_response_length) else "max (no mean lengths given)"
        return float(p + r), f"remove-padding: {src} prompt {p} + response {r}"
    return float(d.max_seq_len), f"padded to max prompt + response = {d.max_seq_len}"


def micro_tokens(plan: Plan, role: RoleSetup, training: bool = True) -> tuple[float, str]:
    """Tokens one GPU processes per forward/backward: the token budget under dynamic batching
    (veRL ``*_max_token_len_per_gpu``, per GPU also under Ulysses SP), else micro-batch sequences x
    sequence length (actual tokens with remove-padding) divided by SP x CP.

    Either way a micro-batch cannot hold more than its data-parallel rank has: the mini-batch
    (update) or the whole batch (log-prob/value forwards) x n responses, split over the ranks —
    a 24k-token budget on a rank that only gets 12k tokens per mini-batch packs 12k."""
    b = resolve(plan).batch
    seq, how = _seq_tokens(plan)
    split = role.sp * role.cp
    n, pair = b.n, b.pair
    width = role.sp * role.cp * (role.tp * role.pp if role.backend == "megatron" else 1)
    ranks = max(1, role.pool_gpus // width)
    prompts = b.mini_batch if training else b.prompts
    rank_tokens = prompts * n * pair * seq / ranks / split
    one_seq = pair * seq / split
    if b.dynamic:
        budget = b.max_token_len_per_gpu
        t = max(min(float(budget), rank_tokens), one_seq)
        bound = " (bounded by the rank's share of the batch)" if t < budget else ""
        return t, f"dynamic batching: max_token_len_per_gpu {budget}{bound}; {how}"
    micro = b.micro_per_gpu
    t = max(min(micro * pair * seq / split, rank_tokens), one_seq)
    return t, f"{micro} seq{' x2 (pairs)' if pair == 2 else ''} x {seq:g} tok / (sp {role.sp} x cp {role.cp}); {how}"


def micro_batches_per_step(plan: Plan, role: RoleSetup) -> int:
    """Micro-batches one data-parallel rank runs per optimizer step (gradient-accumulation steps):
    the rank's share of the mini-batch divided by the tokens of one micro-batch (micro_tokens)."""
    b = resolve(plan).batch
    seq, _ = _seq_tokens(plan)
    width = role.sp * role.cp * (role.tp * role.pp if role.backend == "megatron" else 1)
    ranks = max(1, role.pool_gpus // width)
    rank_tokens = b.mini_batch_sequences * seq / ranks / (role.sp * role.cp)
    t, _ = micro_tokens(plan, role)
    return max(1, math.ceil(rank_tokens / t - 1e-9))


def _overlap_grads_with_activations(terms: list[Term], r: RoleSetup, n_micro: int) -> list[Term]:
    """FSDP frees gradients between optimizer steps (``optimizer.zero_grad()`` sets them to None
    before every mini-batch: veRL dp_actor.update_policy, torch.optim default set_to_none=True) and
    builds the sharded fp32 gradient unit by unit during backward (FSDP post-backward
    reduce-scatter), while the checkpointed activations and the logits are freed in the same walk.
    With ONE micro-batch per optimizer step the two are never both at their maximum: at the start
    of backward the activations + logits are all alive and no gradient shard exists; at its end all
    gradient shards exist and the activations are gone. Both vary linearly with the layers walked,
    so the peak is max(activations + logits, grads), i.e. the grads count only beyond the
    activations. With gradient accumulation (n_micro > 1) the previous micro-batches' gradient
    shards are alive during every backward, and the full sum stands. Source: PyTorch FSDP
    post-backward hook (_post_backward_hook / reduce-scatter into the sharded grad) and
    torch.optim.Optimizer.zero_grad(set_to_none=True)."""
    if n_micro != 1 or r.backend != "fsdp" or r.lora_rank:
        return terms
    freed = sum(t.gib for t in terms if t.name in (f"{r.name}.activations", f"{r.name}.logits"))
    out = []
    for t in terms:
        if t.name == f"{r.name}.grads":
            kept = max(0.0, t.gib - freed)
            t = Term(name=t.name, role=t.role, kind=t.kind, gib=kept,
                     formula=t.formula + f"; one micro-batch per optimizer step: the {t.gib:.2f} GiB of "
                     f"gradient shards build up while {freed:.2f} GiB of activations + logits are freed, "
                     "so only the excess counts")
        out.append(t)
    return out


# --------------------------------------------------------------------------- terms per phase


def _state_terms(r: RoleSetup, state: State, training: bool) -> list[Term]:
    """Persistent terms of a role in one state (GPU side)."""
    out: list[Term] = []
    if state == "absent" or r.shares_weights_with:
        return out
    if state in ("resident", "active"):
        if not r.params_on_host_always():
            out.append(Term(name=f"{r.name}.params", role=r.name, kind="weights", gib=r.param_gib(),
                            formula=_param_formula(r)))
        if r.trains and not r.optimizer_on_host_always():
            if state == "active" and training or not r.optimizer_offload:
                og = r.optimizer_gib()
                if og:
                    out.append(Term(name=f"{r.name}.optimizer", role=r.name, kind="optimizer", gib=og,
                                    formula=_opt_formula(r)))
        if state == "active" and training:
            gg = r.grad_gib()
            if gg:
                out.append(Term(name=f"{r.name}.grads", role=r.name, kind="grads", gib=gg,
                                formula=f"{r.state.grads:g} B/param sharded ({r.backend})"))
    elif state == "offloaded" and r.trains and not r.optimizer_offload and not r.optimizer_on_host_always():
        og = r.optimizer_gib()
        if og:
            out.append(Term(name=f"{r.name}.optimizer", role=r.name, kind="optimizer", gib=og,
                            formula=_opt_formula(r) + " (params offloaded, optimizer kept)"))
    return out


def _param_formula(r: RoleSetup) -> str:
    b = "0.5625 (nf4)" if r.qlora else f"{r.state.params:g}"
    div = {"fsdp": f"/ N={r.shard}", "deepspeed": f"/ N={r.shard}" if r.zero_stage >= 3 else "(unsharded)",
           "megatron": f"/ (tp {r.tp} x pp {r.pp})", "ddp": "(replicated)"}[r.backend]
    return f"{r.params / 1e9:.2f}B params x {b} B {div}"


def _opt_formula(r: RoleSetup) -> str:
    if r.lora_rank:
        return f"LoRA {r.lora / 1e6:.1f}M adapter params x 12 B (fp32 master + Adam)"
    div = f"/ dp {max(1, r.pool_gpus // (r.tp * r.pp * r.cp))}" if r.backend == "megatron" else f"/ N={r.shard}"
    return f"(master {r.state.master:g} + optimizer {r.state.optimizer:g}) B/param {div}"


def logits_bytes_per_element(plan: Plan) -> tuple[float, str]:
    """Bytes per (token x vocab) element at the log-prob / loss peak, by the framework's code path
    (advisor/data/memory_constants.yaml has each value's source)."""
    if plan.framework == Framework.VERL:
        return const("fused_logprob_bytes_per_element"), "veRL fused log-prob"
    if plan.framework == Framework.OPENRLHF:
        return const("openrlhf_logprob_bytes_per_element"), "OpenRLHF fp32 logits"
    if plan.method in (Method.SFT, Method.REWARD_MODEL):
        return const("hf_causal_lm_loss_bytes_per_element"), "HF causal-LM loss"
    return const("logits_bytes_per_element"), "row-wise bf16 log-softmax"


def _compute_terms(plan: Plan, r: RoleSetup, training: bool, tokens: float, tok_note: str,
                   logits: bool, entropy: bool) -> list[Term]:
    """Transient terms while a role computes: gathered units, activations, logits buffer."""
    out: list[Term] = []
    g = r.gathered_gib(training)
    if g:
        out.append(Term(name=f"{r.name}.gathered", role=r.name, kind="buffers", gib=g,
                        formula="all-gathered bf16 unit(s) + root unit" if r.backend == "fsdp"
                        else "ZeRO-3 gathered layer + prefetch"))
    s = r.spec
    tp_act = r.tp if r.backend == "megatron" else 1
    recompute = plan.memory.recompute
    trainable_norms = training and not r.lora_rank
    fused = r.backend == "megatron"  # Transformer Engine's fused RMSNorm, not HF's
    lb = 0.0
    if logits:
        bpe, source = logits_bytes_per_element(plan)
        bpe += const("entropy_bytes_per_element") if entropy else 0
        lb = logits_bytes(tokens, s.vocab_size, bytes_per_element=bpe, chunked=plan.memory.logits_chunking,
                          chunk_tokens=int(const("logits_chunk_tokens")), vocab_parallel=tp_act)
        how = "chunked" if plan.memory.logits_chunking else "unchunked"
        logits_term = Term(name=f"{r.name}.logits", role=r.name, kind="logits", gib=lb / GIB,
                           formula=f"{how}: tokens x vocab {s.vocab_size} x {bpe:g} B ({source})"
                           + (" incl. entropy" if entropy else ""))
    if training:
        stored = stored_activation_bytes_per_token(s, recompute, tp_act, trainable_norms, fused) * tokens
        how = f"{recompute} recompute, {tokens:,.0f} tokens/GPU ({tok_note})"
        if plan.memory.activation_offload:
            # veRL enable_activation_offload: checkpointed activations go to host RAM layer by
            # layer; about two layers' worth (the one computing and the one in transfer) stay.
            stored = stored * min(1.0, 2 / s.num_layers)
            how += "; activation offload keeps ~2 layers on the GPU"
        out.append(Term(name=f"{r.name}.activations", role=r.name, kind="activations", gib=stored / GIB,
                        formula=how))
        work = backward_working_bytes_per_token(s, recompute, tp_act, trainable_norms, fused) * tokens
        name, what = f"{r.name}.backward_working", "one layer rebuilt + its gradient tensors"
    else:
        work = forward_working_bytes_per_token(s, tp_act) * tokens
        name, what = f"{r.name}.forward_working", f"one layer live, {tokens:,.0f} tokens/GPU ({tok_note})"
    if lb:
        # The vocab-sized buffers live only around the lm_head (before the first layer's backward,
        # after the last layer's forward), never together with a layer's working set: the phase
        # holds max(logits, working), so the working set counts only beyond the logits.
        out.append(logits_term)
        kept = max(0.0, work - lb)
        what += f"; {work / GIB:.2f} GiB, never alive with the logits buffer, so only the excess counts"
        work = kept
    out.append(Term(name=name, role=r.name, kind="activations", gib=work / GIB, formula=what))
    return out


# --------------------------------------------------------------------------- engine


def _engine(plan: Plan, pool: PoolSetup, roles: dict[str, RoleSetup], cap: float,
            resident_at_wake: float) -> EngineFootprint:
    from advisor.catalog import count_params

    spec = roles["policy"].spec
    params = spec.params or count_params(spec)
    ro = plan.rollout
    frac = plan.memory.rollout_memory_fraction
    max_seq = plan.data.max_seq_len
    quant = plan.policy.quantization if plan.policy.quantization in ("fp8", "int8") else "none"
    if ro.engine == "vllm":
        return vllm_footprint(spec, params, ro, frac, cap, max_seq, quant)
    if ro.engine == "sglang":
        return sglang_footprint(spec, params, ro, frac, max(cap - resident_at_wake, 0.0), max_seq, quant)
    b = resolve(plan).batch
    gen = max(1, b.micro_per_gpu * b.n)
    return hf_generate_footprint(spec, gen, max_seq)


# --------------------------------------------------------------------------- the ledger


def _system_terms(pool: PoolSetup, plan: Plan) -> list[Term]:
    out = [Term(name="cuda_context", role="system", kind="system", gib=const("cuda_context_gib"),
                formula="CUDA context + library workspaces")]
    if pool.gpus > 1 or plan.rollout.tp > 1:
        out.append(Term(name="nccl", role="system", kind="system", gib=const("nccl_gib"),
                        formula="NCCL communicator buffers"))
    return out


def _phase(name: str, pool: PoolSetup, states: dict[str, State], terms: list[Term],
           cap: float, torch_phase: bool = True) -> PhaseLedger:
    """Sum a phase: a fragmentation reserve on the transient part, and in torch-allocator phases
    (everything but the rollout itself) the allocator reserve."""
    act = sum(t.gib for t in terms if t.kind == "activations")
    vocab = sum(t.gib for t in terms if t.kind == "logits")
    frag = const("fragmentation_fraction") * act + const("logits_fragmentation_fraction") * vocab
    if frag > 0:
        terms = terms + [Term(name="fragmentation", role="system", kind="system", gib=frag,
                              formula=f"{const('fragmentation_fraction'):g} x activations {act:.2f} GiB + "
                              f"{const('logits_fragmentation_fraction'):g} x vocab-sized buffers {vocab:.2f} GiB")]
    if torch_phase:
        terms = terms + [Term(name="allocator_reserve", role="system", kind="system",
                              gib=const("allocator_reserve_fraction") * cap,
                              formula=f"{const('allocator_reserve_fraction'):g} x {cap:.1f} GiB usable")]
    return PhaseLedger(phase=name, pool=pool.name, states=states, terms=terms,
                       total_gib=round(sum(t.gib for t in terms), 4))


def build_ledger(plan: Plan) -> MemoryBudget:
    """Build every phase of every pool and the verdicts (without the fix ladder)."""
    gpu = resolve(plan).gpu
    cap = usable_hbm_gib(gpu.hbm_gib)
    notes: list[str] = []
    assumptions: list[str] = []
    rp = resolve(plan)
    notes += list(rp.notes)
    needed = [r.value for r in rp.trainer_roles]
    pools = _pools(rp)
    role_pool = {r: p for p in pools for r in p.roles if r in TRAINER_ROLES}
    setups = {r: _setup_role(plan, r, role_pool[r], notes) for r in needed}
    seq, seq_note = _seq_tokens(plan)
    assumptions.append(f"sequence length for activations: {seq_note}")
    assumptions.append(f"usable HBM {cap:.2f} GiB = {gpu.hbm_gib:g} x {const('usable_hbm_fraction'):g} ({gpu.name})")

    entropy = plan.algorithm.entropy_coeff > 0
    phases: list[PhaseLedger] = []
    budgets: list[PoolBudget] = []
    host_phase: dict[str, float] = {}
    host_terms_best: list[HostTerm] = []
    host_cap = plan.hardware.host_memory_gb * 1e9 / GIB

    for pool in pools:
        here = {r: setups[r] for r in needed if r in pool.roles}
        colocated_trainers = bool(here)
        sleeps = pool.engine and colocated_trainers and plan.rollout.sleep_level > 0
        sys_terms = _system_terms(pool, plan)
        pool_phases: list[PhaseLedger] = []
        failed: str | None = None
        engine: EngineFootprint | None = None

        def parked_state(r: RoleSetup) -> State:
            return "offloaded" if r.param_offload else "resident"

        def parked_terms(exclude: str | None) -> tuple[dict[str, State], list[Term]]:
            st: dict[str, State] = {}
            ts: list[Term] = []
            for name, r in here.items():
                if name == exclude:
                    continue
                s = parked_state(r)
                st[name] = s
                ts += _state_terms(r, s, training=False)
            return st, ts

        def engine_parked_terms() -> tuple[State, list[Term]]:
            if engine is None:
                return "absent", []
            if not sleeps:
                return "resident", [Term(name="rollout.engine_budget", role="rollout", kind="engine",
                                         gib=engine.budget_gib, formula=engine.note + " (engine not slept)"),
                                    *([Term(name="rollout.cuda_graphs", role="rollout", kind="engine",
                                            gib=engine.graphs_gib, formula="CUDA graph pool")]
                                      if engine.graphs_gib else [])]
            ts = []
            if engine.graphs_gib:
                ts.append(Term(name="rollout.cuda_graphs", role="rollout", kind="engine",
                               gib=engine.graphs_gib, formula="CUDA graphs stay while the engine sleeps"))
            return "asleep", ts

        if pool.engine:
            _, parked = parked_terms(None)
            resident_at_wake = sum(t.gib for t in parked + sys_terms)
            engine = _engine(plan, pool, setups, cap, resident_at_wake)
            if engine.engine in ("vllm", "sglang") and engine.kv_gib <= 0:
                failed = (f"{engine.engine}: no memory left for the KV cache (budget {engine.budget_gib:.2f} GiB "
                          f"< weights {engine.weights_gib:.2f} + profile {engine.profile_gib:.2f})")
            elif engine.engine in ("vllm", "sglang") and engine.max_concurrent_seqs < 1:
                failed = (f"{engine.engine}: KV cache {engine.kv_gib:.2f} GiB holds less than one "
                          f"{plan.data.max_seq_len}-token sequence")
            notes.append(f"pool {pool.name}: {engine.note}; KV {engine.kv_bytes_per_token / 1024:.1f} KiB/token/GPU, "
                         f"~{engine.max_concurrent_seqs:,.0f} concurrent max-length sequences")

        # -- weight sync and rollout
        if engine is not None:
            st, ts = parked_terms(None)
            if "policy" in here and colocated_trainers:
                pol = here["policy"]
                st["policy"] = "active"
                ts = [t for t in ts if not t.name.startswith("policy.")]
                ts += _state_terms(pol, "resident", training=False)
                bucket = min(pol.parts.largest_layer * 2 / pol.tp / GIB, SYNC_BUCKET_GIB)
                ts.append(Term(name="policy.sync_bucket", role="policy", kind="buffers", gib=bucket,
                               formula="one unsharded bf16 layer in flight to the engine"))
            st["rollout"] = "active"
            sync_terms = ts + [Term(name="rollout.weights", role="rollout", kind="engine",
                                    gib=engine.weights_gib, formula="engine weights woken first")]
            if engine.graphs_gib:
                sync_terms.append(Term(name="rollout.cuda_graphs", role="rollout", kind="engine",
                                       gib=engine.graphs_gib, formula="CUDA graph pool"))
            pool_phases.append(_phase("weight_sync", pool, st, sys_terms + sync_terms, cap))

            st, ts = parked_terms(None)
            st["rollout"] = "active"
            eng_terms = [Term(name="rollout.engine_budget", role="rollout", kind="engine",
                              gib=engine.budget_gib, formula=engine.note)]
            if engine.graphs_gib:
                eng_terms.append(Term(name="rollout.cuda_graphs", role="rollout", kind="engine",
                                      gib=engine.graphs_gib, formula="outside gpu_memory_utilization"))
            ph = _phase("rollout", pool, st, sys_terms + ts + eng_terms, cap, torch_phase=False)
            if engine.engine == "vllm" and ph.total_gib > cap:
                free = cap - (ph.total_gib - engine.budget_gib)
                ph.check = (f"vLLM refuses to start/wake: free {free:.2f} GiB < requested "
                            f"{engine.budget_gib:.2f} GiB (= {plan.memory.rollout_memory_fraction:g} x total)")
            pool_phases.append(ph)

        # -- forward phases
        def fwd_phase(name: str, role: str, logits: bool) -> None:
            if role not in here:
                return
            r = here[role]
            active = here.get(r.shares_weights_with, r) if r.shares_weights_with else r
            st, ts = parked_terms(active.name)
            st[role] = "active"
            if r.shares_weights_with:
                st[active.name] = "active"
            es, ets = engine_parked_terms()
            if engine is not None:
                st["rollout"] = es
            tokens, note = micro_tokens(plan, active, training=False)
            ts += _state_terms(active, "active", training=False)
            ts += _compute_terms(plan, active, False, tokens, note, logits=logits, entropy=False)
            pool_phases.append(_phase(name, pool, st, sys_terms + ts + ets, cap))

        if plan.is_online:
            fwd_phase("reward_forward", "reward", logits=False)
            fwd_phase("old_log_prob", "policy", logits=True)
        fwd_phase("ref_log_prob", "reference", logits=True)
        if plan.is_online:
            fwd_phase("critic_values", "critic", logits=False)

        # -- updates
        def update_phase(name: str, role: str, logits: bool) -> None:
            if role not in here:
                return
            r = here[role]
            st, ts = parked_terms(role)
            st[role] = "active"
            es, ets = engine_parked_terms()
            if engine is not None:
                st["rollout"] = es
            tokens, note = micro_tokens(plan, r)
            ts += _state_terms(r, "active", training=True)
            ts += _compute_terms(plan, r, True, tokens, note, logits=logits, entropy=entropy and logits)
            ts = _overlap_grads_with_activations(ts, r, micro_batches_per_step(plan, r))
            pool_phases.append(_phase(name, pool, st, sys_terms + ts + ets, cap))

        update_phase("critic_update", "critic", logits=False)
        update_phase("actor_update", "policy", logits=plan.method != Method.REWARD_MODEL)

        # -- verdict
        if not pool_phases:
            continue
        binding = max(pool_phases, key=lambda p: p.total_gib)
        check_fail = next((p for p in pool_phases if p.check), None)
        peak = binding.total_gib
        fits = peak <= cap and failed is None and check_fail is None
        bterm = binding.largest_term()
        budgets.append(PoolBudget(
            name=pool.name, roles=pool.roles, gpus=pool.gpus, capacity_gib=round(cap, 3),
            peak_gib=round(peak, 3), headroom_gib=round(cap - peak, 3), fits=fits,
            binding_phase=binding.phase, binding_term=bterm.name if bterm else "",
            failed_check=failed or (check_fail.check if check_fail else None)))
        phases += pool_phases

        # -- host RAM (per GPU of this pool, per phase) -> per node
        per_node = min(pool.gpus, pool.gpus_per_node)
        for ph in pool_phases:
            hts = _host_terms(ph, here, engine, plan)
            total = sum(t.gib for t in hts) * per_node
            key = ph.phase
            host_phase[key] = host_phase.get(key, 0.0) + total
            if host_phase[key] >= max(host_phase.values()):
                host_terms_best = [HostTerm(name=t.name, gib=round(t.gib * per_node, 3),
                                            formula=t.formula + f" x {per_node} GPUs/node") for t in hts]

    host_peak = max(host_phase.values()) if host_phase else 0.0
    host = HostBudget(capacity_gib=round(host_cap, 2), peak_gib=round(host_peak, 2),
                      fits=host_peak <= host_cap, terms=host_terms_best)
    fits = all(b.fits for b in budgets) and host.fits
    if not host.fits:
        notes.append(f"host RAM: peak {host_peak:.0f} GiB per node exceeds {host_cap:.0f} GiB")
    return MemoryBudget(fits=fits, framework=plan.framework, gpu=gpu.name, pools=budgets, phases=phases,
                        host=host, assumptions=assumptions, notes=notes)


def _host_terms(ph: PhaseLedger, here: dict[str, RoleSetup], engine: EngineFootprint | None,
                plan: Plan) -> list[HostTerm]:
    """Host bytes per GPU during one phase: offloaded states, CPU Adam, sleeping engine weights,
    pinned staging buffers and the worker process itself."""
    out = [HostTerm(name="worker_process", gib=const("host_process_gib"), formula="per GPU worker")]
    offloaded = 0.0
    for name, r in here.items():
        if r.shares_weights_with:
            continue
        st = ph.states.get(name, "absent")
        if r.params_on_host_always() or (st == "offloaded"):
            g = r.param_gib() if not r.params_on_host_always() else \
                r.params * r.state.params / r.shard / GIB
            out.append(HostTerm(name=f"{name}.params", gib=round(g, 3), formula="offloaded parameters"))
            offloaded += g
        if r.trains:
            if r.optimizer_on_host_always():
                g = r.optimizer_gib()
                if r.backend == "deepspeed":  # ZeRO-Offload also keeps fp32 grad partitions on the host
                    g += r.mp_params() * 4 / (r.shard if r.zero_stage >= 2 else 1) / GIB
                out.append(HostTerm(name=f"{name}.cpu_adam", gib=round(g, 3),
                                    formula="fp32 master + Adam moments + fp32 grads (CPU Adam)"))
                offloaded += g
            elif r.optimizer_offload and st != "active":
                g = r.optimizer_gib()
                out.append(HostTerm(name=f"{name}.optimizer", gib=round(g, 3), formula="offloaded optimizer"))
                offloaded += g
    if engine is not None and ph.states.get("rollout") == "asleep" and plan.rollout.sleep_level == 1:
        out.append(HostTerm(name="rollout.sleep_weights", gib=round(engine.host_sleep_gib, 3),
                            formula="vLLM sleep level 1 keeps the weights in host RAM"))
        offloaded += engine.host_sleep_gib
    if offloaded:
        out.append(HostTerm(name="pinned_staging", gib=round(offloaded * const("pinned_staging_fraction"), 3),
                            formula=f"{const('pinned_staging_fraction'):g} x offloaded"))
    return out
