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


VERL_CMD = ("python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo "
            "actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct trainer.n_gpus_per_node=1\n")


def _cli(args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rl_advisor.cli", *args], input=stdin, capture_output=True,
                          text=True, cwd=REPO, timeout=300)


@pytest.mark.parametrize("command", [["import-config"], ["translate-config", "--to-framework", "openrlhf",
                                                         "--no-validate"],
                                     ["budget-memory-from-config", "--gpu", "H100"]])
def test_config_commands_take_a_file_or_stdin(tmp_path, command):
    """Every command that reads a config takes a file path, and - for standard input."""
    script = tmp_path / "run_verl.sh"
    script.write_text(VERL_CMD)
    by_file = _cli([*command, str(script), "--json"])
    assert by_file.returncode == 0, by_file.stderr
    by_stdin = _cli([*command, "-", "--json"], stdin=VERL_CMD)
    assert by_stdin.returncode == 0, by_stdin.stderr
    by_text = _cli([*command, "--text", VERL_CMD, "--json"])
    def answer(proc: subprocess.CompletedProcess) -> dict:
        data = json.loads(proc.stdout)
        data.get("result", {}).pop("render_seconds", None)  # a timing, not part of the answer
        return data

    assert answer(by_file) == answer(by_stdin) == answer(by_text)
    both = _cli([*command, str(script), "--text", VERL_CMD])
    assert both.returncode == 2 and "--text" in both.stderr
    missing = _cli([*command, str(tmp_path / "nope.sh")])
    assert missing.returncode == 2 and "FILE" in missing.stderr and "nope.sh" in missing.stderr


def test_plan_and_memory_check_read_stdin():
    plan = example_plan_path().read_text()
    out = _cli(["validate-plan", "--plan", "-", "--json"], stdin=plan)
    assert out.returncode == 0 and json.loads(out.stdout)["valid"] is True, out.stderr
    check = _cli(["memory-check", "--config", "-", "--gpu", "H100", "--json"], stdin=VERL_CMD)
    assert check.returncode == 0, check.stderr
