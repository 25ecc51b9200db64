"""calibrate, and budget_memory / plan_placement with a calibration profile: the I/O half.

``calibrate`` reads a run (a registry id, a log file or a metrics folder), fits a profile with
``advisor.placement.calibration`` and saves it as ``<data dir>/profiles/NAME.json``. The two
planning tools load a profile by name (``profile`` argument, else ``plan.profile``) and run the
pure core inside ``advisor.profiles.applied``; their answers name the profile they used.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from advisor.errors import AdvisorError
from advisor.memory.models import MemoryBudget
from advisor.placement.models import Layout, PlacementReport
from advisor.plan import Plan
from advisor.profiles import Profile, applied

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$")


def profiles_dir() -> Path:
    from backends.data_folder import data_dir

    d = data_dir() / "profiles"
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    return d


def _check_name(name: str, field: str = "name") -> str:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise AdvisorError("not a valid profile name", field=field, value=name,
                           allowed="1-80 letters, digits, '.', '_', '-' (starting with a letter or digit)")
    return name


def list_profiles() -> list[str]:
    return sorted(p.stem for p in profiles_dir().glob("*.json"))


def load_profile(name: str | None, field: str = "profile") -> Profile | None:
    """The saved profile ``name`` (None for None); a missing one is an error that lists the others."""
    if name is None:
        return None
    path = profiles_dir() / f"{_check_name(name, field)}.json"
    if not path.is_file():
        have = ", ".join(list_profiles()) or "none yet (run `rl-advisor calibrate`)"
        raise AdvisorError("no calibration profile with this name", field=field, value=name, allowed=have)
    try:
        return Profile.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise AdvisorError(f"profile file is damaged: {str(exc)[:200]}", field=field, value=name,
                           allowed="re-create it with `rl-advisor calibrate`") from None


def save_profile(profile: Profile) -> Path:
    """Written through the one hardened writer (no link followed, atomic replace, private)."""
    from rl_advisor.safe_paths import OutputDir

    d = profiles_dir()
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
    with OutputDir(os.open(d, flags), d, "name") as out:
        return out.write(f"{_check_name(profile.name)}.json", profile.model_dump_json(indent=2), mode=0o600)


# --------------------------------------------------------------------------- reading a run


def _points_and_plan(source: str, plan: Plan | None) -> tuple[list, Plan, str]:
    """Metric points of a registry run, a log file or a folder, and the run's Plan."""
    from rl_advisor.launch_tools import RUN_ID_PATTERN

    p = Path(source).expanduser()
    if not p.exists() and RUN_ID_PATTERN.match(source):
        from backends import get_backend
        from backends.registry import RunNotFound, RunRegistry

        try:
            record = RunRegistry().get(source)
        except RunNotFound:
            raise AdvisorError("no run with this id in the registry, and no such file", field="source",
                               value=source, allowed="a run id from list_runs, a log file or a metrics folder") from None
        if plan is None and record.plan_yaml:
            from advisor.plan import plan_from_yaml

            plan = plan_from_yaml(record.plan_yaml)
        points = list(get_backend(record.backend, record.options).metrics(record))
        label = f"run {source}"
    else:
        from rl_advisor.metric_files import read_points
        from rl_advisor.safe_paths import check_input_path

        p = check_input_path(source, field="source")
        points = list(read_points(p))
        label = str(p)
    if plan is None:
        raise AdvisorError("the run's Plan is needed to predict its phases", field="plan", value=None,
                           allowed="--plan FILE (a log file or folder carries no Plan; a registry run does)")
    return points, plan, label


# --------------------------------------------------------------------------- the tools


class CalibrationResult(BaseModel):
    """What calibrate fitted: each phase measured, predicted before and after, and the saved profile."""

    profile: Profile
    saved_to: str = ""
    dry_run: bool = Field(False, description="True when save was false: nothing written.")

    def to_text(self) -> str:
        pr = self.profile
        lines = [f"Calibration profile {pr.name!r} from {pr.source}" + (" (not saved)" if self.dry_run else ""), "",
                 f"{'phase':<24} {'unit':<4} {'measured':>10} {'before':>10} {'err':>7} {'after':>10} {'err':>7} {'steps':>5}"]
        for c in pr.checks:
            lines.append(f"{c.phase:<24} {c.unit:<4} {c.measured:>10.4g} {c.before:>10.4g} {c.error_before:>+7.0%} "
                         f"{c.after:>10.4g} {c.error_after:>+7.0%} {c.points:>5}")
        if pr.time_factors:
            lines += ["", "time factors: " + ", ".join(f"{k}={v:.4g}" for k, v in pr.time_factors.items())]
        if pr.memory_constants:
            lines.append("memory terms: " + ", ".join(f"{k}={v:.4g}" for k, v in pr.memory_constants.items()))
        lines += [f"  - {n}" for n in pr.notes]
        if self.saved_to:
            lines += ["", f"saved to {self.saved_to}; use it with --profile {pr.name} (or plan.profile: {pr.name})"]
        return "\n".join(lines)


def calibrate(source: str, name: str, plan: Plan | None = None, clock: Literal["wall", "cpu"] = "wall",
              statistic: Literal["median", "min"] = "median", save: bool = True) -> CalibrationResult:
    """Fit this cluster's time-model efficiency factors and memory allocator terms from a run
    (registry id, log file or metrics folder: veRL timing_s/* and perf/max_memory_*, OpenRLHF
    timing/*, TRL step_time and profiling timers, NeMo-RL timers) and save them as profile ``name``
    for budget_memory / plan_placement ``--profile``. Refuses runs with too few logged steps."""
    from advisor.placement.calibration import calibrate_points

    _check_name(name)
    points, plan, label = _points_and_plan(source, plan)
    prof = calibrate_points(plan, points, name, label, clock=clock, statistic=statistic,
                            created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    saved = str(save_profile(prof)) if save else ""
    return CalibrationResult(profile=prof, saved_to=saved, dry_run=not save)


def budget_memory(plan: Plan, profile: str | None = None) -> MemoryBudget:
    """Will this Plan fit? Per-GPU peak per pool over the phases of one RL step, binding phase/term,
    host RAM, and a fix ladder in framework keys; ``profile`` (or plan.profile) applies a calibration."""
    from advisor.memory import budget_memory as core

    prof = load_profile(profile or plan.profile, "profile" if profile else "plan.profile")
    with applied(prof):
        return core(plan)


def plan_placement(plan: Plan, price_per_gpu_hour: float | None = None, steps: int | None = None,
                   top_k: int = 5, modes: list[Layout] | None = None,
                   profile: str | None = None) -> PlacementReport:
    """Rank placements by predicted step time (with its uncertainty band) after framework rules and
    the memory budget; ``profile`` (or plan.profile) applies a calibration profile."""
    from advisor.placement import plan_placement as core

    prof = load_profile(profile or plan.profile, "profile" if profile else "plan.profile")
    with applied(prof):
        return core(plan, price_per_gpu_hour=price_per_gpu_hour, steps=steps, top_k=top_k, modes=modes)
