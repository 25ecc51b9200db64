"""Rollout-engine memory semantics: vLLM V1, SGLang, and HF generate.

vLLM V1 (gpu_worker.py; veRL docs/perf/perf_tuning.rst):
  * requested = total_memory x gpu_memory_utilization — a fraction of TOTAL memory, per instance;
  * the engine refuses to start (and a colocated wake-up runs out) when free memory < requested:
    whatever the trainer still holds counts against ``free``;
  * KV pool = requested - weights - profile-run activation peak - non-torch memory;
  * CUDA graphs are captured after the KV pool and live OUTSIDE the budget; they are not slept.
SGLang: mem_fraction_static is a fraction of the FREE memory at start-up used for weights + KV;
  the remaining (1 - f) is also used during inference (veRL perf_tuning.rst).
Sleep (vLLM sleep mode / SGLang release_memory_occupation): level 1 offloads weights to host RAM
  and discards the KV cache; level 2 discards both (HF blog vllm-colocate; veRL hybrid engine).
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.constants import const
from advisor.memory.terms import GIB, kv_bytes_per_token, mlp_width
from advisor.plan import ModelSpec, Rollout


@dataclass(frozen=True)
class EngineFootprint:
    """Per-GPU engine memory (GiB) while awake and while asleep, plus its diagnostics."""

    engine: str
    budget_gib: float  # the memory the engine claims while awake (weights + KV + profile)
    weights_gib: float
    kv_gib: float
    profile_gib: float
    graphs_gib: float  # outside the budget, resident even when asleep
    kv_bytes_per_token: float
    max_concurrent_seqs: float  # KV pool / (kv per token x max sequence length)
    requires_free_gib: float  # what must be free when the engine starts or wakes
    host_sleep_gib: float  # host RAM for sleep level 1 weight copies (per GPU)
    note: str


def engine_weights_gib(params: int, tp: int, quantization: str = "none") -> float:
    """Engine weights per GPU: all parameters in bf16 (1 byte for fp8/int8, 0.5625 for nf4),
    sharded by the engine TP degree (vLLM shards attention, MLP and experts over TP)."""
    b = {"none": 2.0, "fp8": 1.0, "int8": 1.0, "nf4": const("qlora_bytes_per_param")}[quantization]
    return params * b / tp / GIB


def profile_activation_gib(spec: ModelSpec, rollout: Rollout) -> float:
    """vLLM's profile run: a dummy forward at max_num_batched_tokens plus the sampler over
    max_num_seqs sequences (fp32 logits and probabilities). One layer's activations are live at
    a time (no grad): residual + QKV + attention out + the MLP width, divided by TP."""
    tp = rollout.tp
    h = spec.hidden_size
    q = spec.num_heads * spec.head_dim
    kv = spec.num_kv_heads * spec.head_dim
    per_token = 2 * (3 * h + (2 * q + 2 * kv) / tp + 3 * mlp_width(spec) / tp)
    act = rollout.max_num_batched_tokens * per_token
    sampler = rollout.max_num_seqs * spec.vocab_size * const("vllm_sampler_bytes_per_vocab")
    return (act + sampler) / GIB


def vllm_footprint(spec: ModelSpec, params: int, rollout: Rollout, fraction: float,
                   capacity_gib: float, max_seq_len: int, quantization: str = "none") -> EngineFootprint:
    """vLLM V1 on one GPU: budget = capacity x fraction (total-memory semantics)."""
    budget = capacity_gib * fraction
    weights = engine_weights_gib(params, rollout.tp, quantization)
    profile = profile_activation_gib(spec, rollout)
    kv = budget - weights - profile
    graphs = 0.0 if rollout.enforce_eager else const("cuda_graph_gib")
    kvt = kv_bytes_per_token(spec, rollout.tp, context=max_seq_len)
    seqs = max(kv, 0.0) * GIB / (kvt * max_seq_len) if max_seq_len else 0.0
    note = (f"vLLM V1: budget {fraction:g} x {capacity_gib:.1f} GiB total = {budget:.2f} GiB "
            f"(weights {weights:.2f}, profile {profile:.2f}, KV {kv:.2f}); CUDA graphs "
            f"{graphs:.2f} GiB outside the budget")
    return EngineFootprint("vllm", budget, weights, kv, profile, graphs, kvt, seqs, budget, weights, note)


def sglang_footprint(spec: ModelSpec, params: int, rollout: Rollout, fraction: float,
                     free_gib: float, max_seq_len: int, quantization: str = "none") -> EngineFootprint:
    """SGLang: static pool = mem_fraction_static x FREE memory at start (weights + KV); the rest of
    the free memory is left for activations and also used while decoding."""
    static = free_gib * fraction
    weights = engine_weights_gib(params, rollout.tp, quantization)
    profile = profile_activation_gib(spec, rollout)
    kv = static - weights
    graphs = 0.0 if rollout.enforce_eager else const("cuda_graph_gib")
    kvt = kv_bytes_per_token(spec, rollout.tp, context=max_seq_len)
    seqs = max(kv, 0.0) * GIB / (kvt * max_seq_len) if max_seq_len else 0.0
    note = (f"SGLang: static {fraction:g} x {free_gib:.1f} GiB free = {static:.2f} GiB "
            f"(weights {weights:.2f}, KV {kv:.2f}) + activations {profile:.2f} outside it")
    return EngineFootprint("sglang", static + profile, weights, kv, profile, graphs, kvt, seqs,
                           static + profile, weights, note)


def hf_generate_footprint(spec: ModelSpec, batch_seqs: int, max_seq_len: int, tp: int = 1) -> EngineFootprint:
    """Generation with the training model (TRL without vLLM): no separate weights, a dense KV
    cache for every sequence of the generation batch at full length."""
    kvt = kv_bytes_per_token(spec, tp, context=max_seq_len)
    kv = batch_seqs * max_seq_len * kvt / GIB
    note = f"HF generate: dense KV for {batch_seqs} sequences x {max_seq_len} tokens"
    return EngineFootprint("hf", kv, 0.0, kv, 0.0, 0.0, kvt, float(batch_seqs), 0.0, 0.0, note)


def usable_hbm_gib(hbm_gib: float) -> float:
    """What one GPU's driver exposes of its marketed capacity (the budget every engine and the
    ledger work in)."""
    return hbm_gib * const("usable_hbm_fraction")


def rollout_kv_pool(spec: ModelSpec, params: int, rollout: Rollout, fraction: float, hbm_gib: float,
                    max_seq_len: int, quantization: str = "none") -> tuple[float, float]:
    """The rollout engine's KV pool on one GPU (GiB) and its KV bytes per token: THE formula the
    memory ledger and the time model share. vLLM: fraction x usable HBM - weights - profile run;
    SGLang: fraction x free memory - weights (free = usable HBM when nothing else is resident)."""
    cap = usable_hbm_gib(hbm_gib)
    q = quantization if quantization in ("fp8", "int8") else "none"
    if rollout.engine == "sglang":
        fp = sglang_footprint(spec, params, rollout, fraction, cap, max_seq_len, q)
    else:
        fp = vllm_footprint(spec, params, rollout, fraction, cap, max_seq_len, q)
    return fp.kv_gib, fp.kv_bytes_per_token
