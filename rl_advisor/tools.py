"""The one list of tools that the MCP server and the CLI both expose.

Each entry points at a typed function (pydantic models in, a pydantic model out). The MCP
server derives its input/output schemas from the signature; the CLI derives its flags from the
same signature, so the two faces cannot drift apart.

A new tool is one ``ToolSpec`` here. Over MCP it automatically gets the slim surface
(``rl_advisor.tool_surface``): a Plan parameter listed as a pointer to the schema resource, a
``detail`` switch, lists cut to ``list_limit`` with counts of what was left out. Name the bulky
fields of its result in ``detail_fields``; ``tests/test_tool_surface.py`` fails when any tool
definition exceeds 6 KB or the whole listing 40 KB.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import sqlite3
import sys
from dataclasses import dataclass
from typing import Any, Callable

from pydantic import ValidationError

from advisor.errors import AdvisorError, as_advisor_error


@dataclass(frozen=True)
class ToolSpec:
    name: str
    target: str  # "module:function"
    summary: str
    read_only: bool = True   # MCP annotation readOnlyHint: no side effects outside the reply
    destructive: bool = False  # MCP annotation destructiveHint: may end or delete something
    cli_only: bool = False
    # The compact MCP answer (rl_advisor.tool_surface): fields left out unless detail=true (dotted,
    # through objects and list items), the length every list is cut to, and what to call next.
    detail_fields: tuple[str, ...] = ()
    list_limit: int = 5
    next_step: str = ""

    @property
    def cli_name(self) -> str:
        return self.name.replace("_", "-")

    def load(self) -> Callable[..., Any]:
        module, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(module), attr)


TOOLS: list[ToolSpec] = [
    # In the order of the loop: choose -> budget -> place -> render -> launch -> read back -> diagnose.
    ToolSpec("validate_plan", "advisor.plan_check:validate_plan",
             "Check a Plan: report every invalid field and fill method defaults.",
             detail_fields=("plan_yaml",),
             next_step="budget_memory with this Plan"),
    ToolSpec("choose_method", "advisor.choose_method:choose_method",
             "Rank post-training methods (DPO, GRPO, PPO, ...) for an objective, with rationale.",
             detail_fields=("ranked.sources", "ranked.rationale", "not_recommended", "facts"),
             list_limit=3, next_step="choose_framework with the best method"),
    ToolSpec("choose_framework", "advisor.choose_framework:choose_framework",
             "Rank frameworks (veRL, OpenRLHF, TRL, NeMo-RL, ...) for a method and scale, with why-nots.",
             detail_fields=("ranked.reasons", "ranked.rule_points", "why_not", "facts"),
             list_limit=3, next_step="write the Plan, then budget_memory"),
    ToolSpec("list_catalog", "advisor.catalog:list_catalog",
             "List the GPU catalog (memory, bandwidth, FLOP/s, links) or the model catalog (exact dims).",
             detail_fields=("gpus", "models", "rows.aliases", "rows.source"), list_limit=40),
    ToolSpec("import_config", "advisor.importers:import_config",
             "Read a veRL launch (Hydra overrides), OpenRLHF command line or TRL config YAML into a Plan; "
             "lists every setting that was not understood and recognises OpenRLHF 0.9.5 legacy flags.",
             detail_fields=("mapped", "settings"),
             next_step="budget_memory or render_config with the Plan (plan YAML)"),
    ToolSpec("budget_memory", "rl_advisor.calibrate_tool:budget_memory",
             "Will this Plan fit? Per-GPU peak per pool over the phases of one RL step (rollout, log-probs, "
             "updates, weight sync), binding phase/term, host RAM, and a ranked fix ladder in framework keys; "
             "profile applies a calibration.",
             detail_fields=("phases",), list_limit=3,
             next_step="fits: plan_placement; else apply fixes[0] to the Plan and call again"),
    ToolSpec("budget_memory_from_config", "rl_advisor.config_budget:budget_memory_from_config",
             "Will this existing veRL/OpenRLHF/TRL config OOM? Import it, then budget_memory with the "
             "fix ladder in that framework's keys (give gpu and typical lengths a config does not carry).",
             detail_fields=("imported.mapped", "imported.settings", "budget.phases"),
             list_limit=3, next_step="apply budget.fixes[0] in your config, or import_config and plan_placement"),
    ToolSpec("plan_placement", "rl_advisor.calibrate_tool:plan_placement",
             "Rank placements (colocated/split/async pools, per-role parallelism, rollout TP x engines) by "
             "predicted step time with its uncertainty band; best as an updated Plan, Ray/K8s resources, "
             "GPU-hours and cost; profile applies a calibration.",
             detail_fields=("ranked", "given", "rejected", "ray", "k8s", "time_model"),
             list_limit=8, next_step="render_config with best_plan"),
    ToolSpec("render_config", "rl_advisor.render_tool:render_config",
             "Render a Plan into veRL/OpenRLHF/TRL/NeMo-RL launch files + Ray job + K8s manifests, "
             "validated by each framework's own parser or schema; writes files only with output_dir.",
             read_only=False,
             detail_fields=("rendered.artifacts.content", "rendered.artifacts.argv",
                            "rendered.artifacts.data", "rendered.stamp"),
             next_step="launch_run (dry run), or output_dir to write the files; detail=true for file contents"),
    ToolSpec("translate_config", "rl_advisor.render_tool:translate_config",
             "Import a veRL/OpenRLHF/TRL config and render it for another framework, with what does not carry over.",
             read_only=False,
             detail_fields=("result.rendered.artifacts.content", "result.rendered.artifacts.argv",
                            "result.rendered.artifacts.data", "result.rendered.stamp"),
             next_step="budget_memory with the Plan; detail=true for file contents"),
    ToolSpec("launch_run", "rl_advisor.launch_tools:launch_run",
             "Launch a Plan locally, on Ray or on Kubernetes (dry run unless confirm=true); returns the run id.",
             read_only=False,
             detail_fields=("launch_script", "backend_ids"),
             next_step="after confirm=true: run_status / run_metrics with the run_id"),
    ToolSpec("run_status", "rl_advisor.launch_tools:run_status",
             "State of a launched run (re-derived from its backend) with its status history.",
             detail_fields=("backend_ids", "history"), next_step="run_metrics, then diagnose_run"),
    ToolSpec("run_logs", "rl_advisor.launch_tools:run_logs",
             "Last lines of a launched run's console output."),
    ToolSpec("run_metrics", "rl_advisor.launch_tools:run_metrics",
             "A launched run's metrics so far, in the normalised vocabulary (read incrementally).",
             detail_fields=("raw_keys", "series"), next_step="diagnose_run with the run_id"),
    ToolSpec("stop_run", "rl_advisor.launch_tools:stop_run",
             "Stop a run by its registry id (dry run unless confirm=true).", read_only=False,
             destructive=True),
    ToolSpec("list_runs", "rl_advisor.launch_tools:list_runs",
             "Runs in the registry, newest first.",
             list_limit=20),
    ToolSpec("calibrate", "rl_advisor.calibrate_tool:calibrate",
             "Fit this cluster's step-time factors and memory allocator terms from a run (id, log or "
             "folder) into a named profile for --profile; shows each phase before/after vs measured.",
             read_only=False, detail_fields=("profile.notes",),
             next_step="budget_memory / plan_placement with profile=<name>"),
    ToolSpec("diagnose_run", "rl_advisor.diagnose_tool:diagnose_run",
             "Diagnose an RL run (registry id, log file/dir, or inline metrics): ranked findings with "
             "evidence (metric steps/values or log lines) and exact fix keys for its framework.",
             detail_fields=("checks", "series", "findings.evidence.lines"), list_limit=3,
             next_step="apply the first finding's fixes in the Plan; re-run and diagnose again"),
    ToolSpec("audit_data", "rl_advisor.audit_tool:audit_data",
             "Check a preference/KTO/prompt data set (parquet, JSONL, CSV, datasets folder) against the "
             "framework and method that will read it: ranked findings with rows, cause and fix key.",
             read_only=False,  # writes a file only with html_report
             detail_fields=("columns", "lengths.bin_edges", "lengths.bin_counts"), list_limit=8,
             next_step="fix the error findings (the keys or columns named), then render_config"),
]


def available_tools() -> list[tuple[ToolSpec, Callable[..., Any]]]:
    """Every tool with its function. A tool module must import on the light core install (heavy
    packages are imported inside the functions), so a failure here is a bug, not a missing extra."""
    return [(spec, spec.load()) for spec in TOOLS]


def _labelled(exc: BaseException) -> AdvisorError:
    """An input-driven resource error as an AdvisorError that says what was too big."""
    if isinstance(exc, ValidationError):
        return as_advisor_error(exc)
    if _is_registry_error(exc):
        return AdvisorError(str(exc), field="registry",
                            allowed="a readable registry; move a corrupted registry.sqlite3 aside")
    if isinstance(exc, sqlite3.DatabaseError):
        return AdvisorError(f"the run registry cannot be read ({exc}); it may be corrupted: move "
                            "registry.sqlite3 out of the data folder to start a new one",
                            field="registry", allowed="a readable rl-advisor registry")
    if isinstance(exc, OverflowError):
        return AdvisorError("a number in the input is too large to compute with", field="(input)",
                            allowed="numbers within float range (|x| < 1.8e308)")
    return AdvisorError("the input is nested too deeply or too large to process", field="(input)",
                        allowed="inputs within the documented size limits (README, 'Limits')")


def resolve_models(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Every Plan argument with its roles' models resolved (local folder, config.json or hub id
    -> ``spec``; ``path`` for rendering): the I/O the pure core does not do. Other arguments pass."""
    from advisor.plan import Plan

    if not any(isinstance(v, Plan) for v in (*args, *kwargs.values())):
        return args, kwargs
    from rl_advisor.model_source import resolve_plan_models

    fix = (lambda v: resolve_plan_models(v) if isinstance(v, Plan) else v)
    return tuple(fix(a) for a in args), {k: fix(v) for k, v in kwargs.items()}


def guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn pydantic and advisor errors raised inside a tool into AdvisorError, label the
    errors that oversized input causes (recursion, overflow, memory), and pass every result
    through the one secret scrubber (``advisor.secrets.scrub_obj``): MCP and CLI faces both
    call tools through here, so no tool result carries a credential. Plan arguments get their
    models resolved first (``resolve_models``: local folder, config.json or hub id).

    The signature is kept (``functools.wraps``) so schema generation still sees the real types.
    """
    from advisor.secrets import scrub_obj

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                args, kwargs = resolve_models(args, kwargs)
                return scrub_obj(await fn(*args, **kwargs))
            except (AdvisorError, KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:
                if _input_error(exc):
                    raise _labelled(exc) from None
                raise
        return async_wrapper

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            args, kwargs = resolve_models(args, kwargs)
            return scrub_obj(fn(*args, **kwargs))
        except (AdvisorError, KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:
            if _input_error(exc):
                raise _labelled(exc) from None
            raise
    return wrapper


def _is_registry_error(exc: object) -> bool:
    """backends.registry.RegistryError, without importing the backends at start (tools/list
    imports no tool module): if the module is not loaded, nothing raised one."""
    mod = sys.modules.get("backends.registry")
    return mod is not None and isinstance(exc, mod.RegistryError)


def _input_error(exc: BaseException) -> bool:
    return isinstance(exc, _INPUT_ERRORS) or _is_registry_error(exc)


_INPUT_ERRORS = (ValidationError, RecursionError, OverflowError, MemoryError, sqlite3.DatabaseError)


__all__ = ["TOOLS", "ToolSpec", "available_tools", "guarded", "AdvisorError"]
