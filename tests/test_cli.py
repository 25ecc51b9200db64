"""The CLI mirrors every MCP tool, prints tables for people and JSON for machines."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rl_advisor import cli
from rl_advisor.mcp_server import build_server
from rl_advisor.tools import TOOLS
from tests.conftest import REPO, example_plan_path


def test_every_registered_tool_imports():
    for spec in TOOLS:
        assert callable(spec.load()), spec.name


async def test_every_mcp_tool_has_a_cli_command():
    from mcp import Client

    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    async with Client(build_server()) as client:
        names = {t.name for t in (await client.list_tools()).tools}
    assert names, "no tools"
    missing = {n.replace("_", "-") for n in names} - set(sub.choices)
    assert not missing, missing


def test_validate_plan_json_and_text(capsys):
    assert cli.main(["validate-plan", "--plan", str(example_plan_path()), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["valid"] is True
    assert cli.main(["validate-plan", "--plan", str(example_plan_path())]) == 0
    assert "valid" in capsys.readouterr().out


def test_bad_plan_file_exits_2_with_field(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(example_plan_path().read_text().replace("train_batch_size: 256", "train_batch_size: -3"))
    assert cli.main(["validate-plan", "--plan", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "plan.data.train_batch_size" in err and "-3" in err
    assert cli.main(["validate-plan", "--plan", str(tmp_path / "missing.yaml")]) == 2
    assert "--plan" in capsys.readouterr().err


def test_flattened_model_flags_reject_bad_choice_without_traceback():
    proc = subprocess.run([sys.executable, "-m", "rl_advisor.cli", "choose-method", "--task", "poetry"],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "--task" in proc.stderr


def test_choose_method_flags_from_objective(capsys):
    assert cli.main(["choose-method", "--task", "math", "--data", "prompts_with_verifier", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ranked"][0]["on_policy"] is True


def test_diagnose_on_unreadable_bytes_says_no_data_not_healthy(tmp_path, capsys):
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(bytes(range(256)) * 20)
    assert cli.main(["diagnose", str(garbage), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "no_data"


def test_diagnose_empty_path_is_an_error_not_the_current_folder(capsys):
    assert cli.main(["diagnose", "", "--json"]) == 2
    assert "empty path" in capsys.readouterr().err
