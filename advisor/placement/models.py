"""Output models of plan_placement, the time model and the resource plans.

One model per concept, shared by the MCP tool (structured output), the CLI (``--json`` and the
``to_text`` tables) and the backends (``RayResourcePlan`` is what ``backends/ray_placement.py``
creates; ``K8sResourcePlan`` is what the Kubernetes templates consume).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from advisor.memory.models import PoolBudget
from advisor.plan import Parallelism, Plan, Pool

PhaseName = Literal[
    "rollout_prefill", "rollout_decode", "reward_forward", "reference_forward",
    "old_logprob_forward", "critic_forward", "critic_update", "actor_update", "weight_sync",
    "offload_transfer", "step_overhead",
]
Bound = Literal["hbm_bandwidth", "compute", "interconnect", "host_link", "host_memory", "fixed"]
Layout = Literal["colocated", "split", "one_step_off", "fully_async"]


class PhaseTime(BaseModel):
    """One phase of an RL step: the prediction and the physical limit beside it.

    ``lower_bound_s`` is the same phase at 100 % efficiency (peak FLOP/s, full HBM or link
    bandwidth): no implementation can beat it. ``seconds`` applies the fitted efficiency.
    """

    phase: PhaseName
    pool: str
    gpus: int
    seconds: float
    lower_bound_s: float
    bound: Bound = Field(description="The resource that limits this phase.")
    efficiency: float = Field(description="Fitted efficiency applied to the physical limit.")
    overlapped: bool = Field(False, description="Hidden behind another pool's work (async layouts).")
    detail: str = ""


class StepTime(BaseModel):
    """Predicted time of one training step and what it is made of."""

    step_s: float
    lower_bound_s: float = Field(description="The step at 100 % efficiency (physical limit).")
    phases: list[PhaseTime]
    bottleneck: str = Field(description="The phase (and pool) that dominates the step.")
    critical_path: str = Field(description="How phases combine: sums on one pool, max across pools.")
    tokens_per_step: int = Field(description="Prompt + response tokens trained per step.")
    tokens_per_s_per_gpu: float
    total_gpus: int
    step_s_low: float | None = Field(None, description="Lower end of the likely step time (uncertainty band).")
    step_s_high: float | None = Field(None, description="Upper end of the likely step time (uncertainty band).")
    band_note: str = Field("", description="Where the band comes from.")
    decode_waves: float = Field(0.0, description="Sequences per engine / concurrent sequences per engine.")
    concurrency_per_engine: int = 0
    assumptions: list[str] = Field(default_factory=list)



class RuleViolation(BaseModel):
    """A framework or physical rule that rejects a candidate, with the reason and the source."""

    rule: str
    field: str
    message: str
    allowed: str | None = None
    source: str = ""


class Candidate(BaseModel):
    """One placement: pools, per-role parallelism, rollout layout, its time and memory."""

    label: str
    layout: Layout
    pools: list[Pool]
    parallel: dict[str, Parallelism] = Field(description="Per-role parallelism (policy, reference, ...).")
    rollout_tp: int
    rollout_engines: int
    time: StepTime
    memory: list[PoolBudget] = Field(default_factory=list, description="budget_memory's verdict per pool.")
    fits: bool = True
    memory_checked: bool = False
    violations: list[RuleViolation] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list, description="Trade-offs the step time does not show.")


class Rejection(BaseModel):
    """Why a group of candidates was pruned (rule id, how many, one example)."""

    reason: str
    rule: str
    count: int
    example: str
    source: str = ""


class CostEstimate(BaseModel):
    steps: int
    step_s: float
    wall_hours: float
    gpus: int
    gpu_hours: float
    price_per_gpu_hour: float | None = None
    cost_usd: float | None = None
    budget_gpu_hours: float | None = None
    within_budget: bool | None = None


class RayBundle(BaseModel):
    GPU: float = 0
    CPU: float = 1
    memory_bytes: int | None = Field(None, description="Ray 'memory' resource per bundle, bytes.")


class RayPool(BaseModel):
    """One placement group: its bundles and strategy, and why that strategy."""

    name: str
    roles: list[str]
    bundles: list[RayBundle]
    strategy: Literal["STRICT_PACK", "PACK", "SPREAD", "STRICT_SPREAD"]
    nodes: int
    reason: str

    @property
    def gpus(self) -> int:
        return int(sum(b.GPU for b in self.bundles))


class RayResourcePlan(BaseModel):
    """Placement groups for a Plan on a Ray cluster (created by backends/ray_placement.py)."""

    pools: list[RayPool]
    total_gpus: int
    total_cpus: float
    gpus_per_node: int
    nodes: int
    feasible: bool
    problems: list[str] = Field(default_factory=list,
                                description="Why Ray would leave a group PENDING forever.")


class K8sPool(BaseModel):
    name: str
    roles: list[str]
    pods: int
    gpus_per_pod: int
    cpus_per_pod: int
    memory_gib_per_pod: int
    gpu_resource: str = "nvidia.com/gpu"
    node_selector: dict[str, str] = Field(default_factory=dict)
    resource_flavor: str


class KueueFlavor(BaseModel):
    name: str
    node_labels: dict[str, str]
    gpus: int
    cpus: int
    memory_gib: int


class K8sResourcePlan(BaseModel):
    """Pods per pool and the Kueue objects that admit them."""

    namespace: str = "default"
    pools: list[K8sPool]
    resource_flavors: list[KueueFlavor]
    cluster_queue: str
    local_queue: str
    gpu_resource: str = "nvidia.com/gpu"


class TimeModelInfo(BaseModel):
    """Which efficiency factors were used and how well they fit the published rows."""

    factors: dict[str, float]
    fit_rows: int
    fit_median_abs_error: float
    fit_max_abs_error: float
    source: str
    profile: str = Field("default", description="The calibration profile whose factors were used.")
    loso_median_abs_error: float | None = Field(None, description="Leave-one-source-out median |error| "
                                                "on the published rows: the expected error on an unseen setup.")


class PlacementReport(BaseModel):
    """plan_placement's answer: ranked candidates, the best as an updated Plan, resources, cost."""

    best: Candidate
    ranked: list[Candidate]
    runner_up_lost: str = Field(description="Why the second-ranked plan lost to the best.")
    given: Candidate | None = Field(None, description="The plan's own placement, under the same model.")
    versus_given: str = ""
    rejected: list[Rejection] = Field(default_factory=list)
    candidates_considered: int = 0
    best_plan: Plan
    ray: RayResourcePlan
    k8s: K8sResourcePlan
    cost: CostEstimate | None = None
    time_model: TimeModelInfo
    memory_source: str = Field(description="Where the memory verdict comes from (budget_memory).")

    def to_text(self) -> str:
        lines = ["Placement plans (ranked by predicted step time)", ""]
        head = f"{'#':>2} {'layout':<13} {'pools':<34} {'roll tp x eng':<13} {'step s':>8} " \
               f"{'limit s':>8} {'tok/s/GPU':>9} {'bottleneck':<28} {'min headroom':>12}"
        lines.append(head)
        lines.append("-" * len(head))
        for i, c in enumerate(self.ranked, 1):
            pools = " + ".join(f"{p.name}:{p.gpus}" for p in c.pools)
            heads = [m.headroom_gib for m in c.memory]
            hr = f"{min(heads):.1f} GiB" if heads else "n/a"
            lines.append(f"{i:>2} {c.layout:<13} {pools[:34]:<34} "
                         f"{f'{c.rollout_tp} x {c.rollout_engines}':<13} {c.time.step_s:>8.1f} "
                         f"{c.time.lower_bound_s:>8.1f} {c.time.tokens_per_s_per_gpu:>9.0f} "
                         f"{c.time.bottleneck[:28]:<28} {hr:>12}")
        lines += ["", "Best plan, phase by phase (prediction | physical limit | bound):"]
        for ph in self.best.time.phases:
            tag = " (overlapped)" if ph.overlapped else ""
            lines.append(f"  {ph.phase:<20} {ph.pool:<10} {ph.seconds:>9.2f} s | {ph.lower_bound_s:>9.2f} s"
                         f" | {ph.bound}{tag}")
        lines += ["", f"Runner-up lost: {self.runner_up_lost}"]
        if self.given is not None:
            lines += [f"Versus the plan as given: {self.versus_given}"]
        if self.best.memory:
            lines += ["", f"Memory per pool ({self.memory_source}):"]
            for m in self.best.memory:
                lines.append(f"  {m.name:<10} {m.gpus:>3} GPUs  peak {m.peak_gib:7.1f} / {m.capacity_gib:6.1f} GiB"
                             f"  headroom {m.headroom_gib:6.1f} GiB  {'fits' if m.fits else 'DOES NOT FIT'}")
        if self.rejected:
            lines += ["", f"Pruned ({sum(r.count for r in self.rejected)} of {self.candidates_considered}):"]
            for r in self.rejected[:8]:
                lines.append(f"  {r.count:>5} x {r.rule}: {r.reason} (e.g. {r.example})")
        lines += ["", "Ray placement groups:"]
        for p in self.ray.pools:
            lines.append(f"  {p.name:<10} {len(p.bundles)} bundles x {p.bundles[0].GPU:g} GPU  {p.strategy:<11} {p.reason}")
        lines += ["", "Kubernetes (Kueue):"]
        for p in self.k8s.pools:
            lines.append(f"  {p.name:<10} {p.pods} pods x {p.gpus_per_pod} GPU, {p.cpus_per_pod} CPU, "
                         f"{p.memory_gib_per_pod} GiB  flavor={p.resource_flavor}")
        lines.append(f"  ClusterQueue {self.k8s.cluster_queue}, LocalQueue {self.k8s.local_queue}")
        if self.cost is not None:
            c = self.cost
            money = f", ${c.cost_usd:,.0f} at ${c.price_per_gpu_hour}/GPU-h" if c.cost_usd is not None else ""
            lines += ["", f"{c.steps} steps: {c.wall_hours:.1f} h wall, {c.gpu_hours:,.0f} GPU-hours{money}"]
            if c.budget_gpu_hours is not None:
                lines.append(f"  budget {c.budget_gpu_hours:,.0f} GPU-hours: "
                             + ("within budget" if c.within_budget else "OVER BUDGET"))
        if self.best.notes:
            lines += ["", "Notes on the best plan:"] + [f"  - {n}" for n in self.best.notes]
        tm = self.time_model
        band = self.best.time
        if band.step_s_low is not None and band.step_s_high is not None:
            lines += ["", f"Best plan's step: {band.step_s:.1f} s, likely {band.step_s_low:.1f}-{band.step_s_high:.1f} s "
                          f"({band.band_note})"]
        lines += [f"Time model ({tm.profile}): fitted on {tm.fit_rows} published rows, median |error| "
                  f"{tm.fit_median_abs_error:.0%}, max {tm.fit_max_abs_error:.0%}"
                  + (f"; leave-one-source-out median {tm.loso_median_abs_error:.0%}" if tm.loso_median_abs_error is not None else "")
                  + f" ({tm.source})"]
        return "\n".join(lines)
