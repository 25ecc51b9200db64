"""GPU and model-architecture catalogs, and exact parameter counts.

The catalogs are data (``advisor/data/gpus.yaml``, ``advisor/data/models.yaml``), each row with
its source. This module loads them (once, cached), resolves names case-insensitively with
aliases, and counts parameters with one formula per architecture family.

The parameter formulas follow the way llm-analysis (cli99/llm-analysis) writes them: one
closed-form sum per block (embedding, attention, MLP or MoE, norms, head). Each family's
docstring names the transformers module whose ``__init__`` it mirrors, and
``tests/test_catalog.py`` checks every catalog entry against the real transformers class
instantiated on the meta device.

Pure: no file I/O besides the package's own data files, no heavy imports. Reading a user's
``config.json`` from disk is ``rl_advisor.hfconfig``; converting its dict is
``spec_from_hf_config`` here.
"""

from __future__ import annotations

import difflib
import functools
import re
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from advisor import yamlio
from advisor.errors import AdvisorError, FieldProblem, as_advisor_error
from advisor.plan import ModelSpec, RoleModel

# --------------------------------------------------------------------------- GPUs


class GPUSpec(BaseModel):
    """One accelerator: memory, bandwidth, dense peak FLOP/s and the link between GPUs in a node."""

    model_config = ConfigDict(extra="forbid")

    name: str
    aliases: list[str] = Field(default_factory=list)
    vendor: str
    family: Literal["cuda", "rocm", "tpu"]
    form_factor: Literal["sxm", "pcie", "oam", "tpu"]
    memory_type: str
    hbm_gib: float = Field(..., gt=0, description="Marketed memory capacity (the 80 of 80GB).")
    hbm_bandwidth_tbs: float = Field(..., gt=0, description="Memory bandwidth, TB/s.")
    bf16_tflops: float = Field(..., gt=0, description="Dense BF16 peak, TFLOP/s.")
    fp8_tflops: float | None = Field(None, gt=0, description="Dense FP8 peak; None if unsupported.")
    intra_node_link: Literal["nvlink", "pcie", "infinity_fabric", "ici"]
    intra_node_bandwidth_gbs: float = Field(..., gt=0, description="GB/s per GPU, one direction.")
    gpus_per_node: int = Field(8, gt=0)
    nvlink_domain: int | None = Field(None, gt=0, description="GPUs that share one NVLink/NVSwitch domain when it "
                                      "spans several nodes (GB200 NVL72: 72 GPUs of 18 trays of 4); None: the node.")
    bf16_supported: bool = Field(True, description="False for pre-Ampere cards (V100): bf16_tflops is "
                                 "then the FP16 tensor peak and training runs in fp16.")
    source: str = Field(..., min_length=10)

    @property
    def ridge_flop_per_byte(self) -> float:
        """bf16 FLOP per HBM byte at which a kernel turns compute-bound (roofline ridge point)."""
        return self.bf16_tflops / self.hbm_bandwidth_tbs  # (10^12 FLOP/s) / (10^12 B/s)


def _norm(name: str) -> str:
    """Lower-case, ``org/`` prefix dropped, spaces/underscores folded to '-'."""
    name = name.strip().rstrip("/")
    if "/" in name:
        name = name.rsplit("/", 1)[-1]
    return re.sub(r"[\s_]+", "-", name.lower())


def _load_yaml(filename: str) -> Any:
    text = resources.files("advisor").joinpath("data", filename).read_text(encoding="utf-8")
    return yamlio.safe_load(text)


@functools.cache
def _gpu_table() -> tuple[dict[str, GPUSpec], dict[str, str]]:
    rows = _load_yaml("gpus.yaml")["gpus"]
    by_name: dict[str, GPUSpec] = {}
    index: dict[str, str] = {}
    for row in rows:
        gpu = GPUSpec.model_validate(row)
        by_name[gpu.name] = gpu
        for key in [gpu.name, *gpu.aliases]:
            index[_norm(key)] = gpu.name
    return by_name, index


def list_gpus() -> list[GPUSpec]:
    """Every catalog GPU, in file order."""
    return list(_gpu_table()[0].values())


