"""The framework-neutral Plan and its parts.

The Plan is the spine of rl-advisor: choose_method / choose_framework fill in ``method`` and
``framework``, budget_memory reads it to build a memory ledger, plan_placement writes
``placement`` and per-role parallelism, render_config turns it into a framework's own launch
config, importers turn a framework's config back into a Plan, and the backends launch it.

Its YAML form (``plan_to_yaml`` / ``plan_from_yaml``) is the public input format of the CLI
(``--plan FILE``) and of every MCP tool (the same object as JSON).

Every model forbids unknown keys: a misspelt key is an error that names the key, never a
silently ignored setting. Impossible values (a negative batch, a memory fraction above 1, a
mini-batch larger than the batch) are rejected with the field named.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from advisor.errors import AdvisorError, FieldProblem, as_advisor_error

PLAN_SCHEMA_VERSION = 2
"""2: the run mode is one field, ``placement.mode`` (schema 1 also had ``rollout.async_mode``).
Plans written in schema 1 still load; ``Plan.migration_notes`` names each field that moved."""


class Strict(BaseModel):
    """Base for every public model: unknown keys are errors, enums serialise as strings."""

    model_config = ConfigDict(extra="forbid", use_enum_values=False, validate_assignment=True)


# --------------------------------------------------------------------------- vocabularies


class Method(StrEnum):
    """Post-training methods in scope. Values are the names used in Plan files."""

    PPO = "ppo"
    GRPO = "grpo"
    DR_GRPO = "dr_grpo"
    GSPO = "gspo"
    DAPO = "dapo"
    RLOO = "rloo"
    REINFORCE_PP = "reinforce_pp"
    DPO = "dpo"
    KTO = "kto"
    ORPO = "orpo"
    SIMPO = "simpo"
    REWARD_MODEL = "reward_model"
    REJECTION_SAMPLING = "rejection_sampling"
    RLAIF = "rlaif"
    SFT = "sft"


ONLINE_METHODS = frozenset({Method.PPO, Method.GRPO, Method.DR_GRPO, Method.GSPO, Method.DAPO,
                            Method.RLOO, Method.REINFORCE_PP})
"""Methods that generate rollouts from the current policy every step (on-policy RL)."""

OFFLINE_METHODS = frozenset({Method.DPO, Method.KTO, Method.ORPO, Method.SIMPO,
                             Method.REWARD_MODEL, Method.SFT})
"""Methods that train on a fixed data set: no rollout engine, no weight sync."""


class Framework(StrEnum):
    VERL = "verl"
    OPENRLHF = "openrlhf"
    TRL = "trl"
    NEMO_RL = "nemo_rl"
    MAXTEXT_RL = "maxtext_rl"
    RLLIB = "rllib"
    TRLX = "trlx"


class Role(StrEnum):
    """The roles of an RLHF step: the four models (guide: the loop and the four roles) and the
    rollout engine that serves the policy's weights."""

    POLICY = "policy"
    REFERENCE = "reference"
    REWARD = "reward"
    CRITIC = "critic"
    ROLLOUT = "rollout"


class TaskKind(StrEnum):
    MATH = "math"
    CODE = "code"
    REASONING = "reasoning"
    TOOL_USE = "tool_use"
    CHAT = "chat"
    SAFETY = "safety"
    SUMMARIZATION = "summarization"
    INSTRUCTION_FOLLOWING = "instruction_following"
    NON_LLM = "non_llm"
    OTHER = "other"


class DataKind(StrEnum):
    """What training signal exists today."""

    PREFERENCE_PAIRS = "preference_pairs"
    BINARY_LABELS = "binary_labels"
    PROMPTS_WITH_VERIFIER = "prompts_with_verifier"
    PROMPTS_WITH_REWARD_MODEL = "prompts_with_reward_model"
    DEMONSTRATIONS = "demonstrations"
    PROMPTS_ONLY = "prompts_only"
    NOTHING = "nothing"


