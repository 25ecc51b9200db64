"""The MCP server: tools listed with schemas, structured results, field-naming errors.

In-process tests use ``mcp.Client(server)``; one test spawns ``rl-advisor-mcp`` over stdio as an
agent would, and one runs the MCP Inspector CLI against it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from mcp import Client, StdioServerParameters

from rl_advisor.mcp_server import build_server
from tests.conftest import REPO, example_plan_path

OBJECTIVE = {"task": "math", "data": ["prompts_with_verifier"]}


def _plan_json() -> dict:
    import yaml

    return yaml.safe_load(example_plan_path().read_text())


def _check_structured(tool, result) -> dict:
    assert not result.is_error, result.content
    assert tool.output_schema, f"{tool.name} has no output schema"
    jsonschema.validate(result.structured_content, tool.output_schema)
    return result.structured_content


async def test_in_process_tools_resources_and_prompt():
    async with Client(build_server()) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        for name in ("validate_plan", "choose_method", "choose_framework"):
            assert name in tools, sorted(tools)
            assert tools[name].input_schema["type"] == "object"
        result = await client.call_tool("validate_plan", {"plan": _plan_json()})
        data = _check_structured(tools["validate_plan"], result)
        assert data["valid"] is True and data["online"] is True

        resources = (await client.list_resources()).resources
        uris = {str(r.uri) for r in resources}
        assert "rl-advisor://skill" in uris
        prompts = (await client.list_prompts()).prompts
        assert any(p.name == "post_training_run" for p in prompts)


async def test_invalid_input_names_the_field_and_server_keeps_serving():
    async with Client(build_server()) as client:
        plan = _plan_json()
        plan["data"]["train_batch_size"] = -1
        bad = await client.call_tool("validate_plan", {"plan": plan})
        assert bad.is_error
        text = bad.content[0].text
        assert "train_batch_size" in text
        bad2 = await client.call_tool("choose_method", {"objective": {"task": "poetry"}})
        assert bad2.is_error and "task" in bad2.content[0].text
        good = await client.call_tool("choose_method", {"objective": OBJECTIVE})
        assert not good.is_error


@pytest.mark.integration
async def test_stdio_subprocess_lists_and_calls_choose_tools(tmp_path):
    params = StdioServerParameters(command=sys.executable, args=["-m", "rl_advisor.mcp_server"],
                                   env={**os.environ, "RL_ADVISOR_HOME": str(tmp_path)}, cwd=str(REPO))
    async with Client(params) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        method = _check_structured(tools["choose_method"],
                                   await client.call_tool("choose_method", {"objective": OBJECTIVE}))
        top = method["ranked"][0]["method"]
        assert top in {"grpo", "dapo", "dr_grpo", "rloo", "reinforce_pp", "gspo"}
        framework = _check_structured(
            tools["choose_framework"],
            await client.call_tool("choose_framework", {"method": top,
                                                        "hardware": {"gpu": "H100", "gpus_per_node": 8,
                                                                     "nodes": 4}}))
        assert framework["ranked"][0]["framework"] in {"verl", "openrlhf"}


def _npx() -> str | None:
    return shutil.which("npx")


@pytest.mark.integration
@pytest.mark.skipif(_npx() is None, reason="npx is not installed")
def test_mcp_inspector_cli_lists_tools(tmp_path):
    server = shutil.which("rl-advisor-mcp", path=str(Path(sys.executable).parent)) or "rl-advisor-mcp"
    env = {**os.environ, "RL_ADVISOR_HOME": str(tmp_path)}
    proc = subprocess.run([_npx(), "-y", "@modelcontextprotocol/inspector", "--cli", server,
                           "--method", "tools/list"], capture_output=True, text=True, timeout=300,
                          env=env, cwd=str(REPO))
    assert proc.returncode == 0, proc.stderr[-2000:]
    listed = json.loads(proc.stdout)
    names = {t["name"] for t in listed["tools"]}
    assert {"choose_method", "choose_framework", "validate_plan"} <= names


async def test_tool_annotations_mark_side_effects():
    async with Client(build_server()) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert tools["choose_method"].annotations.read_only_hint is True
    assert tools["launch_run"].annotations.read_only_hint is False
    assert tools["stop_run"].annotations.destructive_hint is True
    assert list(tools)[:3] == ["validate_plan", "choose_method", "choose_framework"]