def get_gpu(name: str, field: str = "hardware.gpu") -> GPUSpec:
    """Look a GPU up by name or alias (case-insensitive). Unknown names raise AdvisorError
    naming ``field`` and the closest catalog names."""
    by_name, index = _gpu_table()
    key = _norm(name or "")
    if key in index:
        return by_name[index[key]]
    raise _unknown(field, name, index, by_name.keys(), "GPU")


def hardware_gpu(hardware: Any, field: str = "hardware.gpu") -> GPUSpec:
    """The GPU of a Plan's ``hardware``: its ``gpu_spec`` numbers when given (a card the catalog
    does not list, or the user's own measurements), else the catalog row for ``hardware.gpu``."""
    numbers = getattr(hardware, "gpu_spec", None)
    if numbers is None:
        try:
            return get_gpu(hardware.gpu, field=field)
        except AdvisorError as err:
            err.problems[0].allowed = (err.problems[0].allowed or "") + (
                "; or describe the card by its numbers in hardware.gpu_spec (memory_gib, bandwidth_tbs, "
                "bf16_tflops, link, link_gbs)")
            raise
    form = {"nvlink": "sxm", "infinity_fabric": "oam", "ici": "tpu"}.get(numbers.link, "pcie")
    return GPUSpec(name=hardware.gpu, vendor="user", family=numbers.family, form_factor=form,
                   memory_type="unknown", hbm_gib=numbers.memory_gib, hbm_bandwidth_tbs=numbers.bandwidth_tbs,
                   bf16_tflops=numbers.bf16_tflops, fp8_tflops=numbers.fp8_tflops,
                   intra_node_link=numbers.link, intra_node_bandwidth_gbs=numbers.link_gbs,
                   gpus_per_node=hardware.gpus_per_node,
                   source=numbers.source or "the plan's hardware.gpu_spec (user-given numbers)")


# --------------------------------------------------------------------------- models


class ModelEntry(BaseModel):
    """A models.yaml row: a ModelSpec plus where it came from and what else it is called."""

    model_config = ConfigDict(extra="forbid")

    spec: ModelSpec
    hf_id: str
    aliases: list[str] = Field(default_factory=list)
    published_params_b: float | None = None
    published_active_b: float | None = None


_ENTRY_ONLY = ("hf_id", "aliases", "published_params_b", "published_active_b")


@functools.cache
def _model_table() -> tuple[dict[str, ModelEntry], dict[str, str]]:
    rows = _load_yaml("models.yaml")["models"]
    by_name: dict[str, ModelEntry] = {}
    index: dict[str, str] = {}
    for row in rows:
        extra = {k: row[k] for k in _ENTRY_ONLY if k in row}
        spec_fields = {k: v for k, v in row.items() if k not in _ENTRY_ONLY}
        spec = ModelSpec.model_validate(spec_fields)
        spec = spec.model_copy(update={"params": count_params(spec),
                                       "active_params": count_active_params(spec)})
        entry = ModelEntry(spec=spec, **extra)
        by_name[spec.name] = entry
        for key in [spec.name, entry.hf_id, *entry.aliases]:
            index[_norm(key)] = spec.name
    return by_name, index


def list_models() -> list[ModelSpec]:
    """Every catalog model (params and active_params filled), in file order."""
    return [e.spec.model_copy(deep=True) for e in _model_table()[0].values()]


def model_entries() -> list[ModelEntry]:
    """The catalog rows with hf_id, aliases and published sizes (for tests and list_catalog)."""
    return [e.model_copy(deep=True) for e in _model_table()[0].values()]


def get_model(name: str, field: str = "model") -> ModelSpec:
    """Look a model up by catalog name, alias or HF id (``Qwen/Qwen2.5-7B-Instruct``),
    case-insensitively. Returns a copy with params/active_params filled."""
    by_name, index = _model_table()
    key = _norm(name or "")
    if key in index:
        return by_name[index[key]].spec.model_copy(deep=True)
    raise _unknown(field, name, index, by_name.keys(), "model")


def find_model(name: str) -> ModelSpec | None:
    """Like get_model but None when the name is unknown."""
    by_name, index = _model_table()
    hit = index.get(_norm(name or ""))
    return by_name[hit].spec.model_copy(deep=True) if hit else None