class Ecosystem(StrEnum):
    PYTORCH = "pytorch"
    MEGATRON = "megatron"
    JAX = "jax"


class Priority(StrEnum):
    STABILITY = "stability"
    COST = "cost"
    QUALITY = "quality"
    THROUGHPUT = "throughput"


# --------------------------------------------------------------------------- objective


class Budget(Strict):
    gpu_hours: float | None = Field(None, gt=0, description="GPU-hours available for the run.")
    price_per_gpu_hour: float | None = Field(None, ge=0, description="USD per GPU-hour, for cost.")
    max_steps: int | None = Field(None, gt=0)


class Objective(Strict):
    """What the user wants and what they have: the input of choose_method."""

    task: TaskKind = Field(TaskKind.CHAT, description="Kind of behaviour to train.")
    data: list[DataKind] = Field(default_factory=lambda: [DataKind.NOTHING],
                                 description="Every kind of training signal that exists today.")
    dataset_size: int | None = Field(None, ge=0, description="Examples (pairs, prompts, labels).")
    needs_exploration: bool = Field(
        False, description="The policy must discover behaviour that is not in the data.")
    needs_value_function: bool = Field(
        False, description="Dense, token-level credit assignment (long multi-turn episodes).")
    has_judge_model: bool = Field(False, description="An LLM judge or constitution is available.")
    has_sft_model: bool = Field(True, description="The starting policy is already instruction-tuned.")
    ecosystem: Ecosystem = Ecosystem.PYTORCH
    priority: Priority = Priority.STABILITY
    budget: Budget = Field(default_factory=Budget)


# --------------------------------------------------------------------------- model and hardware


class ModelSpec(Strict):
    """Exact architecture dimensions of one transformer, enough to count parameters and memory.

    Field names follow HF ``config.json`` meaning; ``advisor.catalog`` fills them from the
    catalog or from a local ``config.json``.
    """

    name: str = Field(..., min_length=1, max_length=200)
    architecture: str = Field("llama", description="HF model_type family: llama, qwen2, qwen3, "
                              "qwen3_moe, mistral, gemma2, gemma3_text, deepseek_v3, mixtral, ...")
    hidden_size: int = Field(..., gt=0)
    num_layers: int = Field(..., gt=0)
    num_heads: int = Field(..., gt=0)
    num_kv_heads: int = Field(..., gt=0)
    head_dim: int = Field(..., gt=0)
    intermediate_size: int = Field(..., ge=0, description="Dense MLP width (0 if every layer is MoE).")
    vocab_size: int = Field(..., gt=0)
    tie_embeddings: bool = False
    qkv_bias: bool = False
    qk_norm: bool = False
    max_position_embeddings: int = Field(32768, gt=0)
    # MoE
    num_experts: int = Field(0, ge=0)
    experts_per_token: int = Field(0, ge=0)
    moe_intermediate_size: int = Field(0, ge=0)
    num_shared_experts: int = Field(0, ge=0)
    first_k_dense_layers: int = Field(0, ge=0)
    # MLA (DeepSeek-V2/V3)
    attention: Literal["mha", "gqa", "mla"] = "gqa"
    q_lora_rank: int = Field(0, ge=0)
    kv_lora_rank: int = Field(0, ge=0)
    qk_nope_head_dim: int = Field(0, ge=0)
    qk_rope_head_dim: int = Field(0, ge=0)
    v_head_dim: int = Field(0, ge=0)
    # Sliding-window attention (Mistral v0.1, Gemma-2/3, GPT-OSS, Phi-3): the KV cache of these
    # layers holds at most ``sliding_window`` tokens.
    sliding_window: int = Field(0, ge=0, description="Tokens a sliding-window layer attends to; 0 = none.")
    sliding_window_layers: int = Field(0, ge=0, description="How many layers use the sliding window "
                                       "(the rest attend to the full context).")
    # Vision-language models: the vision tower and projector, held and trained with the LM.
    vision_params: int = Field(0, ge=0, description="Parameters of a VLM's vision tower and projector "
                               "(counted in weights, gradients and optimizer state).")
    params: int | None = Field(None, gt=0, description="Total parameters; computed when absent.")
    active_params: int | None = Field(None, gt=0, description="Parameters used per token (MoE).")
    source: str | None = None

    @model_validator(mode="after")
    def _check_shapes(self) -> "ModelSpec":
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_heads ({self.num_heads}) must be a multiple of num_kv_heads "
                             f"({self.num_kv_heads})")
        if self.experts_per_token > self.num_experts:
            raise ValueError(f"experts_per_token ({self.experts_per_token}) exceeds num_experts "
                             f"({self.num_experts})")
        if self.sliding_window_layers > self.num_layers:
            raise ValueError(f"sliding_window_layers ({self.sliding_window_layers}) exceeds num_layers "
                             f"({self.num_layers})")
        if self.sliding_window_layers and not self.sliding_window:
            raise ValueError("sliding_window_layers needs sliding_window (the window in tokens)")
        return self

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0


