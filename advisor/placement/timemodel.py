"""Step-time model of one RL step, phase by phase, with the physical limit beside each phase.

Sources (perf-anchors.md §3, §4, §7; HybridFlow's d_cost, §2.1):

- **Decode** is bound by HBM bandwidth: a decode step of an engine with TP ``t`` reads the
  weights once (``W/t`` per GPU; for MoE only the experts the batch touches) plus the KV cache
  of every running sequence (``ctx * kv_bytes_per_token / t``), capped below by the compute
  roof ``2 N_active b / (t * peak)``. Continuous batching keeps ``C`` sequences running per
  engine (``C`` = min(max_num_seqs, KV capacity / mean context)); the batch then drains along
  the response-length distribution (a log-normal body truncated at max_response_length plus a
  point mass of clipped responses at max_response_length, with the plan's mean), so the long
  tail is paid in weight reads: a step happens while *any* sequence runs (``1-(1-S(t))^C``)
  and costs KV reads for the ``C*S(t)`` that do. A synchronous rollout also lasts at least as
  long as the longest of *all* its sequences (``1-(1-S(t))^seqs``: every engine waits for the
  slowest), each tail step costing a weight read plus the engine's per-step CPU overhead. An
  engine whose TP group leaves the NVLink domain also all-reduces its activations over the NICs.
- **NVLink domain**: a group of ranks stays on NVLink while it fits one NVLink domain
  (``ResolvedPlan.nvlink_domain``: a node, or a GB200 NVL72 rack of 72 GPUs); a larger group
  runs at the node NIC's share per GPU.
- **Prefill, forward passes and training** are compute-bound: ``k * N_active * tokens`` plus
  the attention term ``k * sum(s^2) * d_head * n_heads * L`` (veRL's flops counter), with
  k = 2 (forward), 6 (train) or 8 (train with full recompute), 4 (LoRA: no weight grads).
  Memory-bound elementwise work (``activation_traffic`` hidden-size vectors per token, layer
  and pass) streams at HBM bandwidth beside the GEMMs, which makes the effective MFU depend on
  the GPU's FLOP/byte ridge. Pipeline bubbles multiply by ``(m+p-1)/m``; tensor-parallel all-reduces add their bytes over
  the intra-node link; FSDP/ZeRO-3 gathers run concurrently with compute (``max``). MoE layers
  under expert parallelism add their token all-to-alls (dispatch + combine, ``k * hidden``
  bf16 values per token per layer, the share (ep-1)/ep leaving the rank) on the EP group's link.
  Their routed-expert GEMMs follow a roofline (``expert_roofline``, Williams et al. 2009): an
  expert sees micro-batch tokens x EP x ETP / TP x top-k / experts tokens per pass, 2 FLOP per
  token per bf16 weight byte, and takes the longer of its compute and its weight reads at HBM
  bandwidth x ``decode_hbm_efficiency``: memory-bound only with few tokens per expert on a GPU
  with a high ridge (H100 295 FLOP/byte against H20 37).
- **Weight sync** moves the policy weights to the rollout engines, per transport
  (``weight_sync_time``): CUDA IPC after an in-place reshard when colocated, a per-tensor NCCL
  broadcast over the link between the pools (NVLink inside a node, the node NIC across nodes,
  plus a network round trip per tensor), or the bucketed checkpoint engine.
- **Offload** moves the offloaded parameter / optimizer bytes over the host link.
- **Combination**: phases of one pool run in sequence (sum); pools run in parallel (max) within
  a stage (generate, score, train); stages run in sequence for synchronous layouts. One-step-off
  overlaps generation of step N+1 with training of step N: ``max(gen, score+train) + sync``.
  Fully async also hides the long tail (generation streams at the saturated rate).

Every prediction is ``limit / efficiency``; the efficiencies come from
``advisor/data/time_model.yaml`` where they were fitted on the published rows.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any


from advisor import yamlio
from advisor.errors import AdvisorError
from advisor.placement.models import PhaseTime, StepTime
from advisor.plan import ModelSpec, Parallelism, Plan, Pool, Role, RoleModel
from advisor.constants import constant
from advisor.memory.engines import rollout_kv_pool
from advisor.resolve import ResolvedPlan, expert_tensor_parallel, optimizer_steps_on_host, resolve

DATA = Path(__file__).resolve().parent.parent / "data" / "time_model.yaml"
GIB = 1024 ** 3


# --------------------------------------------------------------------------- data table


def _round(x: float, places: int) -> float:
    """``x`` to ``places`` decimals, but never fewer than 6 significant digits: a CPU run's
    millisecond phases must stay resolvable (calibration differentiates them numerically)."""
    if x == 0 or not math.isfinite(x):
        return x
    return round(x, max(places, 5 - math.floor(math.log10(abs(x)))))


_TABLE: dict[str, Any] = {}


def _table() -> dict[str, Any]:
    """The parsed table, parsed again only when the file's text changes (reading it is cheap,
    parsing it is not: every prediction reads the factors, and a fit makes thousands of
    predictions). Read-only."""
    text = DATA.read_text()
    if _TABLE.get("text") != text:
        _TABLE.update(text=text, doc=yamlio.safe_load(text))
    return _TABLE["doc"]


def load_table() -> dict[str, Any]:
    """A copy of the table (callers may change it)."""
    return copy.deepcopy(_table())


def default_factors() -> dict[str, float]:
    """The efficiency factors (name -> value): the published fit, with the values of the
    calibration profile in use (``advisor.profiles.applied``) in place of the fitted ones."""
    from advisor.profiles import active

    out = {k: float(v["value"]) for k, v in _table()["factors"].items()}
    prof = active()
    if prof is not None:
        out.update({k: float(v) for k, v in prof.time_factors.items() if k in out})
    return out


def factor_variant(plan: Plan, name: str) -> str:
    """The table factor a plan's phase reads for ``name``: one place that picks a setting's own
    efficiency, so that the prediction and calibrate (which must move the factor the run used)
    agree. HF generate's padded static batches read the ``_static`` decode factors; a DeepSpeed
    update reads ``train_mfu_deepspeed`` (ZeRO hooks around HF modeling code, CPU Adam; fitted on
    the DeepSpeed-Chat and OpenRLHF rows, see the table's rationale)."""
    if plan.rollout.engine == "hf" and name in ("decode_step_overhead_ms", "decode_hbm_efficiency"):
        return name + "_static"
    if plan.memory.train_backend == "deepspeed" and name == "train_mfu":
        return "train_mfu_deepspeed"
    return name


def factor_ranges() -> dict[str, tuple[float, float]]:
    """Published range of each factor (``range`` in the table): the fit may not leave it."""
    return {k: (float(v["range"][0]), float(v["range"][1])) for k, v in _table()["factors"].items()
            if "range" in v}


# --------------------------------------------------------------------------- resolved inputs


@dataclass(frozen=True)
class Device:
    """The numbers of one GPU type in one cluster shape, in SI units."""

    name: str
    hbm_bytes: float
    hbm_bw: float          # B/s
    peak_flops: float      # dense bf16 FLOP/s
    link_bw: float         # intra-node GPU<->GPU, B/s per GPU, one direction
    node_nic_bw: float     # B/s per node
    gpus_per_node: int
    host_bw: float         # B/s per GPU (PCIe)
    nvlink_domain: int = 0  # GPUs on one NVLink fabric (ResolvedPlan.nvlink_domain; 0 = the node)

    @property
    def nic_per_gpu(self) -> float:
        return self.node_nic_bw / self.gpus_per_node

    @property
    def domain(self) -> int:
        return max(self.nvlink_domain, self.gpus_per_node)

    def spans_domain(self, gpus: int) -> bool:
        """Whether a group of ``gpus`` ranks leaves the NVLink domain (crosses the node NICs)."""
        return gpus > self.domain

    def dp_link(self, gpus: int) -> float:
        """Bandwidth per rank of traffic every rank sends on its own (an all-to-all) over ``gpus``
        ranks: NVLink inside the NVLink domain (a node, or a GB200 NVL72 rack), the NIC share of one
        GPU across."""
        return self.link_bw if not self.spans_domain(gpus) else min(self.link_bw, self.nic_per_gpu)

    def ring_link(self, span: int, ranks_per_node: int) -> float:
        """Bus bandwidth of a ring collective (all-gather, reduce-scatter, all-reduce) whose group
        has ``ranks_per_node`` ranks on each node and spans ``span`` ranks.

        A ring crosses each node boundary once per channel, so the node's NIC carries the stream
        once for all of the group's ranks on that node, not once per rank: the bus bandwidth is
        the NIC bandwidth divided among the groups that share it (gpus_per_node / ranks_per_node
        concurrent groups), capped by NVLink (NCCL's ring algorithm; nccl-tests
        doc/PERFORMANCE.md, busbw = algbw x (n-1)/n for all-gather, 2(n-1)/n for all-reduce, is
        the slowest link's bandwidth). Inside the NVLink domain it is NVLink."""
        if not self.spans_domain(span):
            return self.link_bw
        rpn = max(1, min(ranks_per_node, self.gpus_per_node))
        return min(self.link_bw, self.nic_per_gpu * rpn)


def device_for(plan: Plan | ResolvedPlan) -> Device:
    rp = resolve(plan)
    plan = rp.plan
    if plan.hardware.gpu.strip().lower() == "cpu":  # a run on the host CPU (demo, tests)
        c = constant("host_cpu_device")
        return Device(name="cpu", hbm_bytes=float(c["hbm_gib"]) * GIB, hbm_bw=float(c["hbm_bandwidth_tbs"]) * 1e12,
                      peak_flops=float(c["bf16_tflops"]) * 1e12, link_bw=float(c["intra_node_bandwidth_gbs"]) * 1e9,
                      node_nic_bw=plan.hardware.inter_node_gbps / 8 * 1e9, gpus_per_node=plan.hardware.gpus_per_node,
                      host_bw=float(c["hbm_bandwidth_tbs"]) * 1e12)
    gpu = rp.gpu
    gen5 = {g.lower() for g in constant("pcie_gen5_gpus")}
    host = constant("host_link_gbs_gen5") if gpu.name.lower() in gen5 else constant("host_link_gbs")
    return Device(
        name=gpu.name,
        hbm_bytes=float(gpu.hbm_gib) * GIB,  # the "80" of 80GB is 80 GiB on the device (nvidia-smi)
        hbm_bw=float(gpu.hbm_bandwidth_tbs) * 1e12,
        peak_flops=float(gpu.bf16_tflops) * 1e12,
        link_bw=float(gpu.intra_node_bandwidth_gbs) * 1e9,
        node_nic_bw=plan.hardware.inter_node_gbps / 8 * 1e9,
        gpus_per_node=plan.hardware.gpus_per_node,
        host_bw=float(host) * 1e9,
        nvlink_domain=rp.nvlink_domain,
    )


@dataclass(frozen=True)
class Arch:
    """What the time model needs to know about one model."""

    params: float
    active: float
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    bytes_per_param: float
    experts: int
    experts_per_token: int
    expert_params: float     # parameters of one expert in one layer
    moe_layers: int
    tensors: int             # parameter tensors (per-tensor sync cost)

    @property
    def weight_bytes(self) -> float:
        return self.params * self.bytes_per_param

    @property
    def expert_active(self) -> float:
        """Routed-expert parameters one token passes through (top-k experts of every MoE layer):
        the share of ``active`` that runs as grouped expert GEMMs; shared experts are dense."""
        return self.expert_params * self.experts_per_token * self.moe_layers if self.experts else 0.0

    def decode_weight_bytes(self, batch: float) -> float:
        """Weight bytes one decode step reads: all dense weights, and the experts the batch touches."""
        if not self.experts:
            return self.weight_bytes
        all_experts = self.expert_params * self.experts * self.moe_layers
        dense = self.params - all_experts
        touched = self.experts * (1.0 - (1.0 - self.experts_per_token / self.experts) ** max(batch, 1.0))
        return (dense + touched * self.expert_params * self.moe_layers) * self.bytes_per_param


def arch_for(spec: ModelSpec, dtype: str = "bf16", quantization: str = "none") -> Arch:
    from advisor.catalog import count_active_params, count_params

    params = float(spec.params or count_params(spec))
    active = float(spec.active_params or (count_active_params(spec) if spec.is_moe else params))
    bpp = {"bf16": 2.0, "fp16": 2.0, "fp32": 4.0}[dtype]
    if quantization in ("int8", "fp8"):
        bpp = 1.0
    elif quantization == "nf4":
        bpp = 0.5
    moe_layers = max(spec.num_layers - spec.first_k_dense_layers, 0) if spec.is_moe else 0
    expert_params = 3.0 * spec.hidden_size * spec.moe_intermediate_size if spec.is_moe else 0.0
    per_layer = 4 + 2 + (3 if spec.qkv_bias else 0) + (2 if spec.qk_norm else 0)
    per_layer += (3 * spec.num_experts + 1 + 3 * spec.num_shared_experts) if spec.is_moe else 3
    return Arch(params=params, active=active, layers=spec.num_layers, hidden=spec.hidden_size,
                heads=spec.num_heads, kv_heads=spec.num_kv_heads, head_dim=spec.head_dim,
                bytes_per_param=bpp, experts=spec.num_experts,
                experts_per_token=spec.experts_per_token, expert_params=expert_params,
                moe_layers=moe_layers, tensors=spec.num_layers * per_layer + 3)


def role_spec(plan: Plan | ResolvedPlan, role: str) -> tuple[ModelSpec, RoleModel]:
    """The model of a role (resolved once by advisor.resolve); reference and critic default to the
    policy's weights."""
    rp = resolve(plan)
    rm = getattr(rp.plan, role, None) or rp.plan.policy
    return rp.spec(role), rm


# --------------------------------------------------------------------------- lengths


class LengthDist:
    """Response lengths: a log-normal body plus a point mass at ``max_len``, with the given mean.

    RL rollouts end in two ways: an EOS (a log-normal body, truncated at ``max_len``) or the
    length limit (responses that loop or keep reasoning: veRL's ``response_length/clip_ratio``,
    typically 0.5-5 %). The point mass ``clip`` of always-clipped responses is what makes a
    synchronous rollout of thousands of sequences run for ``max_len`` steps almost surely, which
    a log-normal alone (whose tail thins fast) misses. ``mean >= max_len`` gives fixed-length
    responses; the body's mean is solved so that the mixture keeps ``mean``.
    """

    def __init__(self, mean: float, max_len: int, sigma: float, clip: float = 0.0):
        self.max_len = int(max_len)
        self.sigma = sigma
        self.mean = min(float(mean), float(max_len))
        self.fixed = self.mean >= self.max_len - 0.5 or sigma <= 0
        # the clipped mass may take at most half of the mean (the body keeps a real spread)
        self.clip = 0.0 if self.fixed else min(max(clip, 0.0), 0.5 * self.mean / self.max_len)
        self.body_mean = (self.mean - self.clip * self.max_len) / (1.0 - self.clip)
        self.mu = self._solve_mu() if not self.fixed else 0.0
        self._m2: float | None = None

    @staticmethod
    def _phi(x: float) -> float:
        return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))

    def _trunc_mean(self, mu: float) -> float:
        s, c = self.sigma, float(self.max_len)
        lc = math.log(c)
        return math.exp(mu + s * s / 2) * self._phi((lc - mu - s * s) / s) + c * (1 - self._phi((lc - mu) / s))

    def _solve_mu(self) -> float:
        lo, hi = -10.0, math.log(self.max_len) + 10.0
        for _ in range(80):
            mid = (lo + hi) / 2
            if self._trunc_mean(mid) < self.body_mean:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    def survival(self, t: float) -> float:
        """P(length > t)."""
        if t >= self.max_len:
            return 0.0
        if self.fixed:
            return 1.0
        if t <= 0:
            return 1.0
        body = 1.0 - self._phi((math.log(t) - self.mu) / self.sigma)
        return self.clip + (1.0 - self.clip) * body

    def clip_ratio(self) -> float:
        """Share of responses that stop at ``max_len``."""
        if self.fixed:
            return 1.0
        return self.clip + (1.0 - self.clip) * (1.0 - self._phi((math.log(self.max_len) - self.mu) / self.sigma))

    def second_moment(self) -> float:
        """E[L^2] by integrating 2 t S(t)."""
        if self.fixed:
            return self.mean ** 2
        if self._m2 is None:
            n = 400
            dt = self.max_len / n
            self._m2 = sum(2 * (i + 0.5) * dt * self.survival((i + 0.5) * dt) * dt for i in range(n))
        return self._m2


