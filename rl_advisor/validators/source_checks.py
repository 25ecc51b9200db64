"""Run the checks a framework applies before its first GPU work, straight from its released source.

Several start-up checks live inside functions that cannot be imported on a CPU machine (veRL's
trainer classes import TransferQueue and vLLM-side modules at the top; OpenRLHF's ``train()`` sits
in a module that imports vLLM). The checks themselves are plain Python over the parsed config, so
this module parses the installed file with ``ast``, keeps only the check statements of one
function and runs them on our config:

- kept: ``assert``; ``raise`` (with the ``if`` that guards it); ``if``/``else`` around kept
  statements; ``return`` (an early return skips the checks after it, as in the original);
  assignments whose right-hand side calls nothing but pure builtins and config accessors (so a
  check can read a local such as ``train_batch_size = config.data.train_batch_size``); a call of
  ``self.<method>()`` on the same class is replaced by that method's kept statements.
- dropped: everything else (``ray.init``, placement groups, model loading, logging).

Each kept ``assert``/``raise`` is a check: the result says, per check, where it is in the
release (file and line), its condition, and whether it passed, failed (with the framework's own
message) or did not apply (its guarding condition was false). Nothing from the frameworks is
copied into this repository; the source is read from the installed package at run time.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

PURE_CALLS = {"bool", "int", "float", "str", "len", "isinstance", "getattr", "hasattr", "min", "max",
              "any", "all", "tuple", "list", "dict", "set", "sorted", "abs", "round", "defaultdict"}
"""Calls an assignment may contain and still be kept (no side effects)."""
PURE_METHODS = {"get", "split", "lower", "upper", "strip", "startswith", "endswith", "items", "keys", "values"}
"""Method calls (on config objects and strings) an assignment may contain and still be kept."""


@dataclass
class Check:
    where: str
    condition: str
    status: str = "not applicable"  # passed | failed | not applicable | not reached | not evaluated
    message: str = ""
    keys: list[str] = field(default_factory=list)  # the config paths the condition reads

    def line(self) -> str:
        out = f"{self.where} {self.condition} -> {self.status}"
        return out + (f": {self.message}" if self.message else "")


@dataclass
class CheckReport:
    function: str
    checks: list[Check] = field(default_factory=list)
    error: str | None = None  # a check failed: the framework's own message
    incomplete: str | None = None  # the harness could not evaluate something (a name not importable)

    def ran(self) -> list[Check]:
        return [c for c in self.checks if c.status in ("passed", "failed")]

    def summary(self) -> str:
        counts: dict[str, int] = {}
        for c in self.checks:
            counts[c.status] = counts.get(c.status, 0) + 1
        parts = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        return f"{self.function}: {len(self.checks)} checks ({parts or 'none'})"

    def record(self, checks: list[str], warnings: list[str], key_prefix: str = "") -> str | None:
        """Add this report to a validator's result lines; the error line (the framework's message,
        where it failed and the keys to change, each written with ``key_prefix``) or None."""
        checks.append(self.summary())
        checks.extend("  " + c.line() for c in self.ran())
        if self.incomplete:
            warnings.append(f"{self.function}: not every check could be evaluated here ({self.incomplete})")
        if not self.error:
            return None
        failed = next((c for c in self.checks if c.status == "failed"), None)
        keys = ", ".join(key_prefix + k for k in failed.keys) if failed and failed.keys else ""
        return f"{self.function} [{failed.where if failed else '?'}]: {self.error}" + (f" (change: {keys})" if keys else "")


@cache
def _tree(path: str) -> ast.Module:
    return ast.parse(Path(path).read_text(encoding="utf-8"), filename=path)


def _find(tree: ast.Module, qualname: str) -> tuple[ast.FunctionDef, ast.ClassDef | None]:
    parts = qualname.split(".")
    scope: list[ast.stmt] = tree.body
    cls = None
    for i, part in enumerate(parts):
        node = next((n for n in scope if isinstance(n, (ast.ClassDef, ast.FunctionDef)) and n.name == part), None)
        if node is None:
            raise LookupError(f"{qualname}: {part!r} not found")
        if i == len(parts) - 1:
            if not isinstance(node, ast.FunctionDef):
                raise LookupError(f"{qualname} is not a function")
            return node, cls
        if isinstance(node, ast.ClassDef):
            cls = node
        scope = node.body
    raise LookupError(qualname)


def _pure(expr: ast.AST) -> bool:
    for node in ast.walk(expr):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in PURE_CALLS:
                continue
            if isinstance(f, ast.Attribute) and f.attr in PURE_METHODS:
                continue
            return False
        if isinstance(node, (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield)):
            return False
    return True


class _Pruner:
    def __init__(self, path: str, cls: ast.ClassDef | None, stop_at: frozenset[str] = frozenset()):
        self.path = path
        self.stop_at = stop_at
        self.stopped = False
        self.cls = cls
        self.checks: list[Check] = []
        self.source = Path(path).read_text(encoding="utf-8")
        self.locals: dict[str, set[str]] = {}

    def _stops(self, stmt: ast.stmt) -> bool:
        """The statement does the first GPU work (named by the caller): checks after it are not pre-GPU."""
        if not self.stop_at or isinstance(stmt, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
            return False
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
                if name in self.stop_at:
                    return True
        return False

    def _method(self, name: str) -> ast.FunctionDef | None:
        if self.cls is None:
            return None
        return next((n for n in self.cls.body if isinstance(n, ast.FunctionDef) and n.name == name), None)

    def _check(self, node: ast.stmt, condition: ast.AST | None) -> list[ast.stmt]:
        text = ast.get_source_segment(self.source, condition) if condition is not None else "raise"
        idx = len(self.checks)
        keys = _paths(condition, self.locals) if condition is not None else set()
        if isinstance(node, ast.Raise) and node.exc is not None:
            keys |= _paths(node.exc, self.locals)
        self.checks.append(Check(where=f"{Path(self.path).name}:{node.lineno}",
                                 condition=" ".join((text or "").split()), keys=sorted(keys)))
        mark = ast.parse(f"__ran__({idx})").body[0]
        return [mark, node]

    def prune(self, body: list[ast.stmt], guard: ast.AST | None = None, depth: int = 0) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in body:
            if self.stopped or self._stops(stmt):
                self.stopped = True
                break
            if isinstance(stmt, ast.Assert):
                out += self._check(stmt, stmt.test)
            elif isinstance(stmt, ast.Raise):
                out += self._check(stmt, guard)
            elif isinstance(stmt, ast.If):
                inner = self.prune(stmt.body, stmt.test, depth)
                orelse = self.prune(stmt.orelse, ast.UnaryOp(op=ast.Not(), operand=stmt.test), depth)
                if any(not isinstance(s, (ast.Assign, ast.AnnAssign, ast.Pass)) for s in inner + orelse):
                    out.append(ast.If(test=stmt.test, body=inner or [ast.Pass()], orelse=orelse))
            elif isinstance(stmt, ast.Return):
                out.append(ast.Return(value=None))
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None and _pure(stmt.value):
                out.append(stmt)
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for t in targets:
                    name = _dotted(t)
                    if name:
                        self.locals[name] = _paths(stmt.value, self.locals)
            elif (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
                  and isinstance(stmt.value.func, ast.Attribute)
                  and isinstance(stmt.value.func.value, ast.Name) and stmt.value.func.value.id == "self"
                  and depth < 3):
                method = self._method(stmt.value.func.attr)
                if method is not None:
                    inlined = self.prune(method.body, guard, depth + 1)
                    # an early return inside the inlined method must not end the caller
                    if any(isinstance(s, ast.Return) for s in ast.walk(ast.Module(body=inlined, type_ignores=[]))):
                        wrapper = ast.FunctionDef(name=f"__inline_{method.name}", args=_self_args(), body=inlined or [ast.Pass()],
                                                  decorator_list=[], returns=None, type_params=[])
                        out += [wrapper, ast.parse(f"__inline_{method.name}(self)").body[0]]
                    else:
                        out += inlined
        return out


ROOTS = ("config.", "self.config.", "args.", "self.")


def _dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a Name/Attribute chain (``.get("x")`` calls count as ``.x``), else None."""
    parts: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            parts.append(node.args[0].value)
            node = node.func.value
        elif isinstance(node, ast.Name):
            parts.append(node.id)
            return ".".join(reversed(parts))
        else:
            return None


