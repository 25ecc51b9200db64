"""budget_memory: a phase-resolved GPU and host memory ledger for every role of an RL step.

``budget_memory(plan) -> MemoryBudget`` builds the ledger (advisor.memory.ledger), gives the
verdict per pool, and ranks fixes in the plan framework's own keys (advisor.memory.fixes).
Formulas live in advisor.memory.terms, engine semantics in advisor.memory.engines, constants in
advisor/data/memory_constants.yaml.
"""

from __future__ import annotations

from advisor.memory.models import (Fix, HostBudget, HostTerm, MemoryBudget, PhaseLedger, PoolBudget,
                                   Term)
from advisor.plan import Plan


def budget_memory(plan: Plan) -> MemoryBudget:
    """Will this plan fit? Per-GPU peak per pool (max over the phases of one RL step: weight sync,
    rollout, reward/ref/old log-prob, critic values, critic and actor updates), the binding phase
    and term, host RAM per node, and a ranked fix ladder in the framework's exact keys, each fix
    with the new peak it gives."""
    from advisor.memory.fixes import rank_fixes
    from advisor.memory.ledger import build_ledger

    from advisor.profiles import active_label

    budget = build_ledger(plan)
    budget.fixes = rank_fixes(plan, budget)
    budget.profile = active_label()
    return budget


__all__ = ["budget_memory", "MemoryBudget", "PoolBudget", "PhaseLedger", "HostBudget", "HostTerm",
           "Term", "Fix"]
