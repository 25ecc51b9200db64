"""The render_config / translate_config tools as the CLI and MCP expose them."""

from __future__ import annotations

import json
import os
import stat

import pytest
import yaml

from advisor.errors import AdvisorError
from advisor.plan import Framework, Method, Plan, plan_from_yaml
from advisor.render import render_config as pure_render
from rl_advisor.cli import main
from rl_advisor.render_tool import RenderResult, render_config, translate_config
from tests.conftest import example_plan_path


def _plan(**changes) -> Plan:
    data = plan_from_yaml(example_plan_path().read_text()).model_dump(mode="json", exclude_none=True)
    data.update(changes)
    return Plan.model_validate(data)


def test_cli_renders_validates_and_writes(tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["render-config", "--plan", str(example_plan_path()), "--framework", "trl",
                 "--output-dir", str(out), "--json"])
    assert code == 0
    result = RenderResult.model_validate_json(capsys.readouterr().out)
    assert result.valid is True
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(a.name for a in result.rendered.artifacts)
    assert os.stat(out / "run_trl.sh").st_mode & stat.S_IXUSR
    assert yaml.safe_load((out / "trl_config.yaml").read_text())["num_generations"] == 8


def test_no_files_without_output_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = render_config(_plan(), Framework.VERL, validate=False)
    assert result.written == [] and list(tmp_path.iterdir()) == []
    assert result.valid is None


def test_cli_refuses_unsupported_pair_with_reason(tmp_path, capsys):
    plan_file = tmp_path / "kto.yaml"
    plan_file.write_text(example_plan_path().read_text().replace("method: grpo", "method: kto"))
    code = main(["render-config", "--plan", str(plan_file), "--framework", "verl", "--no-validate"])
    assert code == 2
    err = capsys.readouterr().err
    assert "veRL 0.9.1 has no KTO trainer" in err and "method" in err


def test_image_and_namespace_reach_the_manifests():
    result = render_config(_plan(), Framework.VERL, validate=True, image="registry.local/verl:0.9.1",
                           namespace="rl-team")
    docs = result.rendered.artifact("k8s.yaml").data
    rayjob = next(d for d in docs if d["kind"] == "RayJob")
    assert rayjob["metadata"]["namespace"] == "rl-team"
    assert rayjob["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["image"] == \
        "registry.local/verl:0.9.1"
    assert result.valid, [v for v in result.validation if not v.ok]


def test_translate_verl_to_trl_and_openrlhf():
    pytest.importorskip("advisor.importers")
    verl_script = pure_render(_plan(), Framework.VERL).artifact("run_verl.sh").content
    for target in (Framework.TRL, Framework.OPENRLHF):
        t = translate_config(verl_script, target)
        assert t.source_framework == Framework.VERL and t.target_framework == target
        assert t.plan.method == Method.GRPO
        assert t.plan.policy.weights_path == "Qwen/Qwen2.5-7B-Instruct"
        assert t.result.valid, [v.errors for v in t.result.validation if not v.ok]
    # what does not carry over to TRL is reported (TRL 1.16 has no max_prompt_length)
    t = translate_config(verl_script, Framework.TRL, validate=False)
    assert any(n.field == "data.max_prompt_length" for n in t.result.rendered.not_carried)


def test_translate_kto_to_verl_is_refused_with_reason():
    pytest.importorskip("advisor.importers")
    trl_yaml = pure_render(_plan(method="kto", framework="trl", reward_function=None),
                           Framework.TRL).artifact("trl_config.yaml").content
    with pytest.raises(AdvisorError) as err:
        translate_config(trl_yaml, Framework.VERL, from_framework=Framework.TRL)
    assert "no KTO" in str(err.value)


def test_mcp_schema_of_render_config():
    """The tool's output model is JSON-schema-able (MCP structured output)."""
    schema = RenderResult.model_json_schema()
    assert "rendered" in schema["properties"] and "validation" in schema["properties"]
    json.dumps(schema)


@pytest.mark.integration
async def test_render_over_mcp_stdio_keeps_the_protocol_clean(tmp_path):
    """Validators import frameworks that print (verl's validate_config, OpenRLHF's warnings); over
    stdio nothing but the protocol may reach stdout, and the result matches the output schema."""
    import sys

    import jsonschema
    from mcp import Client, StdioServerParameters

    from tests.conftest import REPO

    plan = json.loads(_plan().model_dump_json(exclude_none=True))
    params = StdioServerParameters(command=sys.executable, args=["-m", "rl_advisor.mcp_server"],
                                   env={**os.environ, "RL_ADVISOR_HOME": str(tmp_path)}, cwd=str(REPO))
    async with Client(params) as client:
        tool = next(t for t in (await client.list_tools()).tools if t.name == "render_config")
        for fw in ("verl", "openrlhf", "trl", "nemo_rl"):
            result = await client.call_tool("render_config", {"plan": plan, "framework": fw})
            assert not result.is_error, result.content[0].text[:500]
            jsonschema.validate(result.structured_content, tool.output_schema)
            assert result.structured_content["valid"] is True
        refused = await client.call_tool("render_config", {"plan": {**plan, "method": "kto"}, "framework": "verl"})
        assert refused.is_error and "no KTO" in refused.content[0].text