class GPUNumbers(Strict):
    """A GPU the catalog lacks, by its numbers."""

    memory_gib: float = Field(..., gt=0, le=4096, description="GiB (the 24 of 24GB).")
    bandwidth_tbs: float = Field(..., gt=0, le=100, description="TB/s.")
    bf16_tflops: float = Field(..., gt=0, le=100000, description="Dense BF16 TFLOP/s.")
    fp8_tflops: float | None = Field(None, gt=0, le=200000, description="Dense FP8 TFLOP/s.")
    link: Literal["nvlink", "pcie", "infinity_fabric", "ici"] = "pcie"
    link_gbs: float = Field(32.0, gt=0, le=10000, description="GB/s per GPU, one way.")
    family: Literal["cuda", "rocm", "tpu"] = "cuda"
    source: str | None = Field(None, max_length=500, description="Datasheet URL.")


class Hardware(Strict):
    """The accelerators available. ``gpu`` is a key of the GPU catalog (e.g. H100, A100-80G), or
    any name when ``gpu_spec`` gives the card's numbers."""

    gpu: str = Field("H100", min_length=1, max_length=64)
    gpu_spec: GPUNumbers | None = Field(None, description="The GPU's numbers, for a name the catalog lacks.")
    gpus_per_node: int = Field(8, gt=0, le=64)
    nodes: int = Field(1, gt=0, le=4096)
    intra_node: Literal["nvlink", "pcie", "ici", "infinity_fabric"] | None = Field(
        None, description="GPU-to-GPU link inside a node; the catalog default when absent.")
    # upper bounds: far beyond any machine, low enough that no byte count overflows a float
    inter_node_gbps: float = Field(400.0, gt=0, le=1e6, description="Per-node network bandwidth, Gbit/s.")
    host_memory_gb: float = Field(1024.0, gt=0, le=1e6, description="Host RAM per node, GB.")
    cpus_per_node: int = Field(96, gt=0, le=1_000_000)

    @property
    def total_gpus(self) -> int:
        return self.gpus_per_node * self.nodes


# --------------------------------------------------------------------------- roles


class Parallelism(Strict):
    """How one role is split across GPUs. ``dp`` is derived from the pool size when absent."""

    dp: int | None = Field(None, gt=0)
    tp: int = Field(1, gt=0)
    pp: int = Field(1, gt=0)
    cp: int = Field(1, gt=0, description="Context parallel.")
    ep: int = Field(1, gt=0, description="Expert parallel.")
    etp: int | None = Field(None, gt=0, description="Expert tensor parallel (Megatron MoE layers); "
                            "None = the framework's default (advisor.resolve.expert_tensor_parallel).")
    sp: int = Field(1, gt=0, description="Ulysses sequence parallel (veRL).")
    fsdp_size: int = Field(-1, description="FSDP shard group size; -1 = the whole pool.")

    @model_validator(mode="after")
    def _fsdp(self) -> "Parallelism":
        if self.fsdp_size == 0 or self.fsdp_size < -1:
            raise ValueError("fsdp_size must be -1 (whole pool) or a positive group size")
        return self


