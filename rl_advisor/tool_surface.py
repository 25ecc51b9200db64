"""What a tool looks like to an agent: small definitions, compact results, detail on request.

Agents pay for every byte of ``tools/list`` and of every result, so the MCP face of a tool is
derived from its typed signature but trimmed:

* **Definitions.** The Plan's JSON schema (about 22 KB) is served once, as the resource
  ``rl-advisor://schema/plan``; wherever a tool takes a Plan its input schema is a short object
  that points there. The server still validates the Plan strictly with the full pydantic model
  and names every bad field. Pydantic's per-node ``title`` is dropped (the property name says it).
  Output schemas stay typed, but a Plan inside a result is its YAML text, never the typed object.
* **Results.** Every tool takes ``detail`` (default false). Compact results leave out the fields a
  tool marks as detail (the full ledger, the candidate table, ...) and cut every list to a few
  items; ``more`` says how many items each cut list had left, ``omitted`` which fields were left
  out, ``next`` what to call next. A tool that returns a changed Plan also returns
  ``plan_changes``: the dotted fields that differ from the Plan it was given.

The functions here are pure (dicts in, dicts out) so the CLI, the tests and the benchmarks can
use them without a server.
"""

from __future__ import annotations

import copy
from typing import Any, Iterable

PLAN_SCHEMA_URI = "rl-advisor://schema/plan"
PLAN_DEF = "Plan"
PLAN_INPUT_DESCRIPTION = f"A Plan: the --plan YAML as JSON; schema {PLAN_SCHEMA_URI}"
PLAN_OUTPUT_DESCRIPTION = "Plan YAML"
DETAIL_DESCRIPTION = "true: every field and list item"
DEFAULT_LIST_LIMIT = 5
VIEW_FIELDS = ("more", "omitted", "next", "plan_changes")  # added to every compact answer
# Output schemas type objects this many levels deep; deeper objects are declared "object".
OUTPUT_TYPED_DEPTH = 2

_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_SCHEMA_LISTS = ("anyOf", "allOf", "oneOf", "prefixItems")
_SCHEMA_ONE = ("items", "additionalProperties", "not", "contains")


# --------------------------------------------------------------------------- schemas


def _walk(node: Any, fn: Any) -> Any:
    """Apply ``fn`` to every schema node (depth first, children first); returns the new node."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {k: _walk(v, fn) for k, v in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_walk(v, fn) for v in value]
        elif key in _SCHEMA_ONE and isinstance(value, dict):
            out[key] = _walk(value, fn)
        else:
            out[key] = value
    return fn(out)


def _refs(node: Any) -> Iterable[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            yield ref[len("#/$defs/"):]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def _prune_defs(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop ``$defs`` entries no longer reachable from the schema's body."""
    defs = schema.get("$defs")
    if not isinstance(defs, dict):
        return schema
    body = {k: v for k, v in schema.items() if k != "$defs"}
    keep: set[str] = set()
    todo = list(_refs(body))
    while todo:
        name = todo.pop()
        if name in keep or name not in defs:
            continue
        keep.add(name)
        todo.extend(_refs(defs[name]))
    if keep:
        body["$defs"] = {k: v for k, v in defs.items() if k in keep}
    return body


def _is_plan_ref(node: Any) -> bool:
    return isinstance(node, dict) and node.get("$ref") == f"#/$defs/{PLAN_DEF}"


def _drop_title(node: dict[str, Any]) -> dict[str, Any]:
    if isinstance(node.get("title"), str):
        node = {k: v for k, v in node.items() if k != "title"}
    return node


def _unwrap_optional(node: dict[str, Any]) -> dict[str, Any]:
    """``{"anyOf": [X, {"type": "null"}], "default": null}`` -> X: an input left out is null anyway."""
    branches = node.get("anyOf")
    if isinstance(branches, list) and len(branches) == 2 and node.get("default", 0) is None:
        rest = [b for b in branches if b != {"type": "null"}]
        if len(rest) == 1:
            extra = {k: v for k, v in node.items() if k not in ("anyOf", "default")}
            return {**rest[0], **extra}
    return node


def slim_input_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's input schema with the Plan as a short pointer object and no per-node titles."""

    def fix(node: dict[str, Any]) -> dict[str, Any]:
        if _is_plan_ref(node):
            return {"type": "object", "description": PLAN_INPUT_DESCRIPTION}
        if "enum" in node and "properties" not in node:
            # an enum's docstring restates its values; the field that uses it says what it means
            node = {k: v for k, v in node.items() if k != "description"}
        return _unwrap_optional(_drop_title(node))

    return _prune_defs(_walk(copy.deepcopy(schema), fix))


