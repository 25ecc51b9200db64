"""Errors that name the field, the value and the fix.

Every tool, the CLI and the MCP server turn bad input into an ``AdvisorError`` (or a list of
``FieldProblem``) instead of a traceback, so a person or an agent can correct the call.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError


class FieldProblem(BaseModel):
    """One thing wrong with the input: where, what was given, and what would be accepted."""

    field: str
    value: Any = None
    message: str
    allowed: str | None = None

    def __str__(self) -> str:
        text = f"{self.field}: {self.message}"
        if self.value is not None:
            text += f" (got {_short(self.value)})"
        if self.allowed:
            text += f"; allowed: {self.allowed}"
        return text


class AdvisorError(ValueError):
    """A request the advisor cannot satisfy, with the fields to change."""

    def __init__(self, problems: list[FieldProblem] | str, *, field: str = "", value: Any = None,
                 allowed: str | None = None):
        if isinstance(problems, str):
            problems = [FieldProblem(field=field or "(input)", value=value, message=problems,
                                     allowed=allowed)]
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems))

    def to_dict(self) -> dict[str, Any]:
        return {"error": "invalid_input",
                "problems": [p.model_dump(mode="json") for p in self.problems]}


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def problems_from_validation(exc: ValidationError, prefix: str = "") -> list[FieldProblem]:
    """Translate pydantic's errors into ``FieldProblem`` rows with dotted field paths."""
    out: list[FieldProblem] = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "__root__")
        field = ".".join(p for p in (prefix, loc) if p) or "(input)"
        ctx = err.get("ctx") or {}
        allowed = None
        if "expected" in ctx:
            allowed = str(ctx["expected"])
        elif err.get("type") in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
            bound = {k: v for k, v in ctx.items() if k in ("gt", "ge", "lt", "le")}
            allowed = ", ".join(f"{k} {v}" for k, v in bound.items()) or None
        msg = err.get("msg", "invalid value")
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        raw = err.get("input")
        value = None if isinstance(raw, (dict, list)) else _jsonable(raw)
        out.append(FieldProblem(field=field, value=value, message=msg,
                                allowed=allowed))
    return out


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value if not isinstance(value, str) or len(value) <= 200 else value[:200] + "..."
    return _short(value, 200)


def as_advisor_error(exc: ValidationError, prefix: str = "") -> AdvisorError:
    return AdvisorError(problems_from_validation(exc, prefix))
