"""rl-advisor: the command line face of every MCP tool.

Each tool in ``rl_advisor.tools.TOOLS`` becomes a subcommand (``choose_method`` ->
``rl-advisor choose-method``). Flags are derived from the tool's typed signature:

* a ``Plan`` parameter is ``--plan FILE`` (the Plan YAML format; ``-`` reads standard input);
* a config ``text`` parameter is a ``FILE`` argument (``-`` for standard input) or ``--text``;
* another pydantic-model parameter is ``--NAME JSON|FILE`` and, for people, its top-level
  scalar fields are flags of their own (``--task math --data preference_pairs``);
* scalar parameters are flags.

Output is a readable report, or the tool's exact structured result with ``--json``.
Bad input prints one line per problem (field, value, what is allowed) and exits 2.
"""

from __future__ import annotations

import argparse
import enum
import inspect
import json
import os
import signal
import sys
import threading
import types
import typing
from pathlib import Path
from typing import Any, Callable, get_args, get_origin

import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError

from advisor.errors import AdvisorError, FieldProblem, as_advisor_error
from rl_advisor import __version__
from rl_advisor.tools import available_tools, guarded

EXIT_BAD_INPUT = 2


# --------------------------------------------------------------------------- type helpers


def _unwrap_optional(tp: Any) -> Any:
    origin = get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


def _is_model(tp: Any) -> bool:
    return inspect.isclass(tp) and issubclass(tp, BaseModel)


def _scalar_kind(tp: Any) -> tuple[str, Any] | None:
    """('scalar', type) / ('list', item type) for flag-able types, else None."""
    tp = _unwrap_optional(tp)
    if get_origin(tp) is typing.Literal:
        return ("scalar", tp)
    if inspect.isclass(tp) and issubclass(tp, (str, int, float, bool, enum.Enum)):
        return ("scalar", tp)
    if get_origin(tp) in (list, tuple, set):
        args = get_args(tp)
        if args and _scalar_kind(args[0]):
            return ("list", args[0])
    return None


def _choices(tp: Any) -> list[str] | None:
    tp = _unwrap_optional(tp)
    if get_origin(tp) is typing.Literal:
        return [str(a) for a in get_args(tp)]
    if inspect.isclass(tp) and issubclass(tp, enum.Enum):
        return [str(m.value) for m in tp]
    return None


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def read_input(path: str, field: str, what: str = "file") -> str:
    """The text of a file, or of standard input when ``path`` is ``-``; errors name the flag."""
    from advisor.yamlio import MAX_TEXT_CHARS, check_text_size
    from rl_advisor.safe_paths import read_input_file

    if path == "-":
        text = sys.stdin.read(MAX_TEXT_CHARS + 1)  # bounded: `cat /dev/zero | ...` ends
        check_text_size(text, field=field)
        return text
    if not path:
        raise AdvisorError("empty path", field=field, value=path, allowed=f"a readable {what}, or - for stdin")
    # a regular file of at most 1 MiB: FIFOs and devices (/dev/zero) are refused, not read
    return read_input_file(path, field=field, max_bytes=MAX_TEXT_CHARS)


def _read_structured(text: str, field: str) -> Any:
    """A JSON/YAML literal, or a path to a JSON/YAML file."""
    path = Path(text)
    if not text.lstrip().startswith(("{", "[")) and path.suffix in (".yaml", ".yml", ".json") or \
            (len(text) < 4096 and "\n" not in text and path.is_file()):
        from rl_advisor.safe_paths import read_input_file

        text = read_input_file(path, field=field)
    from advisor.yamlio import load_untrusted

    return load_untrusted(text, field=field, allowed="JSON or YAML")


# --------------------------------------------------------------------------- parser building


class _Binding:
    """How one tool parameter is filled from argparse values."""

    def __init__(self, name: str, tp: Any, default: Any):
        self.name, self.tp, self.default = name, _unwrap_optional(tp), default
        self.flattened: dict[str, str] = {}  # dest -> model field

    @property
    def is_plan(self) -> bool:
        return _is_model(self.tp) and self.tp.__name__ == "Plan"

    @property
    def is_config_text(self) -> bool:
        """The text of a framework config (import_config, translate_config, ...)."""
        return self.name == "text" and self.tp is str