def _paths(expr: ast.AST, local: dict[str, set[str]]) -> set[str]:
    """Config paths an expression reads: ``config.x.y`` -> ``x.y``; a local or ``self.attr`` set
    from config earlier expands to the paths it was read from."""
    out: set[str] = set()
    for node in ast.walk(expr):
        name = _dotted(node) if isinstance(node, (ast.Attribute, ast.Name, ast.Call)) else None
        if not name:
            continue
        for prefix in ("self.config.", "config.", "args."):
            if name.startswith(prefix):
                out.add(name[len(prefix):])
                break
        else:
            base = name
            while base:
                if base in local:
                    rest = name[len(base):]
                    out |= {p + rest for p in local[base]}
                    break
                base = base.rpartition(".")[0]
    # keep the longest paths only (config.a.b implies config.a)
    return {p for p in out if not any(q != p and q.startswith(p + ".") for q in out)}


def _self_args() -> ast.arguments:
    return ast.arguments(posonlyargs=[], args=[ast.arg(arg="self")], vararg=None, kwonlyargs=[], kw_defaults=[],
                         kwarg=None, defaults=[])


def _free_names(fn: ast.FunctionDef) -> set[str]:
    loads = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return loads - set(dir(builtins))


def _import_names(tree: ast.Module, names: set[str]) -> tuple[dict[str, Any], list[str]]:
    """Bind each needed name by running only the module-level import that defines it."""
    found: dict[str, Any] = {}
    failed: list[str] = []
    for node in tree.body:
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        for alias in node.names:
            bound = alias.asname or alias.name.split(".")[0]
            if bound not in names or bound in found:
                continue
            one = (ast.Import(names=[alias]) if isinstance(node, ast.Import)
                   else ast.ImportFrom(module=node.module, names=[alias], level=node.level))
            ns: dict[str, Any] = {}
            try:
                exec(compile(ast.fix_missing_locations(ast.Module(body=[one], type_ignores=[])), "<import>", "exec"), ns)  # noqa: S102
                found[bound] = ns[bound]
            except Exception as exc:  # noqa: BLE001 - a GPU-side module that does not import here
                failed.append(f"{bound} ({type(exc).__name__}: {exc})")
    return found, failed


