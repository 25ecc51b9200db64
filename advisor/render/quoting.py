"""Quoting for every target format, so a user string can never change an artifact's structure.

Templates never emit a raw value: the jinja environment's ``finalize`` hook rejects anything
that did not pass through one of these filters (each returns a :class:`Quoted`). A hostile
plan value such as ``$(rm -rf ~)``, ``"; curl x | sh``, a newline or a YAML ``: {`` therefore
ends up as one shell word, one YAML scalar, one Python literal or one Hydra string.

Rules by target:

* shell: ``shlex.quote`` (POSIX single quotes; what ``shlex.split`` and bash undo exactly).
* Hydra overrides (veRL, NeMo-RL): the value is written in Hydra's override grammar (quoted
  string with ``'``, ``\\`` before a quote / ``${`` / the end doubled, ``${`` escaped so
  OmegaConf never interpolates it), then the whole ``key=value`` word is shell-quoted.
* YAML: ``yaml.safe_dump`` of the whole tree (PyYAML quotes whatever needs quoting).
* Python: ``repr`` of plain literals (``ast.literal_eval`` gives the value back).
* JSON: ``json.dumps``.
* comments: one line, non-ASCII and control characters escaped, so a newline in a name
  cannot end the comment.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from typing import Any

import yaml


class Quoted(str):
    """Text that is already quoted for its target; the only thing templates may emit."""


class RefValue(str):
    """A reference to an environment variable (a secret), never its value.

    Its text is ``${NAME}``; shell renders it double-quoted (``"${NAME}"``) so it expands at run
    time. The name is validated by the Plan (``^[A-Za-z_][A-Za-z0-9_]*$``) and re-checked here.
    """

    name: str

    def __new__(cls, name: str) -> "RefValue":
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f"not an environment variable name: {name!r}")
        obj = super().__new__(cls, "${" + name + "}")
        obj.name = name
        return obj


def _number(value: int | float) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"non-finite number {value!r} cannot be rendered")
        return repr(value)
    return str(int(value))


# --------------------------------------------------------------------------- shell


def sh(value: Any) -> Quoted:
    """One shell word."""
    if isinstance(value, RefValue):
        return Quoted(f'"{value}"')
    if isinstance(value, (bool, int, float)):
        return Quoted(shlex.quote(_number(value)))
    if value is None:
        raise ValueError("None cannot be rendered as a shell word")
    return Quoted(shlex.quote(str(value)))


def sh_require_env(name: str) -> Quoted:
    """``: "${NAME:?...}"``: fail early when a secret's env var is missing, never print it."""
    ref = RefValue(name).name
    return Quoted(f': "${{{ref}:?set {ref} in the environment}}"')


def shell_join(words: list[Any]) -> str:
    """Like ``shlex.join``, but secret references stay expandable."""
    return " ".join(sh(w) for w in words)


def remote_command(words: list[Any]) -> list[Any]:
    """The argv to hand to a launcher that re-joins it for a remote shell (``ray job submit --``).

    Such launchers quote every word, so a secret reference would arrive as literal text. When the
    command holds one, it is wrapped as ``bash -c 'exec ...'`` so the remote shell expands it.
    """
    if any(isinstance(w, RefValue) for w in words):
        return ["bash", "-c", "exec " + shell_join(words)]
    return list(words)


def sh_argv(argv: list[Any], indent: str = "  ") -> Quoted:
    """A command line, one word per line continuation, each word quoted."""
    if not argv:
        return Quoted("")
    words = [sh(w) for w in argv]
    return Quoted((" \\\n" + indent).join(words))


# --------------------------------------------------------------------------- Hydra


_BACKSLASH_RUN = re.compile(r"(\\+)(?='|\$\{|\Z)")


_HYDRA_PLAIN = re.compile(r"[A-Za-z_/][A-Za-z0-9_./-]*")
_HYDRA_WORDS = {"true", "false", "null", "nan", "inf"}


