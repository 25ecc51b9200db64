"""The result of import_config: the Plan, and everything that did not map onto it."""

from __future__ import annotations

from pydantic import BaseModel, Field

from advisor.plan import Framework, Plan, plan_to_yaml


class ImportResult(BaseModel):
    """A framework config read back into a Plan.

    ``not_understood`` lists every setting that was not carried into the Plan (unknown keys,
    unresolved shell variables, values the Plan cannot express) — nothing is dropped silently.
    ``settings`` keeps every key/value as found (after shell expansion), for translation."""

    plan: Plan
    framework: Framework
    framework_version: str = Field(..., description="The schema the keys were read against.")
    not_understood: list[str] = Field(default_factory=list)
    legacy: list[str] = Field(default_factory=list, description="Old spellings recognised (OpenRLHF 0.9.5 flat flags).")
    notes: list[str] = Field(default_factory=list, description="Assumptions and derived values.")
    mapped: dict[str, str] = Field(default_factory=dict, description="Framework key -> Plan field it set.")
    settings: dict[str, str] = Field(default_factory=dict, description="Every key and value as read.")

    def to_text(self) -> str:
        lines = [f"Imported a {self.framework.value} config ({self.framework_version}): "
                 f"{len(self.mapped)} keys mapped, {len(self.not_understood)} not understood", ""]
        if self.not_understood:
            lines += ["Not understood (not carried into the Plan):"] + [f"  - {x}" for x in self.not_understood] + [""]
        if self.legacy:
            lines += ["Legacy spellings:"] + [f"  - {x}" for x in self.legacy] + [""]
        if self.notes:
            lines += ["Notes:"] + [f"  - {x}" for x in self.notes] + [""]
        lines += ["Plan:", plan_to_yaml(self.plan)]
        return "\n".join(lines)