def has_function(path: Path | str, qualname: str) -> bool:
    try:
        _find(_tree(str(path)), qualname)
        return True
    except LookupError:
        return False


def run(path: Path | str, qualname: str, params: dict[str, Any], extra_names: dict[str, Any] | None = None,
        stop_at: frozenset[str] | set[str] = frozenset()) -> CheckReport:
    """Run the kept checks of ``qualname`` (``Class.method`` or ``function``) in the file at ``path``.

    ``stop_at`` names calls that do the first GPU work (``setup_distributed``, model loading): the
    checks after the first top-level statement calling one of them are not pre-GPU and not run.

    ``params`` binds the function's parameters (``self`` may be any object with the attributes the
    checks read). ``extra_names`` binds module-level names that cannot be imported here."""
    path = str(path)
    tree = _tree(path)
    fn, cls = _find(tree, qualname)
    pruner = _Pruner(path, cls, frozenset(stop_at))
    body = pruner.prune(fn.body) or [ast.Pass()]
    arg_names = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
    checks_fn = ast.FunctionDef(name="__checks__", args=ast.arguments(
        posonlyargs=[], args=[ast.arg(arg=a) for a in arg_names], vararg=None, kwonlyargs=[], kw_defaults=[],
        kwarg=None, defaults=[ast.Constant(None) for _ in arg_names]), body=body, decorator_list=[], returns=None, type_params=[])
    module = ast.fix_missing_locations(ast.Module(body=[checks_fn], type_ignores=[]))
    report = CheckReport(function=f"{Path(path).name}:{qualname}", checks=pruner.checks)
    needed = _free_names(checks_fn) - set(arg_names) - {"__ran__"}
    names, failed = _import_names(tree, needed - set(extra_names or {}))
    ns: dict[str, Any] = {**names, **(extra_names or {})}
    ran: list[int] = []
    ns["__ran__"] = ran.append
    exec(compile(module, path, "exec"), ns)  # noqa: S102 - the framework's own released checks
    kwargs = {a: params[a] for a in arg_names if a in params}
    try:
        ns["__checks__"](**kwargs)
    except (AssertionError, ValueError, TypeError, NotImplementedError) as exc:
        for i in ran[:-1]:
            report.checks[i].status = "passed"
        if ran:
            report.checks[ran[-1]].status = "failed"
            report.checks[ran[-1]].message = " ".join(str(exc).split())
            for c in report.checks[ran[-1] + 1:]:
                c.status = "not reached"
        report.error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return report
    except (NameError, AttributeError) as exc:
        for i in ran:
            report.checks[i].status = "passed"
        for c in report.checks[(ran[-1] + 1) if ran else 0:]:
            if c.status == "not applicable":
                c.status = "not evaluated"
        report.incomplete = f"{exc}" + (f"; not importable here: {', '.join(failed)}" if failed else "")
        return report
    for i in ran:
        report.checks[i].status = "passed"
    return report
