"""Output models of budget_memory: the ledger (terms per phase per pool), the verdict, the fixes.

One model per concept, reused by the MCP tool's structured output, the CLI table and the plot.
All sizes are GiB (2**30 bytes) per GPU unless a name says otherwise.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from advisor.plan import Framework

State = Literal["resident", "active", "offloaded", "asleep", "freed", "absent"]
"""Where a role's state lives during a phase: ``active`` = computing now (full working set),
``resident`` = parked on the GPU, ``offloaded`` = moved to host RAM, ``asleep`` = engine slept
(weights offloaded or discarded, KV cache freed), ``freed`` = released, ``absent`` = not in this pool."""


class Term(BaseModel):
    """One line of the ledger: a named amount of memory with the formula that produced it."""

    name: str = Field(..., description="Short term id, e.g. actor.params, rollout.kv_cache, logits.")
    role: str = Field(..., description="policy / reference / reward / critic / rollout / system.")
    kind: Literal["weights", "grads", "optimizer", "activations", "logits", "kv_cache", "engine",
                  "buffers", "system"]
    gib: float
    formula: str = Field("", description="How the number was computed (symbols and values).")


class PhaseLedger(BaseModel):
    """What one GPU of a pool holds during one phase of a step."""

    phase: str
    pool: str
    states: dict[str, State] = Field(default_factory=dict, description="Role -> state in this phase.")
    terms: list[Term] = Field(default_factory=list)
    total_gib: float = 0.0
    check: str | None = Field(None, description="A hard failure condition of this phase that is not "
                              "a sum (e.g. vLLM's startup free-memory check), when it fails.")

    def largest_term(self) -> Term | None:
        return max(self.terms, key=lambda t: t.gib) if self.terms else None


class PoolBudget(BaseModel):
    """The verdict for one pool of GPUs (colocated roles share every GPU of the pool)."""

    name: str
    roles: list[str]
    gpus: int
    capacity_gib: float
    peak_gib: float
    headroom_gib: float
    fits: bool
    binding_phase: str
    binding_term: str
    failed_check: str | None = None


class HostTerm(BaseModel):
    name: str
    gib: float
    formula: str = ""


class HostBudget(BaseModel):
    """Host RAM per node: offloaded states, engine sleep copies, pinned buffers, processes."""

    capacity_gib: float
    peak_gib: float
    fits: bool
    terms: list[HostTerm] = Field(default_factory=list)


class Fix(BaseModel):
    """One rung of the fix ladder, in the chosen framework's own keys."""

    rank: int
    id: str
    framework: Framework
    settings: dict[str, str] = Field(..., description="Framework keys and the values to set.")
    plan_change: dict[str, str] = Field(default_factory=dict, description="The same change on the Plan.")
    what: str
    new_peak_gib: float
    fits_after: bool
    cost: str = Field("", description="What the fix costs (speed, quality).")
    source: str = ""


class MemoryBudget(BaseModel):
    """The answer of budget_memory: does the plan fit, where is the peak, what to change."""

    fits: bool
    framework: Framework
    gpu: str
    pools: list[PoolBudget]
    phases: list[PhaseLedger]
    host: HostBudget
    fixes: list[Fix] = Field(default_factory=list)
    assumptions: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    profile: str = Field("default", description="The calibration profile whose allocator terms were used.")

    def pool(self, name: str) -> PoolBudget:
        for p in self.pools:
            if p.name == name:
                return p
        raise KeyError(name)

    def peak_gib(self) -> float:
        return max(p.peak_gib for p in self.pools)

    def to_text(self) -> str:
        """A readable report: verdict per pool, the phase x term table, host RAM, the fix ladder."""
        from advisor.memory.report import render_text

        return render_text(self)
