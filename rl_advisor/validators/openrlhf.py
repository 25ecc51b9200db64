"""OpenRLHF 0.11.2: parse the rendered flags with OpenRLHF's own argparse parser and run its
post-parse checks, without importing its GPU-only modules.

The CLI modules import flash_attn / vllm at top level, so they are not imported. Instead the
source of ``openrlhf/cli/<name>.py`` from the installed package is parsed with ``ast``; the body of
its ``if __name__ == "__main__":`` block is executed with three edits: ``parser.parse_args()``
reads our argv, ``from openrlhf.utils.config import hierarchize`` is served from that one
self-contained file, and the final ``train(args)`` call plus the ModelScope hook are dropped.
Everything else (every ``add_argument``, every post-parse ``assert`` and normalisation) runs
as released. research/frameworks.md §0.3, §2.2.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import sys
import time
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from advisor.render.models import Artifact, ValidationResult
from rl_advisor.validators.shell import argv_after


class ParserExit(Exception):
    """argparse tried to exit (bad flag, bad value); carries its message."""


@cache
def openrlhf_dir() -> Path | None:
    spec = importlib.util.find_spec("openrlhf")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


@cache
def _hierarchize():
    path = openrlhf_dir() / "utils" / "config.py"
    spec = importlib.util.spec_from_file_location("_openrlhf_utils_config", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.hierarchize


class _Rewrite(ast.NodeTransformer):
    """``parse_args()`` reads our argv; each ``assert`` first records that it ran (``__ran__(i)``),
    so the result can list which of the entry's checks ran."""

    def __init__(self, source: str, filename: str):
        self.source = source
        self.filename = filename
        self.checks: list[str] = []

    def visit_Assert(self, node: ast.Assert) -> Any:
        text = " ".join((ast.get_source_segment(self.source, node.test) or "").split())
        self.checks.append(f"{self.filename}:{node.lineno} {text}")
        mark = ast.Expr(ast.Call(func=ast.Name(id="__ran__", ctx=ast.Load()),
                                 args=[ast.Constant(len(self.checks) - 1)], keywords=[]))
        return [ast.copy_location(mark, node), node]

    def visit_Call(self, node: ast.Call) -> Any:
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr == "parse_args" and not node.args:
            node.args = [ast.Name(id="__argv__", ctx=ast.Load())]
        return node


def _is_main_guard(node: ast.stmt) -> bool:
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__")


def _keep(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.ImportFrom) and stmt.module and stmt.module.startswith("openrlhf"):
        return False
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and \
            isinstance(stmt.value.func, ast.Name) and stmt.value.func.id == "train":
        return False
    if isinstance(stmt, ast.If) and "use_ms" in ast.unparse(stmt.test):
        return False
    return True


def main_block(module: str):
    """Compiled ``__main__`` block of ``openrlhf/cli/<module>.py`` (parser + post-parse checks)."""
    return _main_block(module)[0]


def entry_path(module: str) -> Path:
    return openrlhf_dir() / "cli" / f"{module.rsplit('.', 1)[-1]}.py"


@cache
def _main_block(module: str):
    """(compiled block, the post-parse asserts it contains as 'file:line condition')."""
    path = entry_path(module)
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, filename=str(path))
    block = next((n for n in tree.body if _is_main_guard(n)), None)
    if block is None:
        raise RuntimeError(f"no __main__ block in {path}")
    body = [s for s in block.body if _keep(s)]
    # stdlib imports the block relies on (argparse, os, datetime, math)
    # (argparse itself is provided by parse(), with a parser class that raises instead of exiting)
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)) and
               all((a.name.split(".")[0] if isinstance(n, ast.Import) else (n.module or "").split(".")[0])
                   in sys.stdlib_module_names - {"argparse"} for a in n.names)]
    mod = ast.Module(body=imports + body, type_ignores=[])
    rewrite = _Rewrite(source, path.name)
    mod = ast.fix_missing_locations(rewrite.visit(mod))
    return compile(mod, str(path), "exec"), tuple(rewrite.checks)


def parse(module: str, argv: list[str], ran: list[int] | None = None) -> tuple[SimpleNamespace, str]:
    """Run OpenRLHF's own parser and checks on ``argv``; returns (args, printed warnings).
    ``ran`` collects the indexes of the post-parse asserts that were evaluated."""
    import argparse

    code = main_block(module)

    class _Parser(argparse.ArgumentParser):
        def exit(self, status: int = 0, message: str | None = None):  # noqa: A003 - argparse API
            raise ParserExit((message or "").strip() or f"exit {status}")

        def error(self, message: str):
            raise ParserExit(f"{self.prog}: error: {message}")

    argparse_view = SimpleNamespace(**vars(argparse))
    argparse_view.ArgumentParser = _Parser  # the block constructs argparse.ArgumentParser()
    namespace: dict[str, Any] = {"__name__": "__rl_advisor_openrlhf__", "__argv__": list(argv),
                                 "hierarchize": _hierarchize(), "argparse": argparse_view,
                                 "__ran__": (ran if ran is not None else []).append}
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        exec(code, namespace)  # noqa: S102 - OpenRLHF's own released parser code
    return namespace["args"], out.getvalue()


