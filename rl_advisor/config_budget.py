"""The budget_memory_from_config tool: import (pure), resolve the imported roles' models (a local
checkpoint folder or a hub id in the framework config: rl_advisor.model_source), then budget."""

from __future__ import annotations

from advisor.memory.from_config import ConfigBudget, import_for_budget
from advisor.plan import Framework


def budget_memory_from_config(text: str, framework: Framework | None = None, gpu: str | None = None,
                              mean_prompt_length: int | None = None,
                              mean_response_length: int | None = None) -> ConfigBudget:
    """Will this existing veRL / OpenRLHF / TRL config OOM? Imports it into a Plan (reporting what
    was not understood), applies the GPU type and typical lengths a config does not carry, and
    returns the full memory budget with the fix ladder in that framework's keys."""
    from advisor.memory import budget_memory
    from rl_advisor.model_source import resolve_plan_models

    imported = import_for_budget(text, framework, gpu, mean_prompt_length, mean_response_length)
    plan = resolve_plan_models(imported.plan)
    return ConfigBudget(imported=imported.model_copy(update={"plan": plan}), budget=budget_memory(plan))
