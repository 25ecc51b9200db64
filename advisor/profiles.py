"""Calibration profiles: efficiency factors and memory allocator terms fitted on one cluster.

``rl-advisor calibrate`` fits a profile from a real run (advisor.placement.calibration) and saves
it in the data folder; ``budget_memory`` and ``plan_placement`` apply it when asked (``--profile
NAME`` or ``plan.profile``). This module is the pure half: the profile's model and a context
that makes the time model (``timemodel.default_factors``) and the memory ledger
(``memory.constants.const``) read the profile's values instead of the published defaults, so
neither core function needs a new parameter and the answer can say which profile it used.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

from pydantic import BaseModel, Field

DEFAULT_LABEL = "default (published fit, advisor/data)"


class PhaseCheck(BaseModel):
    """One measured phase beside the prediction before and after calibration."""

    phase: str = Field(description="Timing group (gen, old_log_prob, update_actor, step, ...) or memory term.")
    unit: str = "s"
    measured: float
    before: float
    after: float
    points: int = Field(description="Steps that measured it (after the warm-up step).")

    @property
    def error_before(self) -> float:
        return self.before / self.measured - 1.0 if self.measured else 0.0

    @property
    def error_after(self) -> float:
        return self.after / self.measured - 1.0 if self.measured else 0.0


class Profile(BaseModel):
    """A named set of fitted values for one cluster (and framework)."""

    name: str = Field(min_length=1, max_length=80, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    source: str = Field("", description="The run, log file or folder it was fitted on.")
    created: str = ""
    framework: str = ""
    gpu: str = ""
    time_factors: dict[str, float] = Field(default_factory=dict,
                                           description="Time-model factors that differ from the published fit.")
    memory_constants: dict[str, float] = Field(default_factory=dict,
                                               description="Memory allocator terms that differ from the defaults.")
    band: float | None = Field(None, description="Relative step-to-step spread of the run (half the 16-84% range / median).")
    checks: list[PhaseCheck] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    @property
    def label(self) -> str:
        where = f", fitted on {self.source}" if self.source else ""
        return f"{self.name} (calibrated{where})"


_ACTIVE: ContextVar[Profile | None] = ContextVar("rl_advisor_profile", default=None)


@contextmanager
def applied(profile: Profile | None) -> Iterator[Profile | None]:
    """Within the block, the time model and the memory ledger read ``profile``'s values."""
    token = _ACTIVE.set(profile)
    try:
        yield profile
    finally:
        _ACTIVE.reset(token)


def active() -> Profile | None:
    return _ACTIVE.get()


def active_label() -> str:
    prof = _ACTIVE.get()
    return prof.label if prof is not None else DEFAULT_LABEL