# --------------------------------------------------------------------------- phases


@dataclass
class _Phase:
    phase: str
    pool: str
    gpus: int
    seconds: float
    lower: float
    bound: str
    eff: float
    detail: str = ""
    overlapped: bool = False

    def out(self) -> PhaseTime:
        return PhaseTime(phase=self.phase, pool=self.pool, gpus=self.gpus, seconds=_round(self.seconds, 4),
                         lower_bound_s=_round(self.lower, 4), bound=self.bound, efficiency=round(self.eff, 4),
                         overlapped=self.overlapped, detail=self.detail)


@lru_cache(maxsize=4096)
def length_dist(mean: float, max_len: int, sigma: float, clip: float = 0.0) -> LengthDist:
    """The LengthDist of these parameters, built once (its mean is solved by bisection and its
    second moment integrated; a fit asks for the same few distributions thousands of times).
    Treat the result as read-only."""
    return LengthDist(mean, max_len, sigma, clip)


_DECODE_CACHE: dict[tuple[Any, ...], tuple[float, float, int, float, str]] = {}
_DECODE_CACHE_SIZE = 20000


def _decode(arch: Arch, dev: Device, *, engines: int, tp: int, seqs: int, prompt: float,
            dist: LengthDist, max_num_seqs: int, kv_pool: float, kv_tok: float, eta_bw: float, eta_c: float,
            static_batch: bool, streaming: bool, step_overhead_s: float = 0.0) -> tuple[float, float, int, float, str]:
    """``_decode_uncached``, memoised on all its inputs (a pure function of them): a fit that
    changes a training or sync factor re-predicts every row, and decode is most of a row's cost."""
    key = (arch, dev, engines, tp, seqs, prompt, dist.mean, dist.max_len, dist.sigma, dist.clip, max_num_seqs,
           kv_pool, kv_tok, eta_bw, eta_c, static_batch, streaming, step_overhead_s)
    hit = _DECODE_CACHE.get(key)
    if hit is None:
        if len(_DECODE_CACHE) >= _DECODE_CACHE_SIZE:
            _DECODE_CACHE.clear()
        hit = _DECODE_CACHE[key] = _decode_uncached(
            arch, dev, engines=engines, tp=tp, seqs=seqs, prompt=prompt, dist=dist, max_num_seqs=max_num_seqs,
            kv_pool=kv_pool, kv_tok=kv_tok, eta_bw=eta_bw, eta_c=eta_c, static_batch=static_batch,
            streaming=streaming, step_overhead_s=step_overhead_s)
    return hit


