"""The tool surface an agent pays for: small definitions, the Plan schema served once, compact
results with a detail switch, and strict validation that still names every bad field."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml
from mcp import Client

from rl_advisor import tool_surface
from rl_advisor.mcp_server import build_server
from rl_advisor.tools import TOOLS
from tests.conftest import example_plan_path

LISTING_LIMIT = 40 * 1024   # tools/list, all tools together (issue #20)
TOOL_LIMIT = 6 * 1024       # one tool definition


def _wire_size(obj) -> int:
    """Bytes as the SDK sends it: JSON with aliases, nulls left out, no spaces."""
    return len(json.dumps(obj.model_dump(mode="json", by_alias=True, exclude_none=True),
                          separators=(",", ":"), ensure_ascii=False).encode())


def _plan() -> dict:
    return yaml.safe_load(example_plan_path().read_text())


async def _listing():
    async with Client(build_server()) as client:
        return await client.list_tools()


async def test_every_registered_tool_is_listed_small():
    listing = await _listing()
    names = [t.name for t in listing.tools]
    assert names == [s.name for s in TOOLS if not s.cli_only], "every registered tool is listed"
    sizes = {t.name: _wire_size(t) for t in listing.tools}
    too_big = {n: b for n, b in sizes.items() if b > TOOL_LIMIT}
    assert not too_big, f"tool definitions over {TOOL_LIMIT} bytes: {too_big}"
    total = _wire_size(listing)
    assert total <= LISTING_LIMIT, f"tools/list is {total} bytes (limit {LISTING_LIMIT}): {sizes}"


async def test_the_plan_schema_is_a_resource_not_inlined():
    listing = await _listing()
    for tool in listing.tools:
        text = json.dumps([tool.input_schema, tool.output_schema])
        assert '"#/$defs/Plan"' not in text, tool.name
        assert '"RoleModel"' not in text, tool.name  # a Plan part: only in the resource
    takes_plan = {t.name for t in listing.tools if "plan" in t.input_schema.get("properties", {})}
    assert {"validate_plan", "budget_memory", "plan_placement", "render_config", "launch_run"} <= takes_plan
    async with Client(build_server()) as client:
        uris = {str(r.uri) for r in (await client.list_resources()).resources}
        assert tool_surface.PLAN_SCHEMA_URI in uris
        schema = json.loads((await client.read_resource(tool_surface.PLAN_SCHEMA_URI)).contents[0].text)
    from advisor.plan import Plan

    assert schema == Plan.model_json_schema()
    jsonschema.validate(_plan(), schema)  # the example plans follow the served schema


def test_every_detail_field_exists_in_its_result():
    """A misspelt detail field would silently keep a bulky field in every compact answer."""
    from rl_advisor.mcp_server import _surface_tool  # noqa: F401  (the module registers the tools)
    from rl_advisor.tools import available_tools
    import typing

    from pydantic import TypeAdapter

    for spec, fn in available_tools():
        if not spec.detail_fields:
            continue
        schema = TypeAdapter(typing.get_type_hints(fn)["return"]).json_schema()
        for path in spec.detail_fields:
            assert tool_surface.field_exists(schema, path.split(".")), f"{spec.name}: {path}"


async def test_strict_validation_names_every_bad_field():
    plan = _plan()
    plan["data"]["train_batch_size"] = -1
    plan["rollout"]["tpp"] = 2
    plan["hardware"]["gpus_per_node"] = "eight"
    async with Client(build_server()) as client:
        bad = await client.call_tool("budget_memory", {"plan": plan})
    assert bad.is_error
    payload = json.loads(bad.content[0].text)
    fields = {p["field"] for p in payload["problems"]}
    assert {"plan.data.train_batch_size", "plan.rollout.tpp", "plan.hardware.gpus_per_node"} <= fields, fields


async def test_compact_by_default_detail_on_request():
    plan = _plan()
    async with Client(build_server()) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        small = await client.call_tool("plan_placement", {"plan": plan})
        full = await client.call_tool("plan_placement", {"plan": plan, "detail": True})
        method = await client.call_tool("choose_method",
                                        {"objective": {"task": "math", "data": ["prompts_with_verifier"]}})
    for result in (small, full):
        assert not result.is_error, result.content
        jsonschema.validate(result.structured_content, tools["plan_placement"].output_schema)
        assert json.loads(result.content[0].text) == result.structured_content
    s, f = small.structured_content, full.structured_content
    assert "ranked" not in s and "ranked" in s["omitted"] and f["ranked"]
    assert len(json.dumps(s)) < len(json.dumps(f)) / 2
    assert s["next"] and "omitted" not in f
    # A Plan comes back as YAML plus the fields that changed.
    best = yaml.safe_load(s["best_plan"])
    assert best["placement"]["pools"] and s["plan_changes"]
    assert all(k.split(".")[0] in best for k in s["plan_changes"])
    # Lists are cut and say how many more there are.
    m = method.structured_content
    assert len(m["ranked"]) <= 3
    assert m["more"]["ranked"] >= 1


def test_compact_result_bounds_nested_lists_and_counts_them():
    from pydantic import BaseModel

    class Row(BaseModel):
        items: list[int]

    class Result(BaseModel):
        rows: list[Row]
        bulky: dict[str, str] = {}

    result = Result(rows=[Row(items=list(range(9))) for _ in range(4)], bulky={"a": "b"})
    data = tool_surface.compact_result(result, detail=False, detail_fields=("bulky",), list_limit=2)
    assert len(data["rows"]) == 2 and data["rows"][0]["items"] == [0, 1]
    assert data["more"] == {"rows": 2, "rows[0].items": 7, "rows[1].items": 7}
    assert data["omitted"] == ["bulky"]
    full = tool_surface.compact_result(result, detail=True, detail_fields=("bulky",), list_limit=2)
    assert full == result.model_dump(mode="json")


def test_plan_changes_are_dotted_and_name_removed_fields():
    before = {"a": {"b": 1, "c": 2}, "d": [1]}
    after = {"a": {"b": 1, "c": 3}, "d": [1, 2], "e": {"f": True}}
    assert tool_surface.plan_changes(before, after) == {"a.c": 3, "d": [1, 2], "e.f": True}
    assert tool_surface.plan_changes(after, before) == {"a.c": 2, "d": [1], "e.f": None}


@pytest.mark.parametrize("spec", [s for s in TOOLS if not s.cli_only], ids=lambda s: s.name)
async def test_every_tool_takes_detail(spec):
    listing = await _listing()
    tool = next(t for t in listing.tools if t.name == spec.name)
    assert tool.input_schema["properties"]["detail"]["type"] == "boolean"
    assert {"more", "omitted", "next"} <= set(tool.output_schema["properties"])


def test_shipped_listing_is_fresh():
    """tools/list is answered from rl_advisor/tool_listing.json until a tool is called: it must be
    exactly what the tools' signatures give now (run scripts/regenerate_tool_listing.py)."""
    from rl_advisor.mcp_server import LISTING_FILE, TOOLS as specs, live_listing, shipped_listing

    shipped = shipped_listing([s for s in specs if not s.cli_only])
    assert shipped is not None, f"{LISTING_FILE} is missing or names other tools: regenerate it"
    assert shipped == live_listing(), "stale tool listing: run scripts/regenerate_tool_listing.py"


def test_start_imports_no_tool_module_before_the_first_call():
    import subprocess
    import sys

    from tests.conftest import REPO

    code = ("import asyncio, sys\n"
            "from rl_advisor.mcp_server import build_server\n"
            "s = build_server()\n"
            "tools = asyncio.run(s.list_tools())\n"
            "heavy = sorted(m for m in sys.modules if m.startswith(('advisor.plan', 'advisor.memory', "
            "'advisor.placement', 'advisor.render', 'advisor.diagnosis', 'backends', 'jinja2', 'yaml')))\n"
            "print(len(tools), heavy)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    count, heavy = out.stdout.strip().split(" ", 1)
    assert int(count) == len([s for s in TOOLS if not s.cli_only])
    assert heavy == "[]", f"imported before the first call: {heavy}"