def resolve_role_model(rm: RoleModel, field: str) -> ModelSpec:
    """The exact dimensions of one role: ``rm.spec`` if given, else the catalog entry for
    ``rm.model``, else the catalog entry for the last path component of ``rm.path``
    (``/ckpt/Qwen2.5-7B-Instruct`` -> Qwen2.5-7B-Instruct). Params are always filled."""
    if rm.spec is not None:
        spec = rm.spec
        if spec.params is None or spec.active_params is None:
            spec = spec.model_copy(update={"params": spec.params or count_params(spec),
                                           "active_params": spec.active_params or count_active_params(spec)})
        return spec
    hit = find_model(rm.model)
    if hit is None and rm.path:
        hit = find_model(rm.path)
    if hit is not None:
        return hit
    _, index = _model_table()
    by_name = _model_table()[0]
    err = _unknown(f"{field}.model", rm.model, index, by_name.keys(), "model")
    err.problems[0].allowed = (err.problems[0].allowed or "") + (
        f"; or a Hugging Face hub id (org/name), a local model folder or a config.json path as "
        f"{field}.model, or exact dimensions as {field}.spec")
    raise err


def weights_path_for(name: str) -> str | None:
    """Where a catalog model's weights are on the hub, for rendering when a role gives no
    ``path``: the catalog row's ``org/`` and the name as written, when the name is the row's hub
    name or a variant of it (``Qwen2.5-7B-Instruct`` -> ``Qwen/Qwen2.5-7B-Instruct``). None for
    other aliases (``DeepSeek-R1-Distill-Llama-8B`` shares Llama-3.1-8B's shape, not its org), for
    names the catalog does not know and for paths."""
    if not name or "/" in name or name.startswith(("~", ".")):
        return None
    by_name, index = _model_table()
    hit = index.get(_norm(name))
    if hit is None:
        return None
    org, _, repo = by_name[hit].hf_id.partition("/")
    if not _norm(name).startswith(_norm(repo)):
        return None
    return f"{org}/{name.strip()}"


def _unknown(field: str, value: str, index: dict[str, str], names: Any, what: str) -> AdvisorError:
    key = _norm(value or "")
    close_keys = difflib.get_close_matches(key, list(index), n=5, cutoff=0.5)
    close = list(dict.fromkeys(index[k] for k in close_keys))
    if close:
        allowed = "closest catalog names: " + ", ".join(close)
    else:
        allowed = f"one of the {len(list(names))} catalog {what}s (rl-advisor list-catalog --kind {what}s)"
    return AdvisorError([FieldProblem(field=field, value=value, message=f"unknown {what}",
                                      allowed=allowed)])


# --------------------------------------------------------------------------- parameter counts


def count_params(spec: ModelSpec) -> int:
    """Total parameters that transformers builds for this architecture (tied weights once).

    Dispatches on ``spec.architecture`` (the HF model_type): deepseek_v3 -> MLA+MoE formula,
    opt -> OPT formula, everything else -> the pre-norm decoder formula (Llama family).
    """
    return _FAMILY.get(spec.architecture, _decoder_params)(spec, active=False) + spec.vision_params


def count_active_params(spec: ModelSpec) -> int:
    """Parameters used for one token: total minus the routed experts that are not selected
    (routers, shared experts, attention, embeddings and head all count). Equals
    count_params for dense models. A VLM's vision tower counts in both.

    Model cards often quote active parameters without the input embedding table (GPT-OSS-20B
    "3.6B", DeepSeek-V2-Lite "2.4B"); this count includes it, as the memory of a step does."""
    return _FAMILY.get(spec.architecture, _decoder_params)(spec, active=True) + spec.vision_params


# Families whose HF ``attention_bias`` flag puts a bias on o_proj as well as q/k/v.
_O_BIAS_WITH_QKV = frozenset({"llama", "qwen3", "qwen3_moe", "gemma", "gemma2", "gemma3_text", "olmo2",
                              "gpt_oss"})
# Families whose q/k RMSNorm spans all heads (OLMo-2: q_norm over H*d, k_norm over K*d) rather
# than one head_dim shared by every head (Qwen3, Gemma-3).
_QK_NORM_FULL = frozenset({"olmo2"})
# Families with four RMSNorms per layer (pre/post attention, pre/post feed-forward).
_SANDWICH_NORM = frozenset({"gemma2", "gemma3_text"})