def hydra_string(value: str) -> str:
    """A Hydra override string whose parsed and resolved value is exactly ``value``.

    Plain identifiers and paths stay unquoted (readable); anything else is a quoted string.
    """
    if _HYDRA_PLAIN.fullmatch(value) and value.lower() not in _HYDRA_WORDS and "//" not in value:
        return value
    body = _BACKSLASH_RUN.sub(lambda m: m.group(1) * 2, value)
    body = body.replace("'", "\\'").replace("${", "\\${")
    return f"'{body}'"


def hydra_value(value: Any) -> str:
    """A value in Hydra's override grammar."""
    if value is None:
        return "null"
    if isinstance(value, (bool, int, float)):
        return _number(value)
    if isinstance(value, str):
        return hydra_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(hydra_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{hydra_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot render {type(value).__name__} as a Hydra value")


_HYDRA_KEY = re.compile(r"^[+~]{0,2}[A-Za-z_][A-Za-z0-9_.@/-]*$")


def hydra_override(key: str, value: Any) -> str:
    """``key=value`` for Hydra (keys are ours, never user input; checked anyway)."""
    if not _HYDRA_KEY.match(key):
        raise ValueError(f"not a Hydra key: {key!r}")
    return f"{key}={hydra_value(value)}"


# --------------------------------------------------------------------------- YAML / JSON / Python


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # libyaml when present (fast)
    """SafeDumper that never emits aliases (deterministic, readable output)."""

    def ignore_aliases(self, data: Any) -> bool:  # noqa: ARG002 - PyYAML hook
        return True


def yaml_doc(tree: Any) -> Quoted:
    """A whole YAML document (block style, keys in insertion order)."""
    text = yaml.dump(tree, Dumper=_Dumper, sort_keys=False, allow_unicode=False,
                     default_flow_style=False, width=4096)
    return Quoted(text.rstrip("\n"))


def json_doc(tree: Any, indent: int | None = 2) -> Quoted:
    return Quoted(json.dumps(tree, indent=indent, sort_keys=False, ensure_ascii=True))


def py(value: Any) -> Quoted:
    """A Python literal (``ast.literal_eval`` round-trips it)."""
    return Quoted(_py(value))


def _py(value: Any) -> str:
    if value is None or isinstance(value, (bool, str)):
        return repr(str(value)) if isinstance(value, str) else repr(value)
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("non-finite number")
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_py(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_py(str(k))}: {_py(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot render {type(value).__name__} as a Python literal")


def comment(value: Any) -> Quoted:
    """Text safe inside a ``#`` comment of shell, YAML or Python: one line, ASCII only."""
    text = json.dumps(str(value), ensure_ascii=True)[1:-1]
    return Quoted(text)


def sh_command(launcher: list[Any], argv: list[Any], indent: str = "  ") -> Quoted:
    """A readable command: the launcher on the first line, then one option (with its values) or
    one positional word per continuation line. Every word is quoted on its own."""
    lines = [" ".join(sh(w) for w in launcher)] if launcher else []
    group: list[Quoted] = []
    for w in argv:
        text = str(w)
        hydra_word = "=" in text and not text.startswith("-")  # key=value override: own line
        if group and (text.startswith("-") or hydra_word or not str(group[0]).startswith("-")):
            lines.append(" ".join(group))
            group = []
        group.append(sh(w))
    if group:
        lines.append(" ".join(group))
    return Quoted((" \\\n" + indent).join(lines))


FILTERS = {
    "sh": sh,
    "sh_argv": sh_argv,
    "sh_command": sh_command,
    "sh_require_env": sh_require_env,
    "yaml_doc": yaml_doc,
    "json_doc": json_doc,
    "py": py,
    "comment": comment,
}


def require_quoted(value: Any) -> Any:
    """jinja ``finalize`` hook: refuse to emit anything that was not quoted by a filter."""
    if isinstance(value, Quoted):
        return value
    raise TypeError(f"template emitted an unquoted value {value!r}: pass it through a quoting "
                    "filter (sh, sh_argv, yaml_doc, json_doc, py, comment)")