def slim_output_schema(schema: dict[str, Any], detail_fields: Iterable[str] = ()) -> dict[str, Any]:
    """A tool's output schema: the compact answer fully typed, a Plan as its YAML string, detail
    fields (present only with detail=true) declared by JSON type alone, plus the compact-view
    fields ``more``, ``omitted`` and ``next`` (and ``plan_changes`` where a Plan comes back)."""
    returns_plan = f"#/$defs/{PLAN_DEF}" in str(schema)

    def fix(node: dict[str, Any]) -> dict[str, Any]:
        if _is_plan_ref(node):
            return {"type": "string", "description": PLAN_OUTPUT_DESCRIPTION}
        # Defaults mean nothing in an answer; a model's or enum's docstring repeats the tool
        # description or the values.
        return {k: v for k, v in node.items()
                if k not in ("title", "default")
                and not (k == "description" and ("properties" in node or "enum" in node))}

    out = _walk(copy.deepcopy(schema), fix)
    for path in detail_fields:
        _loosen(out, path.split("."))
    defs = out.get("$defs")
    out = _inline(out, out, OUTPUT_TYPED_DEPTH)
    if defs:
        out["$defs"] = defs
    props = out.setdefault("properties", {})
    props.setdefault("more", {"type": "object", "additionalProperties": {"type": "integer"},
                              "description": "list -> items left out"})
    props.setdefault("omitted", {"type": "array", "items": {"type": "string"}})
    props.setdefault("next", {"type": "string"})
    if returns_plan:
        props.setdefault("plan_changes", {"type": "object", "description": "vs the Plan given"})
    return _prune_defs(out)


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """Follow ``$ref`` and the non-null branch of ``anyOf`` / ``items`` to the object schema."""
    for _ in range(8):
        if "$ref" in node:
            node = schema.get("$defs", {}).get(node["$ref"].rsplit("/", 1)[-1], {})
        elif "anyOf" in node:
            branches = [b for b in node["anyOf"] if b.get("type") != "null"]
            node = branches[0] if branches else {}
        elif node.get("type") == "array" and isinstance(node.get("items"), dict):
            node = node["items"]
        else:
            return node
    return node


def _inline(schema: dict[str, Any], node: Any, depth: int) -> Any:
    """Inline ``$ref``s, typing objects ``depth`` levels down and deeper ones by JSON type only."""
    if not isinstance(node, dict):
        return node
    target = _resolve_ref(schema, node)
    if "properties" not in target and "$ref" in node:
        return node  # enums and other small named types stay shared in $defs
    node = target
    is_object = "properties" in node
    if is_object and depth <= 0:
        return {"type": "object"}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$defs":
            continue
        if key == "properties":
            out[key] = {k: _inline(schema, v, depth - 1) for k, v in value.items()}
            if depth < OUTPUT_TYPED_DEPTH:  # a nested object: its field names say enough
                out[key] = {k: {a: b for a, b in v.items() if a != "description"}
                            for k, v in out[key].items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_inline(schema, v, depth) for v in value]
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = _inline(schema, value, depth if key == "items" else depth - 1)
        else:
            out[key] = value
    return out


def _json_type(schema: dict[str, Any], node: dict[str, Any]) -> Any:
    types = []
    for branch in node.get("anyOf", [node]):
        branch = _resolve_ref(schema, branch)
        kind = branch.get("type") or ("object" if "properties" in branch else None)
        if kind and kind not in types:
            types.append(kind)
    return types[0] if len(types) == 1 else (types or "object")