def _decode_uncached(arch: Arch, dev: Device, *, engines: int, tp: int, seqs: int, prompt: float,
                     dist: LengthDist, max_num_seqs: int, kv_pool: float, kv_tok: float, eta_bw: float,
                     eta_c: float, static_batch: bool, streaming: bool,
                     step_overhead_s: float = 0.0) -> tuple[float, float, int, float, str]:
    """Decode time of the whole rollout (seconds, physical limit, concurrency, waves, bound).

    ``kv_pool`` (bytes per GPU) and ``kv_tok`` (KV bytes per token per GPU) come from the memory
    model's engine footprint (advisor.memory.engines.rollout_kv_pool), the one KV formula."""
    q = math.ceil(seqs / engines)
    if kv_pool <= 0:
        raise _Infeasible(f"rollout engine: weights {arch.weight_bytes / tp / GIB:.1f} GiB per GPU at TP {tp} "
                          f"leave no KV cache in {dev.hbm_bytes / GIB:.0f} GiB")
    e_l2 = dist.second_moment()
    ctx_res = prompt + e_l2 / (2 * max(dist.mean, 1.0))
    c = int(max(1, min(max_num_seqs, q, kv_pool // (kv_tok * ctx_res))))
    if static_batch:  # padded batches sized for the longest response
        c = int(max(1, min(max_num_seqs, q, kv_pool // (kv_tok * (prompt + dist.max_len)))))
    lat = constant("tp_allreduce_latency_us") * 1e-6
    comm_step = 0.0 if tp == 1 else 2 * arch.layers * lat
    # an engine whose TP group leaves the NVLink domain (TP32 over four 8-GPU nodes) all-reduces
    # each layer's activations (2 per layer, b x hidden bf16 values, ring: 2(t-1)/t of them per
    # rank) over the node NICs every decode step, on top of the latency
    xnode = 2 * arch.layers * arch.hidden * 2.0 * 2 * (tp - 1) / tp / dev.ring_link(tp, tp) if dev.spans_domain(tp) else 0.0

    def step(b_kv: float, p_any: float, ctx: float, eta_b: float, eta_f: float, fixed: float) -> float:
        mem = (p_any * arch.decode_weight_bytes(b_kv) / tp + b_kv * ctx * kv_tok) / (dev.hbm_bw * eta_b)
        flops = 2.0 * arch.active * b_kv / (tp * dev.peak_flops * eta_f)
        return max(mem, flops) + p_any * (comm_step + fixed) + xnode * b_kv

    n_grid = 200
    dt = dist.max_len / n_grid
    grid = [((i + 0.5) * dt, dist.survival((i + 0.5) * dt)) for i in range(n_grid)]

    def total(eta_b: float, eta_f: float, fixed: float) -> tuple[float, str]:
        per_tok = step(c, 1.0, ctx_res, eta_b, eta_f, fixed)
        mem_part = (arch.decode_weight_bytes(c) / tp + c * ctx_res * kv_tok) / (dev.hbm_bw * eta_b)
        bound = "hbm_bandwidth" if mem_part >= 2.0 * arch.active * c / (tp * dev.peak_flops * eta_f) else "compute"
        if streaming:  # fully async: generation streams at the saturated rate, the tail overlaps
            return q * dist.mean / c * per_tok, bound
        if static_batch:
            waves = math.ceil(q / c)
            wave = 0.0
            for t, s in grid:
                p_any = 1.0 - (1.0 - s) ** c
                wave += dt * step(c, p_any, prompt + t, eta_b, eta_f, fixed) * (1 if p_any > 0 else 0)
            return waves * wave, bound
        sat = max(q - c, 0) * dist.mean / c * per_tok
        drain = 0.0
        longest = 0.0
        for t, s in grid:
            p_any = 1.0 - (1.0 - s) ** c
            drain += dt * step(c * s, p_any, prompt + t, eta_b, eta_f, fixed)
            # the rollout is not done before the longest of ALL its sequences (every engine
            # waits for the slowest one): it runs t steps with probability 1-(1-S(t))^seqs,
            # each step at least a weight read with the survivors' KV (the batch thins)
            p_q = 1.0 - (1.0 - s) ** seqs
            longest += dt * step(max(min(c, q * s), 1.0), p_q, prompt + t, eta_b, eta_f, fixed)
        return max(sat + drain, longest), bound

    secs, bound = total(eta_bw, eta_c, step_overhead_s)
    lower, _ = total(1.0, 1.0, 0.0)
    return secs, lower, c, q / c, bound


class _Infeasible(Exception):
    """The time model cannot run this layout (e.g. the rollout engine has no KV cache)."""


def pass_flops(arch: Arch, tokens: float, seq_sq: float, k: float) -> float:
    """FLOPs of one pass over ``tokens`` (k = 2 forward, 6 forward + backward, 8 with full recompute):
    k x active parameters per token plus the attention scores, k x sum(s^2) x head_dim x heads x
    layers. With k = 6 it is veRL's FlopsCounter (verl/utils/flops_counter.py, the numerator of
    perf/mfu/actor)."""
    return k * arch.active * tokens + k * seq_sq * arch.head_dim * arch.heads * arch.layers


def expert_tokens(arch: Arch, micro_tokens: float, ep: int = 1, etp: int = 1, tp: int = 1) -> float:
    """Tokens one routed expert sees per micro-batch pass: the tokens entering an expert group
    (``ep`` x ``etp`` ranks, each holding ``micro_tokens / tp`` under sequence parallelism) times
    top-k over the experts. This is the M of the expert's GEMM and, in bf16, its arithmetic
    intensity in FLOP/byte of expert weights (2 t d f FLOPs over 2 d f bytes)."""
    if not arch.experts:
        return math.inf
    return micro_tokens * max(ep, 1) * max(etp, 1) / max(tp, 1) * arch.experts_per_token / arch.experts


def expert_roofline(arch: Arch, dev: Device, tokens_per_expert: float, eta: float, eta_hbm: float) -> float:
    """Roofline (Williams et al. 2009) of the routed-expert GEMMs as a multiplier on their FLOPs:
    a pass over ``t`` tokens per expert does 2 t P FLOPs per forward-equivalent and reads (or, the
    gradient, writes) the expert's P weights once per forward-equivalent (forward, backward,
    recompute, gradient write: k/2 times for k FLOPs per parameter), so its intensity is
    ``2 t / bytes_per_param`` FLOP/byte at every k. The expert part is memory-bound when that is
    below ``peak x eta / (hbm_bw x eta_hbm)``; the multiplier is that ratio (>= 1 means memory-bound),
    0 when the roofline is off (``eta_hbm`` 0)."""
    if not arch.experts or eta_hbm <= 0 or tokens_per_expert <= 0 or math.isinf(tokens_per_expert):
        return 0.0
    intensity = 2.0 * tokens_per_expert / arch.bytes_per_param
    return dev.peak_flops * eta / (intensity * dev.hbm_bw * eta_hbm)


def effective_flops(arch: Arch, tokens: float, seq_sq: float, k: float, roof: float = 0.0) -> float:
    """``pass_flops`` with the routed-expert GEMMs weighed by ``max(1, roof)``: dense-GEMM-equivalent
    FLOPs, so that ``effective_flops / (peak x forward_mfu or train_mfu)`` is the compute time of a
    model whose expert GEMMs run at the dense efficiency or, when slower, stream their weights at
    the HBM bandwidth (``roof``: ``expert_roofline``; few tokens per expert on a GPU with a high
    ridge point). A dense model's FLOPs are unchanged."""
    mult = max(roof, 1.0)
    extra = k * arch.expert_active * tokens * (mult - 1.0) if arch.expert_active else 0.0
    return pass_flops(arch, tokens, seq_sq, k) + extra


def _compute_phase(arch: Arch, dev: Device, *, gpus: int, par: Parallelism, tokens: float,
                   seq_sq: float, k: float, eta: float, micro_tokens: float, mini_batches: int,
                   sharded_gather: bool, grad_bytes: float, lora: bool,
                   act_traffic: float = 0.0, launch_ms: float = 0.0, etp: int | None = None,
                   eta_hbm: float = 0.0) -> tuple[float, float, str]:
    """A forward (k=2) or training (k=6/8/4) pass over ``tokens`` on ``gpus`` GPUs.

    ``launch_ms`` is the host-side cost per layer per micro-batch pass (kernel launches and
    Python dispatch, paid once per forward-equivalent: a training pass counts k/2): negligible
    for large micro-batches on a GPU, all of the time for a tiny model on a CPU. ``etp`` is the
    expert layers' tensor-parallel size (advisor.resolve.expert_tensor_parallel; None = ``par.tp``).
    ``eta_hbm`` is the HBM efficiency of the routed-expert weight reads (``expert_roofline``;
    0 = no roofline)."""
    compute = pass_flops(arch, tokens, seq_sq, k) / (gpus * dev.peak_flops)
    mp = par.tp * par.pp * par.cp
    dp = max(gpus // mp, 1)
    t_exp = expert_tokens(arch, min(micro_tokens, tokens / dp), par.ep, etp if etp else par.tp, par.tp)
    roof = expert_roofline(arch, dev, t_exp, eta, eta_hbm)
    compute_eff = effective_flops(arch, tokens, seq_sq, k, roof) / (gpus * dev.peak_flops)
    # pipeline bubble: m micro-batches per DP rank and mini-batch
    m = max(1.0, tokens / dp / max(mini_batches, 1) / micro_tokens)
    bubble = (m + par.pp - 1) / m if par.pp > 1 else 1.0
    # tensor-parallel all-reduces (2 per layer forward, 2 more backward; not overlapped)
    n_ar = 2 if k <= 2 else (4 if k < 8 else 6)
    tp_comm = 0.0
    if par.tp > 1:
        tp_comm = n_ar * arch.layers * (tokens / dp) * arch.hidden * 2 * 2 * (par.tp - 1) / par.tp \
            / dev.ring_link(par.tp, par.tp) / par.pp
    # expert-parallel all-to-all: each MoE layer dispatches every token's hidden state to its
    # top-k experts and combines the results back (2 all-to-alls per forward; the backward
    # repeats both, a full recompute the forward's). Tokens of a rank are split over its TP
    # ranks (sequence parallel), and the share (ep-1)/ep leaves the rank, over NVLink when the
    # expert group (EP x expert TP: Megatron-Core folds the expert layers' ranks into
    # ETP x EP x EDP, independent of the attention's TP) fits a node, else the node NIC share.
    # They are not hidden behind compute:
    # Megatron-Core's overlap_moe_expert_parallel_comm is False by default
    # (megatron/core/model_parallel_config.py), so the time adds to the compute.
    a2a = 0.0
    if arch.experts and par.ep > 1 and arch.moe_layers:
        n_a2a = 2 if k <= 2 else (4 if k < 8 else 6)
        tok_rank = tokens / dp / max(par.tp, 1)
        bytes_a2a = tok_rank * arch.experts_per_token * arch.hidden * 2.0 * (par.ep - 1) / par.ep
        group = par.ep * (etp if etp else par.tp)
        a2a = n_a2a * (arch.moe_layers / max(par.pp, 1)) * bytes_a2a / dev.dp_link(group)
    # data-parallel traffic: FSDP/ZeRO-3 gathers the parameters each micro-batch (forward, and
    # backward when training) and reduce-scatters fp32 grads; otherwise one grad all-reduce per
    # optimizer step. It runs concurrently with compute.
    # a rank holds the dense weights split by its model-parallel group, and under expert
    # parallelism only 1/ep of the experts: its gradients (and gathers) shrink to that share
    experts_all = arch.expert_params * arch.experts * arch.moe_layers
    rank_params = (arch.params - experts_all) / mp + experts_all / (mp * max(par.ep, 1))
    share = rank_params / (arch.params / mp) if arch.params else 1.0
    grad_bytes *= share
    shard_bytes = rank_params * 2.0
    n_micro = max(1.0, tokens / dp / micro_tokens)
    if dp <= 1:
        dp_comm = 0.0
    elif sharded_gather:
        # FSDP/ZeRO-3 gathers inside the shard group (fsdp_size; -1 = all ranks); with hybrid
        # sharding the replicas also all-reduce their grad shards once per optimizer step
        group = dp if par.fsdp_size <= 0 else min(par.fsdp_size, dp)
        # a shard group's ranks on one node: its DP ranks there (one per model-parallel group)
        link = dev.ring_link(group * mp, dev.gpus_per_node // max(mp, 1))
        per_micro = shard_bytes * (1 if k <= 2 else 2) + (grad_bytes / mp if k > 2 else 0.0)
        dp_comm = n_micro * per_micro * (group - 1) / group / link
        replicas = dp // group
        if replicas > 1 and k > 2:
            # one replica all-reduce per shard index, all running at once: a replica group has
            # one rank on a node unless the shard groups are smaller than the node
            dp_comm += 2 * grad_bytes / mp / group * (replicas - 1) / replicas \
                / dev.ring_link(dp * mp, dev.gpus_per_node // max(group * mp, 1)) * mini_batches
    else:
        link = dev.ring_link(dp * mp, dev.gpus_per_node // max(mp, 1))
        dp_comm = (2 * grad_bytes / mp * (dp - 1) / dp / link * mini_batches) if k > 2 else 0.0
    # memory-bound work beside the GEMMs (norms, activations, rotary, softmax, residual adds,
    # cast/copy kernels): bytes that scale with tokens x hidden x layers and stream at the HBM
    # bandwidth. This term is why one GEMM efficiency gives a GPU-dependent MFU: it is ~8x
    # larger relative to the FLOPs on an H100 (ridge 295 FLOP/B) than on an H20 (ridge 37).
    elementwise = act_traffic * (k / 2.0) * tokens * arch.hidden * arch.layers * 2.0 / (gpus * dev.hbm_bw)
    # host-side launch cost: every micro-batch pass runs each layer (plus the embedding, head and
    # loss, about one layer's worth) k/2 times; an update also steps the optimizer over every
    # parameter tensor of the rank once per mini-batch
    per_mb = max(mini_batches, 1)
    passes = per_mb * math.ceil(max(tokens / dp / per_mb / micro_tokens - 1e-9, 1.0))
    launch_units = passes * (k / 2.0) * (arch.layers / max(par.pp, 1) + 1)
    if k > 2 and not lora:
        launch_units += per_mb * arch.tensors / max(mp, 1) * constant("optimizer_launch_per_tensor")
    launch = launch_ms * 1e-3 * launch_units
    secs = max((compute_eff / eta + elementwise) * bubble + tp_comm + a2a + launch, dp_comm)
    lower = max(compute + tp_comm + a2a, dp_comm)
    bound = "compute" if (compute_eff / eta + elementwise) * bubble + tp_comm + a2a >= dp_comm else "interconnect"
    return secs, lower, bound


# --------------------------------------------------------------------------- the step


def pools_of(plan: Plan) -> list[Pool]:
    """The plan's resolved pools (advisor.resolve holds the one default-pool rule)."""
    # model_construct: a listed pool may hold no role in play (its GPUs still count)
    return [Pool.model_construct(name=p.name, nodes=p.nodes, gpus_per_node=p.gpus_per_node, roles=list(p.roles))
            for p in resolve(plan).pools]


def pool_of(pools: list[Pool], role: str) -> Pool | None:
    for p in pools:
        if role in p.roles:
            return p
    return None


TRANSPORTS = ("cuda_ipc", "nccl_broadcast", "checkpoint_engine")
"""Weight-sync paths: in place on colocated GPUs (CUDA IPC handles after a gather of the
training shards), a per-tensor NCCL broadcast from the trainer to the rollout ranks (veRL
one-step-off/fully-async default, OpenRLHF ``vllm_sync_backend=nccl``), and the bucketed,
pipelined checkpoint engine (veRL fully-async ``checkpoint_engine``, perf-anchors.md 3)."""


def default_transport(plan: Plan) -> str:
    """Colocated policy and rollout share GPUs (CUDA IPC); separate pools broadcast over NCCL."""
    pools = pools_of(plan)
    pp, rp = pool_of(pools, "policy"), pool_of(pools, "rollout")
    return "cuda_ipc" if pp is not None and rp is not None and pp.name == rp.name else "nccl_broadcast"


def reshard_legs(plan: Plan | ResolvedPlan, pol: Arch, pool_gpus: int) -> list[tuple[float, int]]:
    """Bytes each training GPU receives when a colocated trainer hands its weights to the engine
    on the same GPU, per collective, with the number of ranks each collective spans.

    The frameworks materialise every FULL tensor on every training rank and let the engine keep
    its TP shard: veRL FSDP calls ``DTensor.full_tensor()`` per parameter of the state dict
    (verl/workers/fsdp_workers.py, the per-tensor generator handed to ``rollout.update_weights``),
    veRL Megatron broadcasts each tensor's shard across the PP group, then all-gathers it across
    TP (experts: across expert TP x EP) (verl/utils/megatron_utils.py ``per_tensor_generator``),
    NeMo-RL's refit streams Megatron-Bridge ``export_hf_weights`` (the same PP broadcast, then
    TP/EP gathers to full HF tensors, nemo_rl/models/policy/workers/megatron_policy_worker.py),
    and ZeRO-3 gathers each parameter. So a rank receives all the weight bytes it does not hold
    itself (not just the engine's ``W / rollout TP``): FSDP gathers its fp32 shards inside the
    shard group, ZeRO-3 over all ranks; Megatron holds ``1/(TP x PP)`` of the dense weights and
    ``1/(ETP x EP x PP)`` of the experts, receives the other stages' shards over the PP group
    (strided over the pool: PP is the outermost of Megatron's rank order) and the rest inside its
    stage's TP / ETP x EP group (consecutive ranks), which stays on NVLink while it fits the
    NVLink domain. Replicated weights (ZeRO-0/1/2, DDP) move nothing: an empty list."""
    rp = resolve(plan)
    info = rp.role_info[Role.POLICY]
    par = info.parallel
    mk = rp.plan.memory
    backend = mk.train_backend
    experts = pol.expert_params * pol.experts * pol.moe_layers * pol.bytes_per_param
    dense = pol.weight_bytes - experts
    if backend in ("fsdp", "fsdp2"):
        span = min(par.fsdp_size, pool_gpus) if par.fsdp_size > 0 else pool_gpus
        # veRL FSDP keeps fp32 parameters (the same rule as its fp32 gradients in predict_step)
        return [(pol.params * 4.0 * (span - 1) / span, span)] if span > 1 else []
    if backend == "megatron":
        etp = expert_tensor_parallel(rp.plan, par)
        ep = max(par.ep, 1)
        held = dense / (par.tp * par.pp) + experts / (etp * ep * par.pp)
        legs = []
        if par.pp > 1:
            legs.append((held * (par.pp - 1), max(min(pool_gpus, par.tp * par.cp * par.pp * ep), 1)))
        gathered = max(pol.weight_bytes - held * par.pp, 0.0)
        if gathered > 0:
            legs.append((gathered, max(min(pool_gpus, max(par.tp, etp * ep)), 1)))
        return legs
    if backend == "deepspeed" and mk.zero_stage == 3 and pool_gpus > 1:
        return [(pol.weight_bytes * (pool_gpus - 1) / pool_gpus, pool_gpus)]
    return []


def reshard_gather(plan: Plan | ResolvedPlan, pol: Arch, pool_gpus: int) -> tuple[float, int]:
    """All the bytes of ``reshard_legs`` and the widest span of its collectives ((0, 1): none)."""
    legs = reshard_legs(plan, pol, pool_gpus)
    return sum(b for b, _ in legs), max((s for _, s in legs), default=1)


def weight_sync_time(plan: Plan | ResolvedPlan, pol: Arch, dev: Device, policy_pool: Pool, rollout_pool: Pool,
                     transport: str, f: dict[str, float]) -> tuple[float, float, str]:
    """Seconds to move the policy weights into the rollout engines (time, physical limit, detail).

    - ``cuda_ipc`` (colocated): every training rank gathers each full tensor from the training
      shards (``reshard_gather``) over the group's link (NVLink in a node, the NIC share across
      nodes), then hands it to the engine on its GPU by IPC handle, which keeps its TP shard;
      with sleep level 1 the engine's weights come back over the host link first.
    - ``nccl_broadcast``: each full tensor crosses from the trainer to every rollout rank, one
      collective per tensor. A broadcast pipelines through the receivers, so the bytes cost is
      ``W / link`` on the slowest hop (NVLink when both pools share a node, else the node NIC)
      and every tensor pays a fixed launch/gather cost, plus a network round trip when the
      pools span nodes (MoE expert tensors are gathered across EP ranks first).
    - ``checkpoint_engine``: the same bytes, packed into large buckets and pipelined (gather,
      H2D, broadcast overlap), so the link runs near its rate and the per-tensor cost is only a
      copy into a bucket; inside one node each rollout rank receives just its TP shard.
    """
    if transport not in TRANSPORTS:
        raise AdvisorError(f"unknown weight-sync transport {transport!r}", field="sync_transport",
                           value=transport, allowed=", ".join(TRANSPORTS))
    rp = resolve(plan)
    plan = rp.plan
    tp_r = plan.rollout.tp
    if transport == "cuda_ipc":
        legs = reshard_legs(rp, pol, policy_pool.gpus)
        moved, span = sum(b for b, _ in legs), max((s for _, s in legs), default=1)
        link_s = sum(b / dev.dp_link(s) for b, s in legs)
        if plan.rollout.sleep_level == 1:
            link_s += pol.weight_bytes / tp_r / dev.host_bw
        # a per-tensor collective that leaves the NVLink domain also pays the network round trip
        # (the nccl_broadcast rule below)
        across = any(dev.spans_domain(s) for b, s in legs if b > 0)
        per_tensor = (f["sync_per_tensor_ms"] + (f["sync_inter_node_latency_ms"] if across else 0.0)) * 1e-3 * pol.tensors
        return link_s / f["sync_link_efficiency"] + per_tensor, link_s, \
            f"CUDA IPC: every rank gathers the full tensors, {moved / GIB:.1f} GiB per GPU over {span} ranks"
    # both pools inside one NVLink domain (one node, or one GB200 NVL72 rack): the broadcast stays on NVLink
    same_node = not dev.spans_domain(policy_pool.gpus + rollout_pool.gpus) \
        and not dev.spans_domain(plan.hardware.nodes * plan.hardware.gpus_per_node)
    bw = dev.link_bw if same_node else dev.node_nic_bw
    if transport == "checkpoint_engine":
        moved = pol.weight_bytes / tp_r if same_node else pol.weight_bytes
        link_s = moved / bw
        secs = link_s / f["ckpt_link_efficiency"] + f["ckpt_per_tensor_ms"] * 1e-3 * pol.tensors
        return secs, link_s, f"checkpoint engine: {moved / GIB:.1f} GiB in buckets over " \
            f"{'NVLink' if same_node else 'the node NIC'}"
    link_s = pol.weight_bytes / bw
    per_tensor = f["sync_per_tensor_ms"] * 1e-3 + (0.0 if same_node else f["sync_inter_node_latency_ms"] * 1e-3)
    return link_s / f["sync_link_efficiency"] + per_tensor * pol.tensors, link_s, \
        f"NCCL broadcast: {pol.weight_bytes / GIB:.1f} GiB over {'NVLink' if same_node else 'the node NIC'}"



def active_roles(plan: Plan) -> list[str]:
    """Roles that do work in a step, the rollout engine included (advisor.resolve)."""
    return [r.value for r in resolve(plan).roles]


def predict_step(plan: Plan, factors: dict[str, float] | None = None,
                 sync_transport: str | None = None) -> StepTime:
    """Predict one step of ``plan`` as placed by ``plan.placement`` (see module docstring).

    ``sync_transport`` overrides the weight-sync path of the layout (one of ``TRANSPORTS``)."""
    f = dict(default_factors())
    if factors:
        f.update(factors)
    rp = resolve(plan)  # once: the helpers below take the ResolvedPlan as it is
    dev = device_for(rp)
    pools = pools_of(rp)
    roles = active_roles(rp)
    total_gpus = sum(p.gpus for p in pools)
    d = plan.data
    batch = rp.batch
    n = batch.n
    prompts = batch.prompts
    seqs = batch.sequences
    prompt_len = float(d.mean_prompt_length or max(1, round(d.max_prompt_length * constant("default_prompt_fill"))))
    prompt_len = min(prompt_len, d.max_prompt_length)
    resp_mean = float(d.mean_response_length or max(1, round(d.max_response_length * constant("default_response_fill"))))
    assumptions: list[str] = []
    if d.mean_prompt_length is None:
        assumptions.append(f"mean prompt length {prompt_len:.0f} tokens assumed "
                           f"({constant('default_prompt_fill'):.0%} of max); set data.mean_prompt_length")
    if d.mean_response_length is None:
        assumptions.append(f"mean response length {resp_mean:.0f} tokens assumed "
                           f"({constant('default_response_fill'):.0%} of max); set data.mean_response_length")
    dist = length_dist(resp_mean, d.max_response_length, f["response_length_sigma"], f["response_clip_fraction"])
    remove_padding = plan.memory.remove_padding
    seq_len = prompt_len + dist.mean if remove_padding else d.max_prompt_length + d.max_response_length
    tokens = seqs * seq_len
    # sum over sequences of s^2 (attention FLOPs)
    e_s2 = (prompt_len ** 2 + 2 * prompt_len * dist.mean + dist.second_moment()) if remove_padding else seq_len ** 2
    seq_sq = seqs * e_s2
    micro_tokens = float(batch.max_token_len_per_gpu) if batch.dynamic \
        else float(batch.micro_per_gpu * batch.pair) * seq_len
    mini_batches = batch.optimizer_steps
    phases: list[_Phase] = []
    pol_spec, pol_rm = role_spec(rp, "policy")
    pol = arch_for(pol_spec, pol_rm.dtype, pol_rm.quantization)
    mk = plan.memory
    sharded = mk.train_backend in ("fsdp", "fsdp2") or (mk.train_backend == "deepspeed" and mk.zero_stage == 3)
    recompute = mk.recompute == "full"
    lora = mk.lora_rank > 0
    k_train = (4.0 if lora else 6.0) + (2.0 if recompute else 0.0)
    eta_f, eta_t = f["forward_mfu"], f[factor_variant(plan, "train_mfu")]
    # the routed-expert weight reads stream at the HBM efficiency of the paged engines' decode
    # (the memory side of the experts' roofline, expert_roofline)
    eta_hbm = f["decode_hbm_efficiency"]

    def pool_or_fail(role: str) -> Pool:
        p = pool_of(pools, role)
        if p is None:
            raise AdvisorError(f"role {role!r} is on no pool", field="plan.placement.pools",
                               value=[q.name for q in pools], allowed=f"a pool whose roles include {role}")
        return p

    # ---- generate
    rollout_pool = None
    if "rollout" in roles:
        rollout_pool = pool_or_fail("rollout")
        tp_r = plan.rollout.tp
        engines = plan.rollout.engines or max(rollout_pool.gpus // tp_r, 1)
        g = engines * tp_r
        pf_flops = 2.0 * pol.active * prompts * prompt_len + 2.0 * prompts * prompt_len ** 2 * pol.head_dim * pol.heads * pol.layers
        pf = pf_flops / (g * dev.peak_flops)
        # a vLLM/SGLang prefill step batches up to max_num_batched_tokens prompt tokens per engine
        pf_roof = expert_roofline(pol, dev, expert_tokens(pol, min(float(plan.rollout.max_num_batched_tokens),
                                                                     prompts * prompt_len / engines)), eta_f, eta_hbm)
        pf_eff = effective_flops(pol, prompts * prompt_len, prompts * prompt_len ** 2, 2.0, pf_roof) \
            / (g * dev.peak_flops)
        phases.append(_Phase("rollout_prefill", rollout_pool.name, g, pf_eff / eta_f, pf, "compute", eta_f,
                             f"{prompts} prompts x {prompt_len:.0f} tokens (prefix shared by n={n})"))
        static = plan.rollout.engine == "hf"
        eta_bw = f[factor_variant(plan, "decode_hbm_efficiency")]
        colocated_rollout = len(rollout_pool.roles) > 1
        kv_gib, kv_tok = rollout_kv_pool(pol_spec, int(pol.params), plan.rollout, mk.rollout_memory_fraction,
                                         dev.hbm_bytes / GIB, d.max_seq_len, pol_rm.quantization)
        secs, lower, conc, waves, bound = _decode(
            pol, dev, engines=engines, tp=tp_r, seqs=seqs, prompt=prompt_len, dist=dist,
            max_num_seqs=plan.rollout.max_num_seqs, kv_pool=kv_gib * GIB, kv_tok=kv_tok, eta_bw=eta_bw,
            eta_c=f["decode_compute_efficiency"],
            static_batch=static, streaming=plan.placement.mode == "fully_async",
            step_overhead_s=1e-3 * f[factor_variant(plan, "decode_step_overhead_ms")])
        phases.append(_Phase("rollout_decode", rollout_pool.name, g, secs, lower, bound, eta_bw,
                             f"{engines} engines x TP{tp_r}, {seqs} sequences, {conc} running per engine, "
                             f"{waves:.1f} waves, mean {dist.mean:.0f} / max {dist.max_len} tokens, "
                             f"clip ratio {dist.clip_ratio():.1%}"
                             + ("; colocated with training" if colocated_rollout else "")))
    else:
        conc, waves = 0, 0.0

    # ---- score: forward passes
    def fwd(role: str, phase: str) -> None:
        p = pool_or_fail(role)
        spec, rm = role_spec(rp, role) if role != "policy" else (pol_spec, pol_rm)
        a = arch_for(spec, rm.dtype, rm.quantization) if role != "policy" else pol
        par = rp.role_info[Role(role)].parallel
        secs, lower, bound = _compute_phase(a, dev, gpus=p.gpus, par=par, tokens=tokens, seq_sq=seq_sq, k=2.0,
                                            eta=eta_f, micro_tokens=micro_tokens, mini_batches=1,
                                            sharded_gather=sharded, grad_bytes=0.0, lora=False,
                                            act_traffic=f["activation_traffic"], launch_ms=f["launch_overhead_ms"],
                                            etp=expert_tensor_parallel(plan, par), eta_hbm=eta_hbm)
        phases.append(_Phase(phase, p.name, p.gpus, secs, lower, bound, eta_f, f"{tokens / 1e6:.2f} M tokens"))
        if role != "policy" and rp.role_info[Role(role)].param_offload:
            # a frozen model kept on the host (DeepSpeed-Chat / OpenRLHF ref/reward offload)
            # comes back over PCIe for its forward pass every step: its bf16 shard per GPU
            t = a.params * 2.0 / p.gpus / dev.host_bw
            phases.append(_Phase("offload_transfer", p.name, p.gpus, t, t, "host_link", 1.0,
                                 f"{a.params * 2.0 / p.gpus / GIB:.1f} GiB per GPU over PCIe ({role} weights)"))

    if plan.is_online:
        if "reward" in roles:
            fwd("reward", "reward_forward")
        if "reference" in roles:
            fwd("reference", "reference_forward")
        if rp.recomputes_old_logprobs:
            fwd("policy", "old_logprob_forward")
        if "critic" in roles:
            fwd("critic", "critic_forward")
    elif "reference" in roles:
        fwd("reference", "reference_forward")

    # ---- train
    def train(role: str, phase: str) -> None:
        p = pool_or_fail(role)
        if role == "policy":
            a, rm = pol, pol_rm
        else:
            spec, rm = role_spec(rp, role)
            a = arch_for(spec, rm.dtype, rm.quantization)
        info = rp.role_info[Role(role)]
        par = info.parallel
        # veRL FSDP keeps fp32 params, so its grads reduce in fp32; DeepSpeed/Megatron reduce bf16
        gb = a.params * (4.0 if mk.train_backend in ("fsdp", "fsdp2") else 2.0) if not lora else 0.0
        secs, lower, bound = _compute_phase(a, dev, gpus=p.gpus, par=par, tokens=tokens * plan.algorithm.epochs_per_batch,
                                            seq_sq=seq_sq * plan.algorithm.epochs_per_batch, k=k_train, eta=eta_t,
                                            micro_tokens=micro_tokens, mini_batches=mini_batches,
                                            sharded_gather=sharded, grad_bytes=gb, lora=lora,
                                            act_traffic=f["activation_traffic"], launch_ms=f["launch_overhead_ms"],
                                            etp=expert_tensor_parallel(plan, par), eta_hbm=eta_hbm)
        detail = f"{k_train:.0f}N FLOPs/token{' (full recompute)' if recompute else ''}, {mini_batches} optimizer steps"
        observed = f.get("observed_actor_mfu") if role == "policy" else None
        if observed:
            # a measured actor MFU (veRL's definition: 6N FLOPs over the update_policy time) is the
            # update's own efficiency, everything in it included (recompute, comm, launches)
            secs = pass_flops(a, tokens * plan.algorithm.epochs_per_batch, seq_sq * plan.algorithm.epochs_per_batch,
                              6.0) / (p.gpus * dev.peak_flops * observed)
            bound, eta_used = "compute", observed
            detail += f"; at the measured actor MFU {observed:g}"
        else:
            eta_used = eta_t
        phases.append(_Phase(phase, p.name, p.gpus, secs, lower, bound, eta_used, detail))
        # offloaded states cross the host link every step. FSDP/Megatron offload moves the
        # parameter shards in and out around each of the two phases that use them; FSDP's
        # optimizer offload moves the states (fp32 master + Adam, 12 B/param) in and out once per
        # update phase. An optimizer that steps on the host (advisor.resolve.optimizer_steps_on_host:
        # DeepSpeed's CPU Adam, Megatron's CPU optimizer) keeps the states there and moves bf16
        # grads down and bf16 params up at every optimizer step.
        moved = 0.0
        # the states a rank holds: FSDP shards inside its fsdp_size group (hybrid sharding keeps a
        # full copy per group, the memory model's rule in advisor.memory.ledger); ZeRO and Megatron's
        # distributed optimizer over the whole pool
        fsdp_group = par.fsdp_size if mk.train_backend in ("fsdp", "fsdp2") and par.fsdp_size > 0 else p.gpus
        shard = a.params / min(fsdp_group, p.gpus)
        if info.param_offload:
            moved += 2 * 2 * shard * 2.0
        host_step = optimizer_steps_on_host(mk.train_backend, info.optimizer_offload) and not lora
        if info.optimizer_offload and not lora:
            if host_step:
                moved += mini_batches * (2.0 + 2.0) * shard
            else:
                moved += 2 * 12.0 * shard
        if moved:
            t = moved / dev.host_bw
            phases.append(_Phase("offload_transfer", p.name, p.gpus, t, t, "host_link", 1.0,
                                 f"{moved / GIB:.1f} GiB per GPU over PCIe ({role})"))
        if host_step:
            # the optimizer steps the offloaded states on the host: bound by the node's DRAM
            # bandwidth, which the ranks of a node share (ZeRO and Megatron's distributed
            # optimizer shard the states per rank; Megatron's CPU step is torch's Adam, not
            # DeepSpeed's AVX kernel, so this bound is the more optimistic there)
            nodes = max(1, math.ceil(p.gpus / dev.gpus_per_node))
            t = mini_batches * a.params / nodes * constant("host_adam_bytes_per_param") \
                / (constant("host_dram_bandwidth_gbs") * 1e9)
            phases.append(_Phase("offload_transfer", p.name, p.gpus, t, t, "host_memory", 1.0,
                                 f"host Adam over {a.params / nodes / 1e9:.1f} B parameters per node, "
                                 f"{mini_batches} optimizer steps ({role})"))

    train("policy", "actor_update")
    if "critic" in roles:
        train("critic", "critic_update")

    # ---- weight sync
    # TRL without vLLM generates with the training model itself: nothing to sync
    if rollout_pool is not None and not (plan.framework.value == "trl" and plan.rollout.engine == "hf"):
        policy_pool = pool_or_fail("policy")
        transport = sync_transport or default_transport(rp)
        secs, link_s, detail = weight_sync_time(rp, pol, dev, policy_pool, rollout_pool, transport, f)
        if transport != "cuda_ipc":
            other = "checkpoint_engine" if transport == "nccl_broadcast" else "nccl_broadcast"
            alt, _, _ = weight_sync_time(rp, pol, dev, policy_pool, rollout_pool, other, f)
            detail += f"; {other.replace('_', ' ')} would take {alt:.2f} s"
        phases.append(_Phase("weight_sync", rollout_pool.name, rollout_pool.gpus, secs, link_s, "interconnect",
                             f["ckpt_link_efficiency" if transport == "checkpoint_engine" else "sync_link_efficiency"],
                             detail + f", {pol.tensors} tensors"))

    phases.append(_Phase("step_overhead", "all", total_gpus, f["step_overhead_s"], 0.0, "fixed", 1.0,
                         "reward scoring, data, RPC, logging"))

    # ---- combine: sum within a pool, max across pools, per stage
    stages = {
        "generate": {"rollout_prefill", "rollout_decode"},
        "score": {"reward_forward", "reference_forward", "old_logprob_forward", "critic_forward"},
        "train": {"actor_update", "critic_update", "offload_transfer"},
        "sync": {"weight_sync"},
        "fixed": {"step_overhead"},
    }

    def stage_time(names: set[str], lower: bool = False) -> float:
        per_pool: dict[str, float] = {}
        for ph in phases:
            if ph.phase in names:
                per_pool[ph.pool] = per_pool.get(ph.pool, 0.0) + (ph.lower if lower else ph.seconds)
        return max(per_pool.values(), default=0.0)

    def combine(lower: bool) -> tuple[float, str]:
        gen, score, tr = (stage_time(stages[s], lower) for s in ("generate", "score", "train"))
        sync, fixed = stage_time(stages["sync"], lower), stage_time(stages["fixed"], lower)
        mode = plan.placement.mode
        if mode in ("one_step_off", "fully_async") and rollout_pool is not None:
            return max(gen, score + tr) + sync + fixed, \
                f"{mode}: max(generate {gen:.1f} s, score+train {score + tr:.1f} s) + sync {sync:.1f} s + {fixed:.1f} s"
        return gen + score + tr + sync + fixed, \
            f"sync: generate {gen:.1f} + score {score:.1f} + train {tr:.1f} + sync {sync:.1f} + {fixed:.1f} s"

    step_s, path = combine(False)
    lower_s, _ = combine(True)
    if plan.placement.mode in ("one_step_off", "fully_async") and rollout_pool is not None:
        gen = stage_time(stages["generate"])
        rest = stage_time(stages["score"]) + stage_time(stages["train"])
        for ph in phases:
            if (ph.phase in stages["generate"] and gen <= rest) or \
                    ((ph.phase in stages["score"] or ph.phase in stages["train"]) and rest < gen):
                ph.overlapped = True
    worst = max((ph for ph in phases if not ph.overlapped and ph.phase != "step_overhead"),
                key=lambda ph: ph.seconds, default=phases[0])
    share = worst.seconds / step_s if step_s else 0.0
    bottleneck = f"{worst.phase} on {worst.pool} ({share:.0%}, {worst.bound})"
    q, band_note = uncertainty()
    return StepTime(step_s=_round(step_s, 3), lower_bound_s=_round(lower_s, 3), phases=[p.out() for p in phases],
                    step_s_low=round(step_s * math.exp(-q), 3) if q else None,
                    step_s_high=round(step_s * math.exp(q), 3) if q else None, band_note=band_note,
                    bottleneck=bottleneck, critical_path=path, tokens_per_step=int(tokens),
                    tokens_per_s_per_gpu=round(tokens / step_s / total_gpus, 2), total_gpus=total_gpus,
                    decode_waves=round(waves, 2), concurrency_per_engine=conc, assumptions=assumptions)


def uncertainty() -> tuple[float, str]:
    """Half-width of the likely band in log space, and where it comes from.

    With a calibration profile: the step-to-step spread of the run it was fitted on. Without:
    the 68th percentile of |log(predicted/published)| over the published rows predicted by
    factors fitted without their source (leave-one-source-out), i.e. the error to expect on a
    setup the fit has not seen."""
    from advisor.profiles import active

    prof = active()
    if prof is not None and prof.band:
        return math.log1p(prof.band), f"spread of the steps of the run profile {prof.name} was fitted on"
    fit = _table().get("fit", {})
    q = fit.get("cv_p68_abs_log_error")
    if not q:
        return 0.0, ""
    return float(q), ("68% of published rows fall within this band when predicted by factors fitted without "
                      "their source (benchmarks/placement_accuracy.py --cv)")


Infeasible = _Infeasible
