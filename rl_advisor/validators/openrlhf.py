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


@cache
def main_block(module: str):
    """Compiled ``__main__`` block of ``openrlhf/cli/<module>.py`` (parser + post-parse checks)."""
    name = module.rsplit(".", 1)[-1]
    path = openrlhf_dir() / "cli" / f"{name}.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
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
    mod = ast.fix_missing_locations(_Rewrite().visit(mod))
    return compile(mod, str(path), "exec")


def parse(module: str, argv: list[str]) -> tuple[SimpleNamespace, str]:
    """Run OpenRLHF's own parser and checks on ``argv``; returns (args, printed warnings)."""
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
                                 "hierarchize": _hierarchize(), "argparse": argparse_view}
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
    try:
        _, printed = parse(module, argv)
        warnings += [line for line in printed.splitlines() if line.strip()]
    except ParserExit as exc:
        errors.append(str(exc))
    except AssertionError as exc:
        errors.append(f"post-parse assert: {exc}")
    except Exception as exc:  # noqa: BLE001 - any failure in OpenRLHF's checks rejects the flags
        errors.append(f"{type(exc).__name__}: {exc}")
    return ValidationResult(artifact=artifact.name, validator=name, ok=not errors, errors=errors,
                            warnings=warnings, seconds=time.perf_counter() - t0)
