"""Just enough POSIX shell to read launch scripts: line continuations, comments, simple variable
assignments (``NAME=value``, ``export NAME=value``), ``$NAME`` / ``${NAME}`` / ``${NAME:-default}``
expansion and integer ``$(( ... ))`` arithmetic. Anything else (command substitution, loops) is
left unexpanded and reported by the caller — never guessed."""

from __future__ import annotations

import ast
import operator
import re
import shlex

_ASSIGN = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_ARITH = re.compile(r"\$\(\((.*?)\)\)")

MAX_WORD_CHARS = 1 << 16
"""Longest a word may grow by variable expansion (``B=$A$A$A`` chains grow exponentially)."""
MAX_EXPANSION_ROUNDS = 32
"""Rounds of re-expansion (``A=x$A`` would otherwise grow forever)."""
MAX_ARITH_CHARS = 256
_ARITH_LIMIT = 1 << 63  # shell arithmetic is 64-bit; beyond that a value is not a config number

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.FloorDiv: operator.floordiv, ast.Div: operator.floordiv, ast.Mod: operator.mod}


def _arith(expr: str) -> int:
    """Evaluate shell integer arithmetic safely (+ - * / % and parentheses on integers), on
    short expressions and 64-bit values only, so no input makes it slow."""
    if len(expr) > MAX_ARITH_CHARS:
        raise ValueError(f"arithmetic longer than {MAX_ARITH_CHARS} characters")

    def ev(node: ast.AST) -> int:
        value = _ev(node)
        if abs(value) >= _ARITH_LIMIT:
            raise ValueError(f"arithmetic overflows 64 bits: {expr}")
        return value

    def _ev(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        raise ValueError(f"unsupported arithmetic: {expr}")
    try:
        return ev(ast.parse(expr.strip(), mode="eval"))
    except (RecursionError, MemoryError):
        raise ValueError(f"arithmetic nested too deeply: {expr[:40]}") from None


def expand(text: str, env: dict[str, str]) -> str:
    """Expand variables and arithmetic in one word; unknown variables are left as they are.

    Bounded: at most MAX_EXPANSION_ROUNDS rounds (a self-referencing variable stays partly
    unexpanded) and a word longer than MAX_WORD_CHARS is refused with an AdvisorError."""
    def var(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(3)
        if name in env:
            return env[name]
        if m.group(2) is not None:
            return m.group(2)
        return m.group(0)
    prev = None
    rounds = 0
    while prev != text and rounds < MAX_EXPANSION_ROUNDS:
        prev, rounds = text, rounds + 1
        text = _VAR.sub(var, text)
        if len(text) > MAX_WORD_CHARS:
            from advisor.yamlio import InputTooLarge

            raise InputTooLarge(f"a shell word expands to more than {MAX_WORD_CHARS} characters "
                               "(variables that repeat each other?)", field="text",
                               value=prev[:60], allowed="launch scripts whose variables expand to "
                               f"at most {MAX_WORD_CHARS} characters per word")

        def arith(m: re.Match[str]) -> str:
            inner = m.group(1)
            inner = re.sub(r"\b([A-Za-z_][A-Za-z0-9_]*)\b", lambda v: env.get(v.group(1), v.group(1)), inner)
            try:
                return str(_arith(inner))
            except (ValueError, SyntaxError, ZeroDivisionError):
                return m.group(0)
        text = _ARITH.sub(arith, text)
    return text


def logical_lines(script: str) -> list[str]:
    """Join backslash continuations and drop full-line comments."""
    joined = re.sub(r"\\\r?\n", " ", script)
    out = []
    for line in joined.splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        out.append(line)
    return out


def split_words(line: str) -> list[str]:
    """shlex-split one line, keeping ``${...}`` and ``$((...))`` intact; inline comments dropped."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=False)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return list(lexer)
    except ValueError:
        return line.split()


def collect_env(lines: list[str], stop_at: int) -> dict[str, str]:
    """Variable assignments before line ``stop_at`` (in order, each expanded with the earlier ones)."""
    env: dict[str, str] = {}
    for line in lines[:stop_at]:
        m = _ASSIGN.match(line)
        if not m:
            continue
        name, raw = m.group(1), m.group(2).strip()
        if raw.startswith("$("):
            value = _balanced(raw)
        else:
            words = split_words(raw) if raw else [""]
            value = words[0] if words else ""
        env[name] = expand(value, env)
    return env


def _balanced(raw: str) -> str:
    """The ``$( ... )`` / ``$(( ... ))`` expression at the start of ``raw`` (up to its closing paren)."""
    depth = 0
    for i, ch in enumerate(raw):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return raw[: i + 1]
    return raw