def _decoder_params(s: ModelSpec, active: bool) -> int:
    """Pre-norm decoder with RMSNorm, RoPE and a gated (SwiGLU/GeGLU) MLP or a routed MoE.

    Mirrors ``transformers.models.{llama,mistral,qwen2,qwen3,qwen3_moe,mixtral,gemma2,
    gemma3,phi3,olmo2,gpt_oss,qwen2_5_vl}.modeling_*`` (Phi-3's fused qkv_proj and gate_up_proj
    hold the same weights as separate projections):
      embed  V*h                                  (+ lm_head V*h unless tied)
      attn   h*(H+2K)*d + H*d*h                   q/k/v/o projections, d = head_dim
             + (H+2K)*d  if qkv bias (+ h for o_proj in llama/qwen3/gemma attention_bias)
             + 2*d       if q/k RMSNorm (Qwen3, Gemma-3); (H+K)*d for OLMo-2's full-width norms
             + H         GPT-OSS attention sinks (one logit per head)
      mlp    3*h*I                                gate, up, down
      moe    h*E + E*3*h*I_moe                    router + experts (active: k experts)
             + 3*h*I_moe*S                        shared experts (S of them)
             + E + E*(2*I_moe + h)                GPT-OSS router and expert biases
      norms  2*h per layer (4*h for Gemma-2/3 sandwich norms) + h final
    """
    h, H, K, d = s.hidden_size, s.num_heads, s.num_kv_heads, s.head_dim
    attn = h * (H + 2 * K) * d + H * d * h
    if s.qkv_bias:
        attn += (H + 2 * K) * d
        if s.architecture in _O_BIAS_WITH_QKV:
            attn += h
    if s.qk_norm:
        attn += (H + K) * d if s.architecture in _QK_NORM_FULL else 2 * d
    gpt_oss = s.architecture == "gpt_oss"
    if gpt_oss:
        attn += H
    norms = (4 if s.architecture in _SANDWICH_NORM else 2) * h
    dense_mlp = 3 * h * s.intermediate_size
    if s.is_moe:
        experts = s.experts_per_token if active else s.num_experts
        one_expert = 3 * h * s.moe_intermediate_size + (2 * s.moe_intermediate_size + h if gpt_oss else 0)
        moe_mlp = h * s.num_experts + experts * one_expert \
            + s.num_shared_experts * 3 * h * s.moe_intermediate_size + (s.num_experts if gpt_oss else 0)
        n_dense = s.first_k_dense_layers
        mlp_total = n_dense * dense_mlp + (s.num_layers - n_dense) * moe_mlp
    else:
        mlp_total = s.num_layers * dense_mlp
    embed = s.vocab_size * h * (1 if s.tie_embeddings else 2)
    return embed + s.num_layers * (attn + norms) + mlp_total + h


def _mla_moe_params(s: ModelSpec, active: bool) -> int:
    """DeepSeek-V2/V3 (and R1): Multi-head Latent Attention + DeepSeekMoE.

    Mirrors ``transformers.models.deepseek_v{2,3}.modeling_deepseek_v{2,3}`` (V2-Lite has no
    q LoRA: q_lora_rank 0) (DeepseekV3Attention,
    DeepseekV3MoE, DeepseekV3TopkRouter); the multi-token-prediction layer of the released
    checkpoint is not built by transformers and not counted. ``e_score_correction_bias`` is a
    buffer, not a parameter.
      q      h*q_lora + q_lora (norm) + q_lora*H*(nope+rope)    (h*H*(nope+rope) if q_lora = 0)
      kv     h*(kv_lora+rope) + kv_lora (norm) + kv_lora*H*(nope+v)
      o      H*v*h
      mlp    3*h*I for the first_k_dense layers
      moe    h*E (router) + E*3*h*I_moe + S*3*h*I_moe (shared), active: k of E experts
      norms  2*h per layer + h final; embed V*h and an untied head V*h
    """
    h, H = s.hidden_size, s.num_heads
    qk = s.qk_nope_head_dim + s.qk_rope_head_dim
    if s.q_lora_rank:
        q = h * s.q_lora_rank + s.q_lora_rank + s.q_lora_rank * H * qk
    else:
        q = h * H * qk
    kv = h * (s.kv_lora_rank + s.qk_rope_head_dim) + s.kv_lora_rank \
        + s.kv_lora_rank * H * (s.qk_nope_head_dim + s.v_head_dim)
    o = H * s.v_head_dim * h
    attn = q + kv + o
    dense_mlp = 3 * h * s.intermediate_size
    experts = s.experts_per_token if active else s.num_experts
    moe_mlp = h * s.num_experts + (experts + s.num_shared_experts) * 3 * h * s.moe_intermediate_size
    n_dense = min(s.first_k_dense_layers, s.num_layers)
    mlp_total = n_dense * dense_mlp + (s.num_layers - n_dense) * moe_mlp
    embed = s.vocab_size * h * (1 if s.tie_embeddings else 2)
    return embed + s.num_layers * (attn + 2 * h) + mlp_total + h


