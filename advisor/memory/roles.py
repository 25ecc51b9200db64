"""Per-role memory set-up: which bytes a role holds, how they are sharded, what is offloaded.

Framework semantics (perf-anchors.md section 1.1 and the framework sources it cites):
* veRL FSDP/FSDP2: the actor and critic are loaded in fp32 (``model_dtype`` fp32: "torch_dtype =
  float32 if is_actor else bfloat16" in fsdp_workers.py), so params, grads and AdamW states are
  fp32 and fully sharded: 16 bytes/param / N. The reference is bf16 (2 bytes/param / N). Compute
  runs on all-gathered bf16 copies of one FSDP unit (a decoder layer) at a time; the root unit
  (embeddings + lm_head) stays gathered through forward and backward. ``param_offload`` /
  ``optimizer_offload`` move the shards to host RAM BETWEEN phases and load them back for the
  role's own phase (load_fsdp_model_to_gpu / load_fsdp_optimizer at the start of update_actor).
  With LoRA the frozen base is still fp32 but has no grads or optimizer states (the LoRA modules are
  wrapped as their own FSDP units), and the reference is the actor with adapters disabled.
* DeepSpeed (OpenRLHF, TRL + DeepSpeed): the ZeRO paper layout, bf16 params 2 + bf16 grads 2 +
  fp32 master 4 + Adam 8, sharded by stage. ``adam_offload`` / offload_optimizer keeps master,
  moments and fp32 grad partitions in host RAM for the whole run (CPU Adam); ZeRO-3 param offload
  keeps params on the host and gathers one layer at a time.
* Megatron (veRL megatron, NeMo-RL): bf16 params 2 + fp32 main grads 4 divided by tp*pp (experts
  by ep*pp), and with the distributed optimizer fp32 master + Adam 12 bytes divided by dp.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from advisor.constants import const
from advisor.memory.terms import GIB, ParamParts, StateBytes, lora_params
from advisor.plan import Framework, MemoryKnobs, ModelSpec, Plan, RoleModel
from advisor.resolve import optimizer_steps_on_host

DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}


@dataclass
class RoleSetup:
    """Everything the ledger needs about one role on one GPU of its pool."""

    name: str
    spec: ModelSpec
    parts: ParamParts
    trains: bool
    backend: str  # fsdp | deepspeed | megatron | ddp
    zero_stage: int
    pool_gpus: int
    shard: int  # FSDP / ZeRO data-parallel sharding degree N
    tp: int
    pp: int
    cp: int
    ep: int
    sp: int
    lora_rank: int
    qlora: bool
    param_offload: bool
    optimizer_offload: bool
    state: StateBytes
    shares_weights_with: str | None = None  # veRL/TRL LoRA: the reference is the policy w/o adapters
    notes: list[str] = field(default_factory=list)

    # ------------------------------------------------------------------ persistent states (GiB)

    @property
    def params(self) -> int:
        return self.parts.total

    @property
    def lora(self) -> int:
        return lora_params(self.spec, self.lora_rank) if self.lora_rank else 0

    def mp_params(self) -> float:
        """Parameters held by one model-parallel rank before data-parallel sharding."""
        if self.backend == "megatron":
            dense = self.params - self.parts.expert
            return dense / (self.tp * self.pp) + self.parts.expert / (self.ep * self.pp)
        return self.params / self.tp

    def _dp(self) -> int:
        return max(1, self.pool_gpus // max(1, self.tp * self.pp * self.cp))

    def param_gib(self) -> float:
        """Stored parameters on one GPU while loaded."""
        n = self.mp_params()
        if self.qlora and self.lora_rank:
            b = const("qlora_bytes_per_param")
        else:
            b = self.state.params
        if self.backend == "fsdp" or (self.backend == "deepspeed" and self.zero_stage >= 3):
            n /= self.shard
        return n * b / GIB

    def grad_gib(self) -> float:
        """Gradient storage during the update (none for frozen weights; LoRA grads are tiny)."""
        if not self.trains:
            return 0.0
        if self.lora_rank:
            return self.lora * 4 / self._lora_shard() / GIB
        n = self.mp_params()
        if self.backend == "deepspeed":
            return self._deepspeed_grad_bytes(n) / GIB
        if self.backend == "fsdp":
            n /= self.shard
        return n * self.state.grads / GIB

    def _deepspeed_grad_bytes(self, n: float) -> float:
        """DeepSpeed's gradient memory as its estimators count it (stage_1_and_2.py / stage3.py
        @ 38327e07): bf16 gradients (2 B; full below stage 2, partitioned at stage 2, reduced
        straight into partitions at stage 3) plus the fp32 gradient partition the optimizer steps
        on (4 B / N from stage 1). With ZeRO-Offload (CPU Adam) both live on the host. This is why
        the code's ZeRO-2 figure is 2P + 18P/N, not the ZeRO paper's 2P + 14P/N."""
        if self.optimizer_offload:
            return 0.0
        stage, shard = self.zero_stage, self.shard
        half = self.state.grads * (n if stage < 2 else (n / shard if stage == 2 else 0.0))
        fp32 = 4.0 * n / shard if stage >= 1 and self.state.master else 0.0
        return half + fp32

    def optimizer_gib(self) -> float:
        """Master copy + optimizer states on one GPU (before any offload)."""
        if not self.trains:
            return 0.0
        if self.lora_rank:
            return self.lora * (4 + 8) / self._lora_shard() / GIB
        n = self.mp_params()
        per = self.state.master + self.state.optimizer
        if self.backend == "megatron":
            n /= self._dp()  # distributed optimizer
        elif self.backend == "fsdp" or (self.backend == "deepspeed" and self.zero_stage >= 1):
            n /= self.shard
        return n * per / GIB

    def _lora_shard(self) -> int:
        return self.shard if self.backend in ("fsdp", "deepspeed") else 1

    def optimizer_on_host_always(self) -> bool:
        """DeepSpeed CPU Adam and Megatron's CPU optimizer (optimizer_offload_fraction 1.0, the
        veRL large-MoE recipes): the states live on the host and the step runs there."""
        return optimizer_steps_on_host(self.backend, self.optimizer_offload) and self.trains

    def params_on_host_always(self) -> bool:
        """ZeRO-3 param offload: parameters live on the host; one layer is gathered at a time."""
        return self.backend == "deepspeed" and self.zero_stage >= 3 and self.param_offload

    # ------------------------------------------------------------------ transient gather (GiB)

    def gathered_gib(self, training: bool) -> float:
        """Unsharded working copies while this role computes.

        FSDP: bf16 copies of the current and the prefetched decoder layer, plus the root unit
        (embedding + lm_head) gathered for the whole pass; in a full-parameter backward also one
        unit's unsharded fp32 gradient before reduce-scatter. ZeRO-3: current + prefetched layer in
        bf16 (DeepSpeed's largest_layer_memory counts params + grads, 4 bytes/param). Megatron and
        ZeRO-0/1/2 compute on their resident parameters (no gather). The unit count is multiplied
        by gather_inflight_factor (all-gathers running ahead on their own stream)."""
        return const("gather_inflight_factor") * self._gathered_units_gib(training)

    def _gathered_units_gib(self, training: bool) -> float:
        layer = self.parts.largest_layer / self.tp
        root = (self.parts.embedding + self.parts.lm_head) / self.tp
        if self.backend == "fsdp":
            if self.shard == 1 and self.state.params == 2:
                return 0.0
            g = 2 * layer * 2 + root * 2
            if training and not self.lora_rank:
                g += layer * 4
            return g / GIB
        if self.backend == "deepspeed" and self.zero_stage >= 3:
            # ZeRO-3 gathers module by module: the embedding and lm_head are units of their own
            # and can be the largest (Llama-3-70B: 1.05B each vs 0.86B per decoder layer).
            layer = max(layer, self.parts.embedding / self.tp, self.parts.lm_head / self.tp)
            g = 2 * layer * 2
            if training and not self.lora_rank:
                g += layer * 2
            return g / GIB
        return 0.0


def _optimizer_state_bytes(knobs: MemoryKnobs, param_bytes: float) -> float:
    """Optimizer state bytes per parameter: AdamW two moments in the parameter's dtype (fp32 for a
    fp32 master or fp32 params), 8-bit Adam 2, Adafactor ~0.05 (factored), SGD 0."""
    if knobs.optimizer == "adamw":
        return 8.0 if param_bytes >= 4 else 2 * param_bytes
    if knobs.optimizer == "adamw_8bit":
        return const("adam8bit_bytes_per_param")
    if knobs.optimizer == "adafactor":
        return const("adafactor_bytes_per_param")
    return 0.0


def backend_of(plan: Plan) -> str:
    """The training backend kind the memory model uses for this plan's framework."""
    b = plan.memory.train_backend
    if plan.framework == Framework.OPENRLHF:
        return "deepspeed"
    if b == "megatron":
        return "megatron"
    if b == "deepspeed":
        return "deepspeed" if plan.framework != Framework.VERL else "fsdp"
    if plan.framework == Framework.TRL and plan.memory.zero_stage == 0:
        return "ddp"
    return "fsdp"


def state_bytes(plan: Plan, rm: RoleModel, trains: bool, backend: str) -> StateBytes:
    """Bytes per parameter of params / grads / master / optimizer for one role (see module doc)."""
    knobs = plan.memory
    dtype = DTYPE_BYTES[rm.dtype]
    if not trains:
        return StateBytes(params=dtype if rm.dtype != "fp32" else 4, grads=0, master=0, optimizer=0)
    if backend in ("fsdp", "ddp"):
        p = 4.0 if knobs.master_weights_fp32 else float(dtype)
        return StateBytes(params=p, grads=p, master=0.0, optimizer=_optimizer_state_bytes(knobs, p))
    if backend == "deepspeed":
        master = 4.0 if knobs.master_weights_fp32 or dtype == 2 else 0.0
        return StateBytes(params=float(dtype), grads=float(dtype), master=master,
                          optimizer=_optimizer_state_bytes(knobs, 4.0))
    # megatron: bf16 params, fp32 main grads, fp32 master + optimizer in the distributed optimizer
    return StateBytes(params=float(dtype), grads=4.0, master=4.0,
                      optimizer=_optimizer_state_bytes(knobs, 4.0))