class RoleModel(Strict):
    """One model role: which weights, and how that role is held in memory."""

    model: str = Field(..., min_length=1, max_length=500,
                       description="Catalog name (e.g. Qwen2.5-7B-Instruct) or a HF id.")
    path: str | None = Field(None, max_length=1000,
                             description="Where the weights are (HF id or local dir); "
                             "defaults to model.")
    spec: ModelSpec | None = Field(None, description="Exact dimensions; looked up when absent.")
    dtype: Literal["bf16", "fp16", "fp32"] = "bf16"
    quantization: Literal["none", "int8", "fp8", "nf4"] = "none"
    param_offload: bool = False
    optimizer_offload: bool = False
    parallel: Parallelism = Field(default_factory=Parallelism)

    @property
    def weights_path(self) -> str:
        return self.path or self.model


class RewardFunction(Strict):
    """A rule-based reward (verifier): a Python file and the function in it."""

    path: str = Field(..., min_length=1, max_length=1000)
    name: str = Field("compute_score", min_length=1, max_length=200,
                      pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")


# --------------------------------------------------------------------------- algorithm, data, rollout


class Algorithm(Strict):
    """Method hyperparameters. ``None`` means "the method's documented default"."""

    learning_rate: float | None = Field(None, gt=0, lt=1)
    critic_learning_rate: float | None = Field(None, gt=0, lt=1)
    kl_coef: float | None = Field(None, ge=0, description="KL penalty/loss coefficient to the reference.")
    kl_estimator: Literal["k1", "k2", "k3"] = Field("k3", description="k3 = low_var_kl.")
    kl_in_reward: bool = Field(False, description="KL as a reward penalty (PPO style) rather than a loss term.")
    beta: float | None = Field(None, gt=0, description="Offline preference β (DPO/KTO/ORPO/SimPO).")
    group_size: int | None = Field(None, ge=1, le=1024, description="Responses per prompt (n).")
    clip_ratio_low: float = Field(0.2, gt=0, lt=1)
    clip_ratio_high: float = Field(0.2, gt=0, lt=10)
    entropy_coeff: float = Field(0.0, ge=0)
    epochs_per_batch: int = Field(1, ge=1, le=64, description="PPO epochs over one rollout batch.")
    gamma: float = Field(1.0, ge=0, le=1)
    lam: float = Field(1.0, ge=0, le=1)
    loss_agg_mode: Literal["token-mean", "seq-mean-token-mean", "seq-mean-token-sum",
                           "seq-mean-token-sum-norm", "token-sum"] = "token-mean"
    dynamic_sampling: bool = Field(False, description="DAPO: drop groups with zero reward variance.")
    overlong_buffer: int = Field(0, ge=0, description="DAPO soft overlong punishment window (tokens).")
    simpo_gamma: float = Field(0.5, ge=0)
    temperature: float = Field(1.0, gt=0, le=5)
    top_p: float = Field(1.0, gt=0, le=1)
    best_of_n: int = Field(4, ge=1, le=1024, description="Rejection sampling: samples per prompt.")


class DataSpec(Strict):
    """Data files, lengths and batch sizes. Batch sizes count prompts (veRL semantics)."""

    train_files: list[str] = Field(default_factory=lambda: ["data/train.parquet"])
    val_files: list[str] = Field(default_factory=list)
    prompt_key: str = Field("prompt", min_length=1, max_length=200)
    max_prompt_length: int = Field(512, gt=0, le=1_048_576)
    max_response_length: int = Field(1024, gt=0, le=1_048_576)
    mean_prompt_length: int | None = Field(
        None, gt=0, description="Typical prompt tokens (measured on the data); memory and time "
        "follow actual tokens when padding is removed. Absent = max_prompt_length (worst case).")
    mean_response_length: int | None = Field(
        None, gt=0, description="Typical response tokens; absent = max_response_length (worst case).")
    train_batch_size: int = Field(256, gt=0, description="Prompts per step.")
    mini_batch_size: int | None = Field(None, gt=0, description="Prompts per optimizer step.")
    micro_batch_size_per_gpu: int | None = Field(None, gt=0, description="Sequences per fwd/bwd per GPU.")
    use_dynamic_bsz: bool = Field(False, description="Token-budget micro-batching.")
    max_token_len_per_gpu: int | None = Field(None, gt=0)
    total_steps: int | None = Field(None, gt=0)
    epochs: int = Field(1, gt=0)

    @model_validator(mode="after")
    def _batches(self) -> "DataSpec":
        if self.mini_batch_size is not None and self.mini_batch_size > self.train_batch_size:
            raise ValueError(f"mini_batch_size ({self.mini_batch_size}) must be <= train_batch_size "
                             f"({self.train_batch_size})")
        return self

    @property
    def max_seq_len(self) -> int:
        return self.max_prompt_length + self.max_response_length


class Rollout(Strict):
    """The generation engine for on-policy methods."""

    engine: Literal["vllm", "sglang", "hf"] = "vllm"
    tp: int = Field(1, gt=0, le=64)
    engines: int | None = Field(None, gt=0, description="Engine replicas; derived from the pool when absent.")
    max_num_seqs: int = Field(256, gt=0)
    max_num_batched_tokens: int = Field(8192, gt=0)
    enforce_eager: bool = False
    sleep_level: Literal[0, 1, 2] = Field(1, description="Engine sleep between rollouts: 0 none, "
                                          "1 free KV cache, 2 also drop weights.")


class MemoryKnobs(Strict):
    """Everything that trades memory for speed or quality."""

    train_backend: Literal["fsdp", "fsdp2", "megatron", "deepspeed"] = "fsdp"
    zero_stage: Literal[0, 1, 2, 3] = Field(3, description="DeepSpeed ZeRO stage (FSDP full-shard = 3).")
    optimizer: Literal["adamw", "adamw_8bit", "adafactor", "sgd"] = "adamw"
    master_weights_fp32: bool = Field(True, description="Keep fp32 master params (veRL FSDP default).")
    lora_rank: int = Field(0, ge=0, le=4096, description="0 = full fine-tuning.")
    lora_alpha: int = Field(16, gt=0)
    qlora: bool = False
    recompute: Literal["none", "selective", "full"] = "full"
    activation_offload: bool = False
    param_offload: bool = False
    optimizer_offload: bool = False
    ref_offload: bool = False
    rollout_memory_fraction: float = Field(0.5, gt=0, le=1,
                                           description="vLLM gpu_memory_utilization / SGLang mem_fraction_static.")
    logits_chunking: bool = Field(False, description="Chunked/fused log-prob and entropy (no vocab-size buffer).")
    remove_padding: bool = True

    @model_validator(mode="after")
    def _lora(self) -> "MemoryKnobs":
        if self.qlora and self.lora_rank == 0:
            raise ValueError("qlora needs lora_rank > 0")
        return self


# --------------------------------------------------------------------------- placement, logging


class Pool(Strict):
    """A set of GPUs that hosts some roles. Roles in one pool are colocated (time-sliced)."""

    name: str = Field(..., pattern=r"^[a-z][a-z0-9-]{0,40}$")
    nodes: int = Field(1, gt=0)
    gpus_per_node: int = Field(..., gt=0)
    roles: list[Literal["policy", "reference", "reward", "critic", "rollout"]] = Field(..., min_length=1)

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node


class Placement(Strict):
    mode: Literal["colocated", "split", "one_step_off", "fully_async"] = Field(
        "colocated", description="The run mode: colocated (time-sliced on shared GPUs), split (the "
        "rollout on its own pool, in lock-step), one_step_off (generation of step N+1 overlaps "
        "training of step N), fully_async (streaming generation).")
    pools: list[Pool] = Field(default_factory=list, description="Empty = one pool of all GPUs.")


class Logging(Strict):
    backends: list[Literal["console", "file", "jsonl", "tensorboard", "wandb"]] = Field(
        default_factory=lambda: ["console", "file"])
    project: str = Field("rl-advisor", min_length=1, max_length=200)
    experiment: str = Field("run", min_length=1, max_length=200)
    output_dir: str = Field("outputs", min_length=1, max_length=1000)
    wandb_api_key_env: str = Field("WANDB_API_KEY", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
                                   description="Name of the env var holding the key (never the key).")
    hf_token_env: str = Field("HF_TOKEN", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    save_freq: int = Field(-1, ge=-1)
    test_freq: int = Field(-1, ge=-1)


# --------------------------------------------------------------------------- the plan


class Plan(Strict):
    """One post-training run, independent of any framework."""

    schema_version: Literal[2] = PLAN_SCHEMA_VERSION
    name: str = Field("rl-run", min_length=1, max_length=200)
    method: Method = Method.GRPO
    framework: Framework = Framework.VERL
    objective: Objective | None = None
    hardware: Hardware = Field(default_factory=Hardware)
    policy: RoleModel
    reference: RoleModel | None = Field(None, description="Frozen KL anchor; defaults to the policy weights.")
    reward: RoleModel | None = Field(None, description="Learned reward model (absent = rule-based reward).")
    critic: RoleModel | None = Field(None, description="Value model (PPO only); defaults to the policy weights.")
    reward_function: RewardFunction | None = None
    algorithm: Algorithm = Field(default_factory=Algorithm)
    data: DataSpec = Field(default_factory=DataSpec)
    rollout: Rollout = Field(default_factory=Rollout)
    memory: MemoryKnobs = Field(default_factory=MemoryKnobs)
    placement: Placement = Field(default_factory=Placement)
    logging: Logging = Field(default_factory=Logging)
    env: dict[str, str] = Field(default_factory=dict,
                                description="Extra environment variables (no secrets: use *_env references).")
    profile: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$",
                                description="Calibration profile (rl-advisor calibrate) for budget_memory and plan_placement.")

    _migration_notes: list[str] = PrivateAttr(default_factory=list)

    @model_validator(mode="wrap")
    @classmethod
    def _migrate(cls, data: Any, handler: Any) -> "Plan":
        notes: list[str] = []
        if isinstance(data, dict):
            data, notes = migrate(data)
        plan = handler(data)
        if notes:
            plan._migration_notes = notes
        return plan

    @property
    def migration_notes(self) -> list[str]:
        """The fields that moved when this Plan was loaded from an older schema version."""
        return list(self._migration_notes)

    @model_validator(mode="after")
    def _consistent(self) -> "Plan":
        problems: list[str] = []
        gpus = self.hardware.total_gpus
        # Cross-node TP is legal (vLLM over Ray, Megatron) but slow: validate_plan warns about it.
        if self.rollout.tp > gpus:
            problems.append(f"rollout.tp ({self.rollout.tp}) exceeds the {gpus} GPUs of hardware")
        for role, rm in self.roles().items():
            par = rm.parallel
            width = par.tp * par.pp * par.cp
            if width > gpus:
                problems.append(f"{role}.parallel: tp*pp*cp = {width} exceeds the {gpus} GPUs of hardware")
        pool_gpus = sum(p.gpus for p in self.placement.pools)
        if pool_gpus > gpus:
            problems.append(f"placement.pools use {pool_gpus} GPUs but hardware has {gpus}")
        for p in self.placement.pools:
            if p.gpus_per_node > self.hardware.gpus_per_node:
                problems.append(f"placement.pools[{p.name}].gpus_per_node ({p.gpus_per_node}) exceeds "
                                f"hardware.gpus_per_node ({self.hardware.gpus_per_node})")
        for key, value in self.env.items():
            if not _ENV_NAME.fullmatch(key):
                problems.append(f"env key {key!r} is not a valid environment variable name "
                                "(ASCII letters, digits and '_', not starting with a digit)")
        problems += _credentials_in_fields(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def roles(self) -> dict[str, RoleModel]:
        """The roles that are set explicitly, by name."""
        out = {"policy": self.policy}
        for name in ("reference", "reward", "critic"):
            rm = getattr(self, name)
            if rm is not None:
                out[name] = rm
        return out

    @property
    def is_online(self) -> bool:
        return self.method in ONLINE_METHODS


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _credentials_in_fields(plan: "Plan") -> list[str]:
    """Fields other than ``env`` whose text holds a credential (a token, a password in a URL).

    Whatever a Plan holds is rendered into launch scripts, Ray jobs and manifests, and kept in
    the run registry: a secret there would be written out literally. ``env`` entries are exempt
    because the renderers turn secret ones into references (``${NAME:?}``, ``secretKeyRef``)."""
    from advisor.secrets import scrub_text

    out = []

    def walk(value: Any, path: str) -> None:
        if isinstance(value, str):
            if scrub_text(value, env={}) != value:
                out.append(f"{path} looks like it holds a credential (a token, key or a password in a "
                           "URL); a Plan carries secrets only by name: export it and list it under env, "
                           "or name its variable in logging.wandb_api_key_env / hf_token_env")
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{path}.{k}" if path else str(k))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, f"{path}[{i}]")

    walk(plan.model_dump(mode="json", exclude={"env"}), "")
    return out


# --------------------------------------------------------------------------- older versions


ASYNC_MODES = ("one_step_off", "fully_async")


def migrate(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A schema-1 Plan mapping in schema 2, with a note per moved field. A mapping that declares
    schema 1, or that has no version but carries a schema-1 field, is migrated; others pass.

    schema 1 -> 2: ``rollout.async_mode`` is gone; the one run-mode field is ``placement.mode``.
    Schema 1 ran asynchronously when either said so (the veRL and OpenRLHF renderers of
    schema 1 read both), so an asynchronous ``async_mode`` wins over a synchronous mode."""
    rollout = data.get("rollout")
    old_field = isinstance(rollout, dict) and "async_mode" in rollout
    version = data.get("schema_version")
    if version != 1 and not (version is None and old_field):
        return data, []
    data = dict(data)
    notes: list[str] = []
    if old_field:
        rollout = dict(rollout)
        old = rollout.pop("async_mode")
        data["rollout"] = rollout
        placement = dict(data.get("placement") or {})
        mode = placement.get("mode", "colocated")
        if old in ASYNC_MODES and mode not in ASYNC_MODES:
            placement["mode"] = old
            data["placement"] = placement
            notes.append(f"rollout.async_mode (schema 1) moved to placement.mode: {old} "
                         f"(placement.mode was {mode})")
        else:
            notes.append(f"rollout.async_mode (schema 1) moved to placement.mode: {mode} "
                         f"(async_mode was {old})")
    data["schema_version"] = PLAN_SCHEMA_VERSION
    return data, notes


# --------------------------------------------------------------------------- YAML form


def plan_from_dict(data: Any) -> Plan:
    """Validate a mapping as a Plan, raising AdvisorError that names each bad field."""
    if not isinstance(data, dict):
        raise AdvisorError("a Plan must be a mapping (YAML object)", field="plan",
                           value=type(data).__name__)
    try:
        return Plan.model_validate(data)
    except ValidationError as exc:
        raise as_advisor_error(exc, prefix="plan") from None


def plan_from_yaml(text: str) -> Plan:
    """Parse the YAML form of a Plan."""
    from advisor import yamlio

    data = yamlio.load_untrusted(text, field="plan", allowed="a YAML mapping in the Plan format (see README)")
    return plan_from_dict(data)


def plan_to_yaml(plan: Plan) -> str:
    """The canonical YAML form: every set value explicit (unset optionals left out), keys in
    model order, so the same Plan always gives the same bytes."""
    data = plan.model_dump(mode="json", exclude_none=True)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
