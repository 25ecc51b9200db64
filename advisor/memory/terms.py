"""Memory formulas, each written once with its source.

Pure arithmetic on ``ModelSpec`` dimensions: parameter parts, LoRA adapter size, model-state bytes
under ZeRO / FSDP / Megatron, activations per token, logits buffers and KV cache per token. The
reference estimators we compare against (ZeRO paper, DeepSpeed's estimators, accelerate's
estimate-memory) are here too, so their numbers are reproduced exactly by tests.

Units: bytes unless the name ends in ``_gib`` / ``_gb``.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.plan import ModelSpec

GIB = 2**30
GB = 10**9


# --------------------------------------------------------------------------- parameters


@dataclass(frozen=True)
class ParamParts:
    """Parameter count split the way memory is laid out: embeddings, head, decoder layers."""

    embedding: int
    lm_head: int  # 0 when tied to the embedding
    layers: int  # all decoder layers together
    largest_layer: int  # the biggest single decoder layer (an FSDP / ZeRO-3 gather unit)
    expert: int  # expert (MoE) parameters inside ``layers`` (divided by EP in Megatron)
    final_norm: int

    @property
    def total(self) -> int:
        return self.embedding + self.lm_head + self.layers + self.final_norm


def _attention_params(s: ModelSpec) -> int:
    """Attention weights of one layer. GQA/MHA: q, k, v, o (+bias, +q/k norm). MLA (DeepSeek-V2/V3
    modeling code): q_a/q_b (or q), kv_a with rope part, kv_b, o, and the two latent norms."""
    h = s.hidden_size
    if s.attention == "mla":
        qk = s.qk_nope_head_dim + s.qk_rope_head_dim
        if s.q_lora_rank:
            q = h * s.q_lora_rank + s.q_lora_rank + s.q_lora_rank * s.num_heads * qk
        else:
            q = h * s.num_heads * qk
        kv = h * (s.kv_lora_rank + s.qk_rope_head_dim) + s.kv_lora_rank + \
            s.kv_lora_rank * s.num_heads * (s.qk_nope_head_dim + s.v_head_dim)
        o = s.num_heads * s.v_head_dim * h
        return q + kv + o
    q = s.num_heads * s.head_dim
    kv = s.num_kv_heads * s.head_dim
    n = h * q + 2 * h * kv + q * h
    if s.qkv_bias:
        n += q + 2 * kv
    if s.qk_norm:
        n += 2 * s.head_dim
    return n


def _moe_layer_params(s: ModelSpec) -> tuple[int, int]:
    """(expert params, other MoE params) of one MoE layer: gated experts, shared experts, router."""
    h = s.hidden_size
    experts = s.num_experts * 3 * h * s.moe_intermediate_size
    shared = s.num_shared_experts * 3 * h * s.moe_intermediate_size
    router = h * s.num_experts
    return experts, shared + router


def param_parts(s: ModelSpec) -> ParamParts:
    """Parameter parts from the dimensions (HF modeling layout: gated MLP, two RMSNorms per layer).

    When ``spec.params`` is set (the catalog count, equal to transformers' meta-device count), the
    layers are scaled so that the total matches it exactly; the dims formula only splits it.
    """
    h = s.hidden_size
    emb = s.vocab_size * h
    head = 0 if s.tie_embeddings else s.vocab_size * h
    attn = _attention_params(s)
    norms = 2 * h
    dense_layer = attn + 3 * h * s.intermediate_size + norms
    if s.is_moe:
        ex, other = _moe_layer_params(s)
        moe_layer = attn + ex + other + norms
        n_dense = min(s.first_k_dense_layers, s.num_layers)
        n_moe = s.num_layers - n_dense
        layers = n_dense * dense_layer + n_moe * moe_layer
        expert = n_moe * ex
        largest = max(moe_layer, dense_layer if n_dense else 0)
    else:
        layers = s.num_layers * dense_layer
        expert = 0
        largest = dense_layer
    final_norm = h
    computed = emb + head + layers + final_norm
    if s.params and s.params != computed and layers > 0:
        scale = (s.params - emb - head - final_norm) / layers
        if scale > 0:
            layers = int(round(layers * scale))
            largest = int(round(largest * scale))
            expert = int(round(expert * scale))
    return ParamParts(embedding=emb, lm_head=head, layers=layers, largest_layer=largest,
                      expert=expert, final_norm=final_norm)


def lora_params(s: ModelSpec, rank: int) -> int:
    """LoRA adapter parameters for target_modules=all-linear: rank x (in + out) per linear layer
    (A is in x r, B is r x out), every decoder layer; experts are adapted too when MoE.
    Source: Hu et al. 2021 (LoRA) parameter count; PEFT's all-linear excludes the lm_head."""
    if rank <= 0:
        return 0
    h = s.hidden_size
    if s.attention == "mla":
        qk = s.qk_nope_head_dim + s.qk_rope_head_dim
        attn = (h + s.num_heads * qk) + (h + s.kv_lora_rank + s.qk_rope_head_dim) + \
            (s.kv_lora_rank + s.num_heads * (s.qk_nope_head_dim + s.v_head_dim)) + \
            (s.num_heads * s.v_head_dim + h)
    else:
        q = s.num_heads * s.head_dim
        kv = s.num_kv_heads * s.head_dim
        attn = (h + q) + 2 * (h + kv) + (q + h)
    if s.is_moe:
        per_expert = 2 * (h + s.moe_intermediate_size) + (s.moe_intermediate_size + h)
        mlp = (s.num_experts + s.num_shared_experts) * per_expert
    else:
        mlp = 2 * (h + s.intermediate_size) + (s.intermediate_size + h)
    return rank * s.num_layers * (attn + mlp)


# --------------------------------------------------------------------------- model states


@dataclass(frozen=True)
class StateBytes:
    """Bytes per parameter of each persistent training state, before sharding."""

    params: float
    grads: float
    master: float
    optimizer: float

    @property
    def total(self) -> float:
        return self.params + self.grads + self.master + self.optimizer


def zero_paper_model_states(params: float, stage: int, n_d: int, k: float = 12.0) -> float:
    """Per-GPU model-state bytes of mixed-precision Adam under ZeRO (Rajbhandari et al. 2019,
    arXiv 1910.02054, section 3 and Table 1): fp16 params 2, fp16 grads 2, K = 12 optimizer bytes
    (fp32 master 4 + momentum 4 + variance 4).

    stage 0 (DDP) (2+2+K)Psi; 1 (P_os) 4Psi + K Psi/N; 2 (P_os+g) 2Psi + (2+K)Psi/N;
    3 (P_os+g+p) (2+2+K)Psi/N.
    """
    if stage == 0:
        return (4 + k) * params
    if stage == 1:
        return 4 * params + k * params / n_d
    if stage == 2:
        return 2 * params + (2 + k) * params / n_d
    if stage == 3:
        return (4 + k) * params / n_d
    raise ValueError(f"ZeRO stage must be 0-3, got {stage}")


def deepspeed_zero2_estimate(total_params: float, num_gpus_per_node: int, num_nodes: int,
                             cpu_offload: bool, additional_buffer_factor: float = 1.5
                             ) -> tuple[float, float]:
    """DeepSpeed ``estimate_zero2_model_states_mem_needs`` as in the CODE
    (deepspeed/runtime/zero/stage_1_and_2.py @ 38327e07): returns (gpu_bytes, cpu_bytes) per GPU /
    per node. offload: gpu 2P, cpu P*max(4*total_gpus, 16)*1.5; else gpu 2P + 18P/total_gpus,
    cpu 4P*gpus_per_node*1.5."""
    total_gpus = num_nodes * num_gpus_per_node
    if cpu_offload:
        gpu = 2 * total_params
        cpu = total_params * max(4 * total_gpus, 16) * additional_buffer_factor
    else:
        gpu = 2 * total_params + 18 * total_params / total_gpus
        cpu = total_params * 4 * num_gpus_per_node * additional_buffer_factor
    return gpu, cpu


def deepspeed_zero2_doc_estimate(total_params: float, total_gpus: int, cpu_offload: bool) -> float:
    """The ZeRO-2 GPU figure printed in DeepSpeed's docs (docs/code-docs/source/memory.rst): the
    OLD formula 4P + 16P/N without offload (15.93 GiB for t5-3b on 8 GPUs) and 2P with offload.
    Kept only to show the doc/code difference; budget_memory follows the code (2P + 18P/N)."""
    if cpu_offload:
        return 2 * total_params
    return 4 * total_params + 16 * total_params / total_gpus


def deepspeed_zero3_estimate(total_params: float, largest_layer_params: float,
                             num_gpus_per_node: int, num_nodes: int, offload_params: bool,
                             offload_optimizer: bool, zero_init: bool = True,
                             additional_buffer_factor: float = 1.5) -> tuple[float, float]:
    """DeepSpeed ``estimate_zero3_model_states_mem_needs`` (deepspeed/runtime/zero/stage3.py
    @ 38327e07): (gpu_bytes per GPU, cpu_bytes per node). largest_layer_memory = 4 * largest layer
    params (fp16 params + grads of one gathered layer)."""
    total_gpus = num_nodes * num_gpus_per_node
    gpus_factor = 1 / num_nodes
    llm = 4 * largest_layer_params
    if offload_params and offload_optimizer:
        gpu = llm
        cpu = total_params * 18 * gpus_factor * additional_buffer_factor if zero_init else \
            max(total_params * 4 * num_gpus_per_node, total_params * 18 * gpus_factor) * \
            additional_buffer_factor
    elif offload_optimizer:
        gpu = llm + 2 * total_params / total_gpus
        cpu = total_params * 16 * gpus_factor * additional_buffer_factor if zero_init else \
            max(total_params * 4 * num_gpus_per_node, total_params * 16 * gpus_factor) * \
            additional_buffer_factor
    else:
        gpu = llm + 18 * total_params / total_gpus
        cpu = llm * num_gpus_per_node * additional_buffer_factor if zero_init else \
            total_params * 4 * num_gpus_per_node * additional_buffer_factor
    return gpu, cpu


def accelerate_estimate(fp32_bytes: float, dtype: str) -> dict[str, float]:
    """accelerate ``estimate-memory`` (src/accelerate/commands/estimate.py @ 16cb6eb8,
    ``estimate_training_usage``). It measures the fp32 size of a meta-device model and prints
    "Training using Adam" = max(model, gradients, optimizer, step) — the MAX of the parts, not
    their sum:

    float32:        model 4P, gradients 4P, optimizer 8P, step 16P -> 16 bytes/param
    float16/bf16:   model 4P, gradients 6P, optimizer 8P, step 8P  -> 8 bytes/param
    ``fp32_bytes`` is what the tool measures on the meta-device model: parameters at 4 bytes plus
    buffers at their own dtype (BertModel's int64 position_ids/token_type_ids count).
    The "total size" column is that for float32 and half of it for float16 (int8 /4, int4 /8);
    its bfloat16 row keeps the fp32 size (the tool only halves for "float16").
    """
    fp32 = float(fp32_bytes)
    if dtype == "float32":
        parts = {"model": fp32, "gradients": fp32, "optimizer": 2 * fp32, "step": 4 * fp32}
    elif dtype in ("float16", "bfloat16"):
        parts = {"model": fp32, "gradients": fp32 + fp32 / 2, "optimizer": 2 * fp32,
                 "step": 2 * fp32}
    else:
        parts = {"model": -1, "gradients": -1, "optimizer": -1, "step": -1}
    total = {"float32": fp32, "float16": fp32 / 2, "int8": fp32 / 4, "int4": fp32 / 8}.get(dtype, fp32)
    out = dict(parts)
    out["total_size"] = total
    out["training_adam"] = max(parts.values())
    return out


# --------------------------------------------------------------------------- activations


def rmsnorm_bytes_per_token(h: int, trainable: bool = True, fused: bool = False) -> float:
    """What one RMSNorm keeps for backward, per token.

    HF modelling code (FSDP / DeepSpeed backends): the fp32 upcast of its input (4h, used by pow
    and mul), its bf16 output (2h, saved by the next linear) and, when the norm weight trains, the
    normalised input of ``weight * x`` (2h); the bf16 input itself is not saved (``.to()`` saves
    nothing). Measured: benchmarks/activation_calibration.py (exact fit, residual 0).
    Fused norm (Megatron / Transformer Engine): input and output in bf16, 2h each (Korthikanti)."""
    if fused:
        return 4 * h
    return (4 + 2 + (2 if trainable else 0)) * h


def activation_bytes_per_token_layer(s: ModelSpec, tp: int = 1, trainable_norms: bool = True,
                                     fused_norms: bool = False) -> float:
    """Activations one decoder layer keeps for backward, per token, bf16, with FlashAttention,
    no dropout and a gated (SwiGLU) MLP — Korthikanti et al. 2022 ("Reducing Activation
    Recomputation", arXiv 2205.05198) with the modern corrections of perf-anchors.md section 1.4
    (no 5as^2 term: FlashAttention keeps only the fp32 log-sum-exp, 4 bytes per head; no dropout
    masks; GQA-sized K/V; SwiGLU storing gate, up, act(gate) and the product, 8 bytes x I), and
    the norms as HF's RMSNorm really keeps them (rmsnorm_bytes_per_token).

    attention: norm + 2*(q + 2kv [Q,K,V] + q [attention out]) + 4*heads
    MLP:       norm + 2*4*I_eff  (+ 4*E fp32 router logits for MoE)
    With tensor + sequence parallelism everything is divided by tp (Megatron SP).

    Checked against the real modelling code (transformers Qwen2, bf16, q = h, kv = h/4):
    benchmarks/activation_calibration.py measures 21.07h + 8I per layer with trainable norms and
    17.22h + 8I with a frozen base (PEFT LoRA); this formula gives 21.06h + 8I and 17.06h + 8I.
    """
    h = s.hidden_size
    norm = rmsnorm_bytes_per_token(h, trainable_norms, fused_norms)
    if s.attention == "mla":
        qk = s.qk_nope_head_dim + s.qk_rope_head_dim
        q = s.num_heads * qk
        kv = s.num_heads * qk + s.num_heads * s.v_head_dim
        attn_out = s.num_heads * s.v_head_dim
        attn = norm + 2 * (q + kv + attn_out + s.kv_lora_rank + s.qk_rope_head_dim) + 4 * s.num_heads
    else:
        q = s.num_heads * s.head_dim
        kv = s.num_kv_heads * s.head_dim
        attn = norm + 2 * (q + 2 * kv + q) + 4 * s.num_heads
    mlp = norm + 2 * 4 * mlp_width(s)
    if s.is_moe:
        mlp += 4 * s.num_experts
    return (attn + mlp) / tp


def mlp_width(s: ModelSpec) -> int:
    """Intermediate width a token passes through: I for dense, k routed + shared experts for MoE."""
    if s.is_moe:
        return (s.experts_per_token + s.num_shared_experts) * s.moe_intermediate_size
    return s.intermediate_size


def stored_activation_bytes_per_token(s: ModelSpec, recompute: str, tp: int = 1,
                                      trainable_norms: bool = True, fused_norms: bool = False) -> float:
    """Bytes per token that ALL layers keep between forward and backward.

    full recompute: only each layer's input, 2h bytes (Korthikanti: 2sbh per layer; measured
    exactly 2.00h by benchmarks/activation_calibration.py);
    selective: the attention core is recomputed (Q, K, V and attention output are not kept);
    none: the whole layer (activation_bytes_per_token_layer).
    """
    h = s.hidden_size
    per_layer = activation_bytes_per_token_layer(s, tp, trainable_norms, fused_norms)
    if recompute == "full":
        per_layer = 2 * h / tp
    elif recompute == "selective":
        per_layer = max(per_layer - _attention_core_bytes(s, tp), 2 * h / tp)
    return per_layer * s.num_layers


def _attention_core_bytes(s: ModelSpec, tp: int) -> float:
    """Q, K, V and the attention output of one layer (what selective recompute drops), per token."""
    if s.attention == "mla":
        core = s.num_heads * (2 * (s.qk_nope_head_dim + s.qk_rope_head_dim) + 2 * s.v_head_dim)
    else:
        core = 2 * s.num_heads * s.head_dim + 2 * s.num_kv_heads * s.head_dim
    return 2 * core / tp


def backward_working_bytes_per_token(s: ModelSpec, recompute: str, tp: int = 1,
                                     trainable_norms: bool = True, fused_norms: bool = False) -> float:
    """Transient bytes per token while one layer runs backward, above what all layers store.

    full recompute: the layer's activations rebuilt (one layer's worth) plus its gradient tensors
    at the worst moment, 2h + 4I (measured: the peak of a real backward is 23.06h + 12I above
    the stored inputs with a trainable model and 19.06h + 12I with a frozen LoRA base, i.e. the
    rebuilt layer of activation_bytes_per_token_layer + 2h + 4I in both cases);
    selective: the attention core rebuilt plus the same gradient tensors;
    none: nothing is rebuilt; the measured excess at the peak is 24h (no I term: the MLP's
    gradient tensors are smaller than the stored activations they replace).
    Source: benchmarks/activation_calibration.py (transformers Qwen2 + PEFT, exact linear fit)."""
    h = s.hidden_size
    grads = (2 * h + 4 * mlp_width(s)) / tp
    if recompute == "full":
        return activation_bytes_per_token_layer(s, tp, trainable_norms, fused_norms) + grads
    if recompute == "selective":
        return _attention_core_bytes(s, tp) + grads
    return 24 * h / tp


def forward_working_bytes_per_token(s: ModelSpec, tp: int = 1) -> float:
    """Transient bytes per token of a no-grad forward (log-prob, reward, values): at most one
    layer's tensors are alive, and nothing is kept for backward. Measured on the real modelling
    code: 8h + 6I (the MLP's gate, up and product, and the residual stream with the norm's fp32
    copy); source: benchmarks/activation_calibration.py."""
    return (8 * s.hidden_size + 6 * mlp_width(s)) / tp


def logits_bytes(tokens: float, vocab: int, *, bytes_per_element: float, chunked: bool,
                 chunk_tokens: int, vocab_parallel: int = 1) -> float:
    """The vocab-sized buffer: tokens x vocab x bytes (bf16 lm_head output + fp32 log-softmax, +1
    for an unchunked entropy). Chunked/fused log-prob and entropy keep one chunk at a time.
    Megatron splits the vocabulary over TP (vocab-parallel cross-entropy).
    Source: perf-anchors.md section 1.4; veRL entropy_from_logits_with_chunking."""
    t = min(tokens, chunk_tokens) if chunked else tokens
    return t * vocab * bytes_per_element / vocab_parallel


# --------------------------------------------------------------------------- KV cache


def kv_bytes_per_token(s: ModelSpec, tp: int = 1, dtype_bytes: int = 2, context: float | None = None) -> float:
    """KV cache bytes per token on one GPU, averaged over a sequence of ``context`` tokens.

    MHA/GQA/MQA: 2 * L * max(n_kv / tp, 1) * d_head * bytes — KV heads are replicated when
    tp > n_kv (llm-analysis ``max(kv/t, 1)``; vLLM replicates KV heads).
    MLA (DeepSeek-V2/V3): L * (kv_lora_rank + qk_rope_head_dim) * bytes, the compressed latent,
    not split by TP. Source: perf-anchors.md section 1.6.
    Sliding windows (Mistral v0.1, Gemma-2/3, GPT-OSS): a windowed layer keeps at most
    ``sliding_window`` tokens, so over a sequence of ``context`` tokens it costs
    min(1, window / context) of a full layer per token (vLLM's hybrid KV cache manager frees the
    blocks that leave the window: vllm/v1/core/single_type_kv_cache_manager.py
    SlidingWindowManager; HF's cache keeps a window-sized buffer for those layers). Without
    ``context`` every layer counts in full (an upper bound).
    """
    if s.attention == "mla":
        per_layer = (s.kv_lora_rank + s.qk_rope_head_dim) * dtype_bytes
    else:
        per_layer = 2 * max(s.num_kv_heads / tp, 1) * s.head_dim * dtype_bytes
    layers = float(s.num_layers)
    if s.sliding_window and s.sliding_window_layers and context:
        layers -= s.sliding_window_layers * (1.0 - min(1.0, s.sliding_window / context))
    return layers * per_layer