def _opt_params(s: ModelSpec, active: bool) -> int:
    """OPT: learned positions, biased projections, LayerNorm (weight+bias), ReLU MLP.

    Mirrors ``transformers.models.opt.modeling_opt`` for word_embed_proj_dim == hidden_size
    and do_layer_norm_before=True (every OPT size except 350M):
      embed  V*h + (P+2)*h                        learned positions have an offset of 2
      attn   4*(h*h + h)                          q/k/v/o with bias
      mlp    h*I + I + I*h + h                    fc1, fc2 with bias
      norms  2 LayerNorms per layer (2*h each) + final 2*h; lm_head tied
    """
    h, I = s.hidden_size, s.intermediate_size
    per_layer = 4 * (h * h + h) + (h * I + I + I * h + h) + 2 * (2 * h)
    embed = s.vocab_size * h + (s.max_position_embeddings + 2) * h
    head = 0 if s.tie_embeddings else s.vocab_size * h
    return embed + s.num_layers * per_layer + 2 * h + head


_FAMILY = {
    "deepseek_v2": _mla_moe_params,
    "deepseek_v3": _mla_moe_params,
    "opt": _opt_params,
}

SUPPORTED_ARCHITECTURES = ("llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "mixtral", "gemma",
                           "gemma2", "gemma3_text", "deepseek_v2", "deepseek_v3", "opt", "phi3", "olmo2",
                           "gpt_oss", "qwen2_5_vl", "qwen2_vl", "gemma3")
"""model_types whose count is exact (checked against transformers); other pre-norm decoders use
the Llama formula as an approximation."""


# --------------------------------------------------------------------------- HF config.json