def validate(artifact: Artifact) -> ValidationResult:
    t0 = time.perf_counter()
    module = artifact.entrypoint or "openrlhf.cli.train_ppo_ray"
    name = f"openrlhf 0.11.2 {module.rsplit('.', 1)[-1]} parser + post-parse asserts (from source)"
    if openrlhf_dir() is None:
        return ValidationResult(artifact=artifact.name, validator=name, ok=False, skipped=True,
                                warnings=["openrlhf is not installed (pip install --no-deps openrlhf==0.11.2)"])
    marker = ["--module", module] if "--module" in artifact.content else ["-m", module]
    try:
        argv = argv_after(artifact.content, marker)
    except ValueError as exc:
        return ValidationResult(artifact=artifact.name, validator=name, ok=False, errors=[str(exc)])
    errors: list[str] = []
    warnings: list[str] = []
    checks: list[str] = []
    ran: list[int] = []
    args = None
    try:
        args, printed = parse(module, argv, ran)
        warnings += [line for line in printed.splitlines() if line.strip()]
    except ParserExit as exc:
        errors.append(str(exc))
    except AssertionError as exc:
        errors.append(f"post-parse assert [{_main_block(module)[1][ran[-1]] if ran else '?'}]: {exc}")
    except Exception as exc:  # noqa: BLE001 - any failure in OpenRLHF's checks rejects the flags
        errors.append(f"{type(exc).__name__}: {exc}")
    listed = _main_block(module)[1]
    checks.append(f"{entry_path(module).name} __main__: {len(listed)} post-parse asserts, {len(set(ran))} evaluated")
    for i in sorted(set(ran)):
        failed = errors and i == ran[-1]
        checks.append(f"  {listed[i]} -> {'failed' if failed else 'passed'}")
    if args is not None:
        errors += _entry_checks(module, args, checks, warnings)
    name = f"openrlhf 0.11.2 {module.rsplit('.', 1)[-1]} parser + post-parse asserts + pre-GPU checks of train() (from source)"
    return ValidationResult(artifact=artifact.name, validator=name, ok=not errors, errors=errors,
                            warnings=warnings, checks=checks, seconds=time.perf_counter() - t0)


GPU_CALLS = frozenset({"setup_distributed", "async_init_model_from_pretrained", "init_model_from_pretrained"})
"""Calls in an OpenRLHF entry's ``train()`` that do the first GPU work (torch.distributed/NCCL set-up,
model loading on the GPU workers): the checks after them are not pre-GPU checks."""


def _entry_checks(module: str, args: Any, checks: list[str], warnings: list[str]) -> list[str]:
    """The checks the entry applies to the parsed arguments after ``__main__`` and before its first
    GPU work, run from the release's source (rl_advisor.validators.source_checks): ``train(args)``'s
    colocation asserts (actor/ref and critic/reward sizes, actor GPUs == engines x TP), the
    ``DeepspeedStrategy`` constructor ``get_strategy`` builds, and for ``--train.async_enable``
    ``PPOTrainerAsync``'s constructor (queue size). Model loading, Ray placement groups and vLLM
    engines are not run (they need GPUs)."""
    from rl_advisor.validators import source_checks

    root = openrlhf_dir()
    runs = [(entry_path(module), "train", {"args": args})]
    # every entry's train() starts with get_strategy(args); these are the keyword arguments it passes
    strategy_kwargs = dict(self=SimpleNamespace(args=args), seed=getattr(args.train, "seed", 42),
                           full_determinism=getattr(args.train, "full_determinism_enable", False),
                           max_norm=getattr(args, "max_norm", 1.0),
                           micro_train_batch_size=getattr(args.train, "micro_batch_size", 1),
                           train_batch_size=getattr(args.train, "batch_size", 128),
                           zero_stage=args.ds.zero_stage, args=args)
    runs.append((root / "utils" / "deepspeed" / "deepspeed.py", "DeepspeedStrategy.__init__", strategy_kwargs))
    if module == "openrlhf.cli.train_ppo_ray" and args.train.async_enable:
        runs.append((root / "trainer" / "ppo_trainer_async.py", "PPOTrainerAsync.__init__",
                     {"self": SimpleNamespace(), "strategy": SimpleNamespace(args=args)}))
    errors: list[str] = []
    for path, qualname, params in runs:
        if not source_checks.has_function(path, qualname):
            warnings.append(f"{path.name}:{qualname} not found in the installed release; its checks did not run")
            continue
        error = source_checks.run(path, qualname, params, stop_at=GPU_CALLS).record(checks, warnings, "--")
        if error:
            errors.append(error)
            break
    return errors
