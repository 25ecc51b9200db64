"""budget_memory on an existing framework config: import it (advisor.importers), let the caller
fill what a config never says (GPU type, typical lengths), and budget the resulting Plan."""

from __future__ import annotations

from pydantic import BaseModel

from advisor.errors import AdvisorError

from advisor.importers import ImportResult, import_config
from advisor.memory.models import MemoryBudget
from advisor.plan import Framework, Plan


class ConfigBudget(BaseModel):
    """The import (with what was not understood) and the memory budget of the imported Plan."""

    imported: ImportResult
    budget: MemoryBudget

    def to_text(self) -> str:
        imp = self.imported
        head = [f"Imported {imp.framework.value} config ({imp.framework_version}): {len(imp.mapped)} keys "
                f"mapped, {len(imp.not_understood)} not understood"]
        if imp.not_understood:
            head += ["Not understood (not in the budget):"] + [f"  - {x}" for x in imp.not_understood]
        if imp.legacy:
            head += ["Legacy spellings:"] + [f"  - {x}" for x in imp.legacy]
        return "\n".join(head) + "\n\n" + self.budget.to_text()


def budget_memory_from_config(text: str, framework: Framework | None = None, gpu: str | None = None,
                              mean_prompt_length: int | None = None,
                              mean_response_length: int | None = None) -> ConfigBudget:
    """Will this existing veRL / OpenRLHF / TRL config OOM? Imports it into a Plan (reporting what
    was not understood), applies the GPU type and typical lengths a config does not carry, and
    returns the full memory budget with the fix ladder in that framework's keys."""
    from advisor.memory import budget_memory

    imported = import_for_budget(text, framework, gpu, mean_prompt_length, mean_response_length)
    return ConfigBudget(imported=imported, budget=budget_memory(imported.plan))


def import_for_budget(text: str, framework: Framework | None = None, gpu: str | None = None,
                      mean_prompt_length: int | None = None,
                      mean_response_length: int | None = None) -> ImportResult:
    """The import half of budget_memory_from_config: the config as a Plan, with the GPU type and
    typical lengths a config does not carry (the face resolves the models before budgeting)."""
    mean_prompt_length = _positive("mean_prompt_length", mean_prompt_length)
    mean_response_length = _positive("mean_response_length", mean_response_length)
    imported = import_config(text, framework)
    plan = imported.plan
    update: dict = {}
    if gpu:
        update["hardware"] = plan.hardware.model_copy(update={"gpu": gpu})
    data_upd = {k: v for k, v in (("mean_prompt_length", mean_prompt_length),
                                  ("mean_response_length", mean_response_length))
                if v is not None}
    if data_upd:
        update["data"] = plan.data.model_copy(update=data_upd)
    if update:
        plan = Plan.model_validate({**plan.model_dump(mode="python"),
                                    **{k: v.model_dump(mode="python") for k, v in update.items()}})
        imported = imported.model_copy(update={"plan": plan})
    return imported


def _positive(name: str, value: int | str | None) -> int | None:
    """A token count from JSON (int) or the CLI (text)."""
    if value is None:
        return None
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = 0
    if n <= 0:
        raise AdvisorError("must be a positive number of tokens", field=name, value=value, allowed="an integer > 0")
    return n
