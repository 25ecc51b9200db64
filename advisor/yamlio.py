"""YAML parsing with libyaml's C loader when PyYAML was built with it (about 10x faster on the
data tables under advisor/data), and the pure-Python safe loader otherwise. Same semantics.

Two entry points:

* :func:`safe_load` for the packaged tables (trusted, shipped with the code);
* :func:`load_untrusted` / :func:`load_all_untrusted` for text a user or an MCP client sends (a
  Plan, a TRL config, a value inside a launch command). YAML aliases let 300 bytes stand for
  gigabytes once expanded (the "billion laughs" alias bomb) and every later ``str(value)`` pays
  for the whole expansion. Before anything is constructed, one pass over libyaml's event stream
  (iterative, linear in the text) measures what the document would *expand* to: every scalar
  counts its characters, every alias counts the full size of the node it repeats. A document
  larger than :data:`MAX_EXPANDED_CHARS` or nested deeper than :data:`MAX_DEPTH` is refused with
  an error that names the field, so the work done for any input is bounded by its size.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Callable, Iterator

import yaml

from advisor.errors import AdvisorError

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

MAX_TEXT_CHARS = 1 << 20
"""Largest config/Plan text accepted (1 MiB; real launch scripts and Plans are a few KB)."""
MAX_EXPANDED_CHARS = 4 << 20
"""Largest size a document may expand to once aliases are followed (characters of all scalars)."""
MAX_DEPTH = 64
"""Deepest nesting of mappings/sequences (Plans and framework configs stay under 10)."""


class InputTooLarge(AdvisorError):
    """An input over one of the documented bounds (size, alias expansion, nesting)."""


_table_cache: tuple[Callable[[str], bytes | None], Callable[[str, bytes], None]] | None = None


def set_table_cache(load: Callable[[str], bytes | None], save: Callable[[str, bytes], None]) -> None:
    """Let the caller keep parsed packaged tables between processes, as JSON keyed by the hash of
    the YAML text (json.loads is 10-25x faster than libyaml: 60 ms of a cold diagnosis go to the
    diagnosis tables). A table is kept only when its JSON form reads back equal and of the same
    types (no dates, non-string keys or NaN), and an edited YAML file has a new key, so what
    ``safe_load`` returns never changes. The I/O belongs to the caller: this module stays pure."""
    global _table_cache
    _table_cache = (load, save)


def safe_load(text: str) -> Any:
    """Parse a packaged (trusted) table (from the caller's cache when one is set)."""
    if _table_cache is None:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    try:
        blob = _table_cache[0](key)
        if blob:
            return json.loads(blob)
    except Exception:  # noqa: BLE001 - a stale or foreign file: parse afresh
        pass
    doc = yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    try:
        blob = json.dumps(doc, ensure_ascii=False, allow_nan=False).encode("utf-8")
        if _same(json.loads(blob), doc):
            _table_cache[1](key, blob)
    except Exception:  # noqa: BLE001 - not JSON-shaped, or a read-only cache: keep going without it
        pass
    return doc


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same types throughout (``1 == 1.0 == True`` for ``==`` alone)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(map(_same, a, b))
    return a == b


def check_text_size(text: str, *, field: str, limit: int = MAX_TEXT_CHARS) -> None:
    """Refuse a text input larger than ``limit`` characters, naming ``field``."""
    if isinstance(text, str) and len(text) > limit:
        raise InputTooLarge(f"too large: {len(text)} characters", field=field,
                           allowed=f"at most {limit} characters ({limit >> 10} KiB)")


def _measure(text: str, field: str) -> None:
    """Walk the event stream and refuse documents that expand too far or nest too deep."""
    sizes: dict[str, int] = {}
    stack: list[tuple[str | None, int]] = []
    total = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.AliasEvent):
            total += sizes.get(event.anchor, 1)
        elif isinstance(event, yaml.ScalarEvent):
            size = len(event.value) + 1
            total += size
            if event.anchor:
                sizes[event.anchor] = size
        elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            stack.append((event.anchor, total))
            total += 1
            if len(stack) > MAX_DEPTH:
                raise InputTooLarge(f"nested deeper than {MAX_DEPTH} levels", field=field,
                                   allowed=f"YAML nested at most {MAX_DEPTH} levels deep")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            anchor, start = stack.pop()
            if anchor:
                sizes[anchor] = total - start
        if total > MAX_EXPANDED_CHARS:
            raise InputTooLarge("YAML aliases expand this text beyond the size limit (an alias bomb?)",
                               field=field, allowed=f"YAML that expands to at most {MAX_EXPANDED_CHARS} "
                               "characters; write values out instead of repeating anchors")


def _yaml_error(exc: yaml.YAMLError, field: str, allowed: str) -> AdvisorError:
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
    return AdvisorError(f"not valid YAML: {getattr(exc, 'problem', None) or exc}", field=field,
                        value=where, allowed=allowed)


def load_all_untrusted(text: str, *, field: str = "text",
                       allowed: str = "YAML") -> Iterator[Any]:
    """Every document of a user-supplied YAML text, bounded (see the module docstring).
    Bad YAML raises AdvisorError naming ``field`` and the position."""
    check_text_size(text, field=field)
    try:
        _measure(text, field)
        docs = list(yaml.load_all(text, Loader=_Loader))  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, field, allowed) from None
    except RecursionError:
        raise InputTooLarge("nested too deeply", field=field,
                           allowed=f"YAML nested at most {MAX_DEPTH} levels deep") from None
    return iter(docs)


def load_untrusted(text: str, *, field: str = "text", allowed: str = "YAML") -> Any:
    """A single user-supplied YAML document, bounded; an empty text gives None."""
    docs = list(load_all_untrusted(text, field=field, allowed=allowed))
    if len(docs) > 1:
        raise AdvisorError(f"expected one YAML document, got {len(docs)}", field=field,
                           allowed=allowed)
    return docs[0] if docs else None


__all__ = ["InputTooLarge", "safe_load", "set_table_cache", "load_untrusted", "load_all_untrusted", "check_text_size",
           "MAX_TEXT_CHARS", "MAX_EXPANDED_CHARS", "MAX_DEPTH"]