# Qwen-family configs carry a sliding_window value that applies only when use_sliding_window is
# true, and then only to layers at or above max_window_layers.
_QWEN_WINDOW = frozenset({"qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "qwen2_5_vl", "qwen2_vl"})
# Text model_types of vision-language wrappers, mapped to the family whose formula counts them.
_TEXT_OF_VLM = {"gemma3": "gemma3_text", "qwen2_5_vl": "qwen2_5_vl", "qwen2_vl": "qwen2_vl"}
_QKV_BIAS_ALWAYS = frozenset({"qwen2", "qwen2_moe", "qwen2_5_vl", "qwen2_vl", "opt"})
_QK_NORM = frozenset({"qwen3", "qwen3_moe", "gemma3_text", "olmo2"})
_TIED_BY_DEFAULT = frozenset({"opt", "gemma", "gemma2", "gemma3_text"})


def _sliding_layers(cfg: dict[str, Any], model_type: str, layers: int) -> tuple[int, int]:
    """(window, layers that use it) from a config, following each family's config class:
    an explicit ``layer_types`` list wins; Gemma-2 alternates (even layers local); Gemma-3 has
    one global layer in every ``sliding_window_pattern`` (6); Qwen uses the window only with
    ``use_sliding_window`` and from ``max_window_layers`` up; Mistral, Mixtral and Phi-3 apply it
    to every layer. Sources: transformers ``configuration_{gemma2,gemma3,qwen2,mistral}.py``."""
    window = int(cfg.get("sliding_window") or 0)
    if not window:
        return 0, 0
    if model_type in _QWEN_WINDOW and not cfg.get("use_sliding_window"):
        return 0, 0
    types = cfg.get("layer_types")
    if isinstance(types, list) and types:
        n = sum(1 for t in types[:layers] if t == "sliding_attention")
    elif model_type in ("gemma2", "gpt_oss"):
        n = (layers + 1) // 2
    elif model_type == "gemma3_text":
        n = layers - layers // max(int(cfg.get("sliding_window_pattern") or 6), 1)
    elif model_type in _QWEN_WINDOW:
        n = layers - min(int(cfg.get("max_window_layers") or 0), layers)
    else:
        n = layers
    return (window, n) if n else (0, 0)


def spec_from_hf_config(config: dict[str, Any], name: str | None = None,
                        vision_params: int | None = None) -> ModelSpec:
    """Convert a Hugging Face ``config.json`` (already parsed) into a ModelSpec.

    Vision-language wrappers (Gemma-3, Qwen2-VL, Qwen2.5-VL) are read from their ``text_config``
    (or their top level when the text keys live there); their vision tower must be counted by the
    caller (``vision_params``: rl_advisor.hfconfig counts it with transformers on the meta
    device), else the config is refused with the reason. Missing or malformed keys raise
    AdvisorError naming the config key.
    """
    if not isinstance(config, dict):
        raise AdvisorError("a config.json must be a JSON object", field="config",
                           value=type(config).__name__)
    cfg = dict(config)
    outer_type = str(cfg.get("model_type") or "")
    has_vision = isinstance(cfg.get("vision_config"), dict)
    if isinstance(cfg.get("text_config"), dict) and "hidden_size" not in cfg:
        outer_name = cfg.get("_name_or_path") or name
        inherited = {k: cfg[k] for k in ("tie_word_embeddings",) if k in cfg}
        cfg = {**inherited, **cfg["text_config"], "_name_or_path": outer_name}
    model_type = str(cfg.get("model_type") or outer_type)
    if outer_type in _TEXT_OF_VLM:
        model_type = _TEXT_OF_VLM[outer_type]
    if not model_type:
        raise AdvisorError("config.json has no model_type", field="config.model_type",
                           allowed="an HF config with model_type, e.g. " + ", ".join(SUPPORTED_ARCHITECTURES))
    if has_vision and vision_params is None:
        raise AdvisorError(
            f"{outer_type or model_type} is a vision-language model: its vision tower must be counted "
            "and that needs transformers (the 'train' extra) to build it on the meta device",
            field="config.vision_config", value=outer_type,
            allowed="install transformers (pip install 'rl-advisor[train]'), or give the role's spec "
                    "with vision_params, or point at a text-only checkpoint")

    def need(key: str, *alts: str) -> Any:
        for k in (key, *alts):
            if cfg.get(k) is not None:
                return cfg[k]
        raise AdvisorError(f"config.json lacks {key}", field=f"config.{key}",
                           allowed=f"the standard HF key for {model_type}")

    hidden = int(need("hidden_size", "d_model", "n_embd"))
    heads = int(need("num_attention_heads", "n_head"))
    kv_heads = int(cfg.get("num_key_value_heads") or heads)
    head_dim = int(cfg.get("head_dim") or hidden // heads)
    layers = int(need("num_hidden_layers", "n_layer"))
    window, window_layers = _sliding_layers(cfg, model_type, layers)
    spec: dict[str, Any] = {
        "name": name or cfg.get("_name_or_path") or model_type,
        "architecture": model_type,
        "hidden_size": hidden,
        "num_layers": layers,
        "num_heads": heads,
        "num_kv_heads": kv_heads,
        "head_dim": head_dim,
        "intermediate_size": int(cfg.get("intermediate_size") or cfg.get("ffn_dim") or 0),
        "vocab_size": int(need("vocab_size")),
        "tie_embeddings": bool(cfg.get("tie_word_embeddings", model_type in _TIED_BY_DEFAULT)),
        "qkv_bias": bool(cfg.get("attention_bias", False)) or model_type in _QKV_BIAS_ALWAYS,
        "qk_norm": model_type in _QK_NORM,
        "max_position_embeddings": int(cfg.get("max_position_embeddings") or 32768),
        "attention": "mha" if kv_heads == heads else "gqa",
        "sliding_window": window,
        "sliding_window_layers": window_layers,
        "vision_params": int(vision_params or 0),
        "source": "config.json",
    }
    if model_type == "opt":
        proj = cfg.get("word_embed_proj_dim", hidden)
        if proj != hidden or cfg.get("do_layer_norm_before") is False:
            raise AdvisorError("OPT configs with word_embed_proj_dim != hidden_size or post-norm "
                               "(OPT-350M) are not supported", field="config.word_embed_proj_dim",
                               value=proj, allowed=f"{hidden} (= hidden_size)")
    if model_type in ("qwen3_moe", "qwen2_moe", "mixtral", "gpt_oss"):
        experts = int(cfg.get("num_experts") or cfg.get("num_local_experts") or 0)
        spec.update(num_experts=experts, experts_per_token=int(need("num_experts_per_tok", "experts_per_token")),
                    moe_intermediate_size=int(cfg.get("moe_intermediate_size") or spec["intermediate_size"]))
        if model_type == "qwen3_moe" and not cfg.get("mlp_only_layers") and int(cfg.get("decoder_sparse_step", 1)) == 1:
            spec["intermediate_size"] = 0
        if model_type in ("mixtral", "gpt_oss"):
            spec["intermediate_size"] = 0
    if model_type in ("deepseek_v2", "deepseek_v3"):
        spec.update(
            attention="mla", num_experts=int(need("n_routed_experts")),
            experts_per_token=int(need("num_experts_per_tok")),
            moe_intermediate_size=int(need("moe_intermediate_size")),
            num_shared_experts=int(cfg.get("n_shared_experts") or 0),
            first_k_dense_layers=int(cfg.get("first_k_dense_replace") or 0),
            q_lora_rank=int(cfg.get("q_lora_rank") or 0), kv_lora_rank=int(need("kv_lora_rank")),
            qk_nope_head_dim=int(need("qk_nope_head_dim")), qk_rope_head_dim=int(need("qk_rope_head_dim")),
            v_head_dim=int(need("v_head_dim")),
            head_dim=int(cfg["qk_nope_head_dim"]) + int(cfg["qk_rope_head_dim"]))
    inexact = []
    if model_type not in SUPPORTED_ARCHITECTURES:
        inexact.append(f"model_type {model_type} is counted with the Llama-family formula")
    if cfg.get("mlp_bias"):
        inexact.append("mlp_bias is not counted")
    if inexact:
        spec["source"] = "config.json (approximate: " + "; ".join(inexact) + ")"
    try:
        out = ModelSpec.model_validate(spec)
    except ValidationError as exc:
        raise as_advisor_error(exc, prefix="config") from None
    return out.model_copy(update={"params": count_params(out), "active_params": count_active_params(out)})


def hf_config_kwargs(spec: ModelSpec) -> dict[str, Any]:
    """The HF config keys (for ``transformers.AutoConfig.for_model(spec.architecture, **kw)``)
    that reproduce this spec: the inverse of spec_from_hf_config. Used to build tiny models and
    to check count_params against transformers."""
    kw: dict[str, Any] = {
        "hidden_size": spec.hidden_size,
        "num_hidden_layers": spec.num_layers,
        "num_attention_heads": spec.num_heads,
        "num_key_value_heads": spec.num_kv_heads,
        "head_dim": spec.head_dim,
        "intermediate_size": spec.intermediate_size,
        "vocab_size": spec.vocab_size,
        "tie_word_embeddings": spec.tie_embeddings,
        "max_position_embeddings": spec.max_position_embeddings,
    }
    arch = spec.architecture
    if arch in _O_BIAS_WITH_QKV:
        kw["attention_bias"] = spec.qkv_bias
    if arch in ("qwen3_moe",):
        kw.update(num_experts=spec.num_experts, num_experts_per_tok=spec.experts_per_token,
                  moe_intermediate_size=spec.moe_intermediate_size, decoder_sparse_step=1,
                  mlp_only_layers=[])
        kw["intermediate_size"] = spec.intermediate_size or spec.moe_intermediate_size
    if arch == "mixtral":
        kw.update(num_local_experts=spec.num_experts, num_experts_per_tok=spec.experts_per_token,
                  intermediate_size=spec.moe_intermediate_size)
    if arch == "deepseek_v3":
        kw.update(n_routed_experts=spec.num_experts, num_experts_per_tok=spec.experts_per_token,
                  moe_intermediate_size=spec.moe_intermediate_size, n_shared_experts=spec.num_shared_experts,
                  first_k_dense_replace=spec.first_k_dense_layers, q_lora_rank=spec.q_lora_rank or None,
                  kv_lora_rank=spec.kv_lora_rank, qk_nope_head_dim=spec.qk_nope_head_dim,
                  qk_rope_head_dim=spec.qk_rope_head_dim, v_head_dim=spec.v_head_dim,
                  head_dim=spec.qk_rope_head_dim)
    if arch == "opt":
        kw = {"hidden_size": spec.hidden_size, "num_hidden_layers": spec.num_layers,
              "num_attention_heads": spec.num_heads, "ffn_dim": spec.intermediate_size,
              "vocab_size": spec.vocab_size, "max_position_embeddings": spec.max_position_embeddings,
              "word_embed_proj_dim": spec.hidden_size, "do_layer_norm_before": True,
              "tie_word_embeddings": spec.tie_embeddings, "enable_bias": True}
    return kw


# --------------------------------------------------------------------------- list_catalog tool


class CatalogRow(BaseModel):
    name: str
    aliases: list[str] = Field(default_factory=list)
    summary: str
    source: str


class CatalogTable(BaseModel):
    """The GPU or model catalog as rows (the list_catalog tool)."""

    kind: Literal["gpus", "models"]
    rows: list[CatalogRow]
    gpus: list[GPUSpec] = Field(default_factory=list)
    models: list[ModelSpec] = Field(default_factory=list)

    def to_text(self) -> str:
        if self.kind == "gpus":
            head = f"{'GPU':<14} {'mem GiB':>7} {'TB/s':>6} {'bf16 TF':>8} {'fp8 TF':>7} {'link':<16} {'GB/s':>5}"
            lines = [head, "-" * len(head)]
            for g in self.gpus:
                fp8 = f"{g.fp8_tflops:g}" if g.fp8_tflops else "-"
                lines.append(f"{g.name:<14} {g.hbm_gib:>7g} {g.hbm_bandwidth_tbs:>6g} {g.bf16_tflops:>8g} "
                             f"{fp8:>7} {g.intra_node_link:<16} {g.intra_node_bandwidth_gbs:>5g}")
            return "\n".join(lines)
        head = f"{'model':<18} {'type':<12} {'params':>9} {'active':>8} {'layers':>6} {'hidden':>6} {'heads':>9} {'vocab':>7}"
        lines = [head, "-" * len(head)]
        for m in self.models:
            lines.append(f"{m.name:<18} {m.architecture:<12} {(m.params or 0) / 1e9:>8.2f}B "
                         f"{(m.active_params or 0) / 1e9:>7.2f}B {m.num_layers:>6} {m.hidden_size:>6} "
                         f"{m.num_heads:>4}/{m.num_kv_heads:<4} {m.vocab_size:>7}")
        return "\n".join(lines)


def list_catalog(kind: Literal["gpus", "models"] = "models") -> CatalogTable:
    """List the GPU catalog (memory, bandwidth, dense peak, interconnect, source) or the model
    catalog (exact dimensions and parameter counts)."""
    if kind == "gpus":
        gpus = list_gpus()
        rows = [CatalogRow(name=g.name, aliases=g.aliases, source=g.source,
                           summary=f"{g.hbm_gib:g} GiB {g.memory_type}, {g.hbm_bandwidth_tbs:g} TB/s, "
                                   f"{g.bf16_tflops:g} bf16 TFLOP/s, {g.intra_node_link}")
                for g in gpus]
        return CatalogTable(kind="gpus", rows=rows, gpus=gpus)
    if kind != "models":
        raise AdvisorError("unknown catalog", field="kind", value=kind, allowed="gpus, models")
    entries = model_entries()
    rows = [CatalogRow(name=e.spec.name, aliases=e.aliases, source=e.spec.source or e.hf_id,
                       summary=f"{e.spec.architecture}, {(e.spec.params or 0) / 1e9:.2f}B params")
            for e in entries]
    return CatalogTable(kind="models", rows=rows, models=[e.spec for e in entries])