def _add_tool_parser(sub: Any, spec: Any, fn: Callable[..., Any]) -> list[_Binding]:
    doc = inspect.getdoc(fn) or spec.summary
    p = sub.add_parser(spec.cli_name, help=spec.summary, description=doc,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", action="store_true", help="print the structured result as JSON")
    hints = typing.get_type_hints(fn)
    bindings: list[_Binding] = []
    taken = {"json", "help"}
    params = [prm for prm in inspect.signature(fn).parameters.values()
              if prm.kind in (prm.POSITIONAL_OR_KEYWORD, prm.KEYWORD_ONLY)]
    for prm in params:
        tp = hints.get(prm.name, Any)
        default = None if prm.default is inspect.Parameter.empty else prm.default
        b = _Binding(prm.name, tp, default)
        bindings.append(b)
        taken.add(prm.name)
        kind = _scalar_kind(tp)
        if b.is_plan:
            p.add_argument("--plan", dest="arg_" + prm.name, metavar="FILE",
                           help="Plan YAML file, - for stdin (see README: The Plan format)")
        elif b.is_config_text:
            p.add_argument("config_file", nargs="?", metavar="FILE",
                           help="the config file (veRL launch script, OpenRLHF command line, TRL YAML); "
                                "- reads standard input")
            p.add_argument("--text", dest="arg_" + prm.name, metavar="TEXT",
                           help="the config text inline, instead of FILE")
        elif _is_model(b.tp):
            p.add_argument(_flag(prm.name), dest="arg_" + prm.name, metavar="JSON|FILE",
                           help=f"{b.tp.__name__} as JSON/YAML or a file")
        elif kind:
            _add_scalar(p, "arg_" + prm.name, prm.name, tp, default)
    # Flatten scalar fields of model parameters (not the Plan) into their own flags.
    for b in bindings:
        if not _is_model(b.tp) or b.is_plan:
            continue
        for fname, finfo in b.tp.model_fields.items():
            if not _scalar_kind(finfo.annotation):
                continue
            flag_name = fname if fname not in taken else f"{b.name}_{fname}"
            taken.add(flag_name)
            dest = f"field_{b.name}__{fname}"
            b.flattened[dest] = fname
            _add_scalar(p, dest, flag_name, finfo.annotation, None,
                        help_text=finfo.description)
    p.set_defaults(_tool=(spec, fn, bindings))
    return bindings


def _add_scalar(p: argparse.ArgumentParser, dest: str, name: str, tp: Any, default: Any,
                help_text: str | None = None) -> None:
    kind, inner = _scalar_kind(tp)  # type: ignore[misc]
    choices = _choices(inner if kind == "list" else tp)
    base = _unwrap_optional(inner if kind == "list" else tp)
    help_text = (help_text or "") + (f" [default: {default}]" if default not in (None, "") else "")
    if base is bool:
        p.add_argument(_flag(name), dest=dest, action=argparse.BooleanOptionalAction, default=None,
                       help=help_text or None)
        return
    p.add_argument(_flag(name), dest=dest, default=None, metavar=name.upper() if not choices else None,
                   choices=choices, nargs="+" if kind == "list" else None, help=help_text or None)


# --------------------------------------------------------------------------- calling


def _collect_kwargs(ns: argparse.Namespace, bindings: list[_Binding]) -> dict[str, Any]:
    from advisor.plan import plan_from_yaml

    kwargs: dict[str, Any] = {}
    for b in bindings:
        raw = getattr(ns, "arg_" + b.name, None)
        if b.is_plan:
            if raw is not None:
                kwargs[b.name] = plan_from_yaml(read_input(raw, "--plan", "Plan YAML file"))
            continue
        if b.is_config_text:
            path = getattr(ns, "config_file", None)
            if path is not None and raw is not None:
                raise AdvisorError("give the config once: a FILE (or -) or --text, not both",
                                   field="--text", value=raw[:80])
            if path is not None:
                kwargs[b.name] = read_input(path, "FILE", "config file")
            elif raw is not None:
                kwargs[b.name] = raw
            continue
        if _is_model(b.tp):
            data = _read_structured(raw, _flag(b.name)) if raw is not None else None
            overrides = {f: getattr(ns, d) for d, f in b.flattened.items() if getattr(ns, d) is not None}
            if data is None and not overrides:
                continue
            if data is not None and not isinstance(data, dict):
                raise AdvisorError("must be a JSON/YAML object", field=_flag(b.name), value=raw)
            merged = {**(data or {}), **overrides}
            try:
                kwargs[b.name] = b.tp.model_validate(merged)
            except ValidationError as exc:
                raise as_advisor_error(exc, prefix=b.name) from None
            continue
        if raw is not None:
            # Coerce to the annotated type (enums, numbers) exactly as the MCP server would.
            try:
                kwargs[b.name] = TypeAdapter(b.tp).validate_python(raw)
            except ValidationError as exc:
                raise as_advisor_error(exc, prefix=_flag(b.name)) from None
    return kwargs


def _render_human(result: Any) -> str:
    if hasattr(result, "to_text"):
        return result.to_text()
    if isinstance(result, BaseModel):
        return yaml.safe_dump(result.model_dump(mode="json"), sort_keys=False, width=100)
    return str(result)


def _print_problems(exc: AdvisorError) -> None:
    print("error: invalid input", file=sys.stderr)
    for problem in exc.problems:
        print(f"  - {problem}", file=sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rl-advisor",
        description="Plan, budget, render, launch and diagnose LLM post-training runs.")
    parser.add_argument("--version", action="version", version=f"rl-advisor {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for spec, fn in available_tools():
        _add_tool_parser(sub, spec, fn)
    _add_extra_commands(sub)
    return parser


def _add_extra_commands(sub: Any) -> None:
    """Commands that are not MCP tools (demo, diagnose FILE, ...): every module in
    rl_advisor/commands with a ``register(subparsers)`` function."""
    import importlib
    import pkgutil

    import rl_advisor.commands as commands

    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"rl_advisor.commands.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)


def main(argv: list[str] | None = None) -> int:
    if hasattr(signal, "SIGPIPE") and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `rl-advisor ... | head` ends quietly
    try:
        return _main(argv)
    except AdvisorError as exc:  # raised by extra commands
        _print_problems(exc)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # an internal error: one line, the traceback only on request
        if os.environ.get("RL_ADVISOR_DEBUG"):
            raise
        print(f"error: internal error: {type(exc).__name__}: {exc} "
              "(set RL_ADVISOR_DEBUG=1 for the traceback)", file=sys.stderr)
        return 1


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    ns = parser.parse_args(argv)
    if getattr(ns, "_run", None) is not None:  # extra commands
        return int(ns._run(ns) or 0)
    if getattr(ns, "_tool", None) is None:
        parser.print_help()
        return 0
    spec, fn, bindings = ns._tool
    try:
        kwargs = _collect_kwargs(ns, bindings)
        result = guarded(fn)(**kwargs)
    except AdvisorError as exc:
        if ns.json:
            print(json.dumps(exc.to_dict(), indent=2))
        _print_problems(exc)
        return EXIT_BAD_INPUT
    except TypeError as exc:
        missing = [b.name for b in bindings if b.default is None and b.name not in locals().get("kwargs", {})]
        err = AdvisorError([FieldProblem(field=", ".join(missing) or "(arguments)", message=str(exc),
                                         allowed="see --help")])
        _print_problems(err)
        return EXIT_BAD_INPUT
    if ns.json:
        if isinstance(result, BaseModel):
            print(result.model_dump_json(indent=2))
        else:
            print(json.dumps(result, indent=2, default=str))
    else:
        print(_render_human(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