def _resolve_ref(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = schema.get("$defs", {}).get(node["$ref"].rsplit("/", 1)[-1], {})
    return node


def field_exists(schema: dict[str, Any], path: list[str]) -> bool:
    """Whether a dotted field (through objects and list items) is a property of the schema."""
    node: dict[str, Any] = schema
    for part in path:
        node = _resolve(schema, node)
        props = node.get("properties", {})
        if part not in props:
            return False
        node = props[part]
    return True


def _loosen(schema: dict[str, Any], path: list[str]) -> None:
    """Make a detail field optional and declare it by JSON type only (it is absent by default)."""
    node: dict[str, Any] = schema
    for i, part in enumerate(path):
        node = _resolve(schema, node)
        props = node.get("properties", {})
        if part not in props:
            return
        if i == len(path) - 1:
            props[part] = {"type": _json_type(schema, props[part])}
            req = node.get("required")
            if isinstance(req, list) and part in req:
                node["required"] = [r for r in req if r != part]
                if not node["required"]:
                    del node["required"]
            return
        node = props[part]


def add_detail_parameter(schema: dict[str, Any]) -> dict[str, Any]:
    schema = dict(schema)
    props = dict(schema.get("properties", {}))
    props["detail"] = {"type": "boolean", "default": False, "description": DETAIL_DESCRIPTION}
    schema["properties"] = props
    return schema


# --------------------------------------------------------------------------- results


def _plan_paths(value: Any, plan_type: type, path: tuple = ()) -> Iterable[tuple]:
    """Paths (field names / list indices) of every Plan object inside a result object."""
    from pydantic import BaseModel

    if isinstance(value, plan_type):
        yield path
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from _plan_paths(getattr(value, name), plan_type, path + (name,))
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _plan_paths(item, plan_type, path + (i,))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _plan_paths(item, plan_type, path + (key,))


def _get(data: Any, path: tuple) -> Any:
    """Follow a path through dicts and lists, or (for result objects) through attributes."""
    for part in path:
        data = data[part] if isinstance(data, (dict, list, tuple)) else getattr(data, part)
    return data


def _set(data: Any, path: tuple, value: Any) -> None:
    _get(data, path[:-1])[path[-1]] = value


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``; lists are leaves."""
    if isinstance(data, dict) and data:
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: data} if prefix else {}


def plan_changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Dotted fields whose value differs between two Plans (JSON form); removed ones are None."""
    old, new = flatten(before), flatten(after)
    return {k: new.get(k) for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)}


def _drop(data: Any, parts: list[str]) -> bool:
    """Remove a dotted field (through objects and every item of a list); True when any was there."""
    if isinstance(data, list):
        return any([_drop(item, parts) for item in data])
    if not isinstance(data, dict) or parts[0] not in data:
        return False
    if len(parts) == 1:
        present = data[parts[0]] not in (None, [], {}, "")
        del data[parts[0]]
        return present
    return _drop(data[parts[0]], parts[1:])


def _bound_lists(data: Any, limit: int, more: dict[str, int], path: str = "") -> Any:
    if isinstance(data, dict):
        return {k: _bound_lists(v, limit, more, f"{path}.{k}" if path else str(k)) for k, v in data.items()}
    if isinstance(data, list):
        if len(data) > limit:
            more[path] = len(data) - limit
            data = data[:limit]
        return [_bound_lists(v, limit, more, f"{path}[{i}]") for i, v in enumerate(data)]
    return data


def compact_result(result: Any, *, detail: bool, detail_fields: Iterable[str] = (),
                   list_limit: int = DEFAULT_LIST_LIMIT, next_step: str = "",
                   given_plan: Any = None) -> dict[str, Any]:
    """The JSON an agent receives: Plans as YAML (plus ``plan_changes``), and unless ``detail``
    the detail fields left out and every list cut to ``list_limit`` items."""
    from pydantic import BaseModel

    from advisor.plan import Plan, plan_to_yaml

    if not isinstance(result, BaseModel):
        return {"result": result}
    data = result.model_dump(mode="json")
    changes: dict[str, Any] | None = None
    for path in _plan_paths(result, Plan):
        plan = _get(result, path)
        if changes is None and isinstance(given_plan, Plan):
            changes = plan_changes(given_plan.model_dump(mode="json", exclude_none=True),
                                   plan.model_dump(mode="json", exclude_none=True))
        if path:
            _set(data, path, plan_to_yaml(plan))
    if changes is not None:
        data["plan_changes"] = changes
    if not detail:
        omitted = [f for f in detail_fields if _drop(data, f.split("."))]
        more: dict[str, int] = {}
        data = _bound_lists(data, list_limit, more)
        if more:
            data["more"] = more
        if omitted:
            data["omitted"] = omitted
        if next_step:
            data["next"] = next_step
    return data


__all__ = ["PLAN_SCHEMA_URI", "field_exists", "slim_input_schema", "slim_output_schema", "add_detail_parameter",
           "compact_result", "plan_changes", "flatten"]
