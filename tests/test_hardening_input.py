"""Bounded work for any input, and no secret in any output (issue 14).

Each test feeds the input an attacker or a careless user would, through the same entry points
the faces use (the tool functions, the in-process MCP server, the CLI as a subprocess), and
checks that the answer is a labelled error (field named) in bounded time, or a clean result.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from anyio.from_thread import start_blocking_portal
from mcp import Client

from advisor import yamlio
from advisor.errors import AdvisorError
from advisor.plan import plan_from_dict, plan_from_yaml
from rl_advisor.mcp_server import build_server
from tests.conftest import REPO, example_plan_path

# 9 levels of 9 aliases: about 300 bytes that expand to 9**9 (387 million) scalars.
ALIAS_BOMB = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 10))
TRL_BOMB = "num_generations: 8\nlearning_rate: 1.0e-6\n" + ALIAS_BOMB
SHELL_BOMB = "A=xxxxxxxxxxxxxxxx\n" + "".join(
    f"{chr(66 + i)}=${chr(65 + i)}${chr(65 + i)}${chr(65 + i)}${chr(65 + i)}\n" for i in range(20)) + \
    "python3 -m verl.trainer.main_ppo data.train_batch_size=$U\n"
DEEP_YAML = "[" * 100_000 + "]" * 100_000

HF = "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12"
GH = "ghp_" + "Z" * 36
AWS_ID = "AKIAIOSFODNN7EXAMPLE"
WANDB = "0123456789abcdef0123456789abcdef0badf00d"
TOKENS = [HF, GH, AWS_ID, WANDB]


def _plan() -> dict:
    return yaml.safe_load(example_plan_path().read_text(encoding="utf-8"))


def _fields(exc: AdvisorError) -> list[str]:
    return [p.field for p in exc.problems]


# --------------------------------------------------------------------------- bounded input


@pytest.mark.parametrize("text", [ALIAS_BOMB, DEEP_YAML], ids=["alias_bomb", "deep_nesting"])
def test_untrusted_yaml_is_refused_fast_with_a_label(text: str) -> None:
    t0 = time.perf_counter()
    with pytest.raises(AdvisorError) as info:  # libyaml may stop the nesting itself
        yamlio.load_untrusted(text, field="text")
    assert time.perf_counter() - t0 < 1.0
    assert _fields(info.value) == ["text"]


def test_aliases_that_stay_small_still_load() -> None:
    assert yamlio.load_untrusted("a: &x {b: 1}\nc: *x\n") == {"a": {"b": 1}, "c": {"b": 1}}


def test_oversized_text_is_refused_with_the_limit() -> None:
    with pytest.raises(AdvisorError) as info:
        yamlio.load_untrusted("a: " + "x" * (yamlio.MAX_TEXT_CHARS + 1), field="plan")
    assert "at most" in str(info.value) and _fields(info.value) == ["plan"]


@pytest.mark.parametrize("tool,args", [
    ("import_config", {"text": TRL_BOMB}),
    ("import_config", {"text": TRL_BOMB, "framework": "trl"}),
    ("budget_memory_from_config", {"text": TRL_BOMB, "gpu": "H100"}),
    ("translate_config", {"text": TRL_BOMB, "to_framework": "verl", "validate": False}),
    ("import_config", {"text": SHELL_BOMB}),
])
def test_bombs_through_the_mcp_server_answer_a_labelled_error_fast(tool: str, args: dict) -> None:
    async def go() -> tuple[object, float]:
        async with Client(build_server()) as client:
            t0 = time.perf_counter()
            result = await client.call_tool(tool, args)
            elapsed = time.perf_counter() - t0
            follow = await client.call_tool("list_catalog", {})
            assert not follow.is_error
            return result, elapsed

    with start_blocking_portal() as portal:
        result, elapsed = portal.call(go)
    assert result.is_error and elapsed < 5.0, elapsed  # bounded (the bomb once took 48 s); slack for a loaded CI host
    payload = json.loads(result.content[0].text)
    assert payload["problems"][0]["field"] == "text"
    assert "expand" in payload["problems"][0]["message"]


def test_plan_yaml_bomb_is_refused() -> None:
    with pytest.raises(AdvisorError) as info:
        plan_from_yaml(ALIAS_BOMB)
    assert _fields(info.value) == ["plan"]


def test_self_referencing_shell_variable_and_huge_arithmetic_stay_bounded() -> None:
    from advisor.importers import import_config

    text = ("A=x$A\npython3 -m verl.trainer.main_ppo data.train_batch_size=$A "
            "actor_rollout_ref.actor.ppo_mini_batch_size=$((" + "99999*" * 40 + "9))\n")
    t0 = time.perf_counter()
    result = import_config(text)
    assert time.perf_counter() - t0 < 1.0
    joined = " ".join(result.not_understood)
    assert "data.train_batch_size" in joined and "ppo_mini_batch_size" in joined


def test_non_ascii_env_names_are_refused() -> None:
    plan = _plan()
    plan["env"] = {"ÄPFEL": "1"}
    with pytest.raises(AdvisorError) as info:
        plan_from_dict(plan)
    assert "ÄPFEL" in str(info.value) and "ASCII" in str(info.value)


# --------------------------------------------------------------------------- secrets in a Plan


@pytest.mark.parametrize("path,value", [
    (("logging", "project"), HF),
    (("data", "train_files"), ["s3://user:hunter2pass@bucket/train.parquet"]),
    (("policy", "path"), "https://" + GH + "@github.com/org/model"),
])
def test_credentials_in_plan_fields_are_refused_naming_the_field(path: tuple, value: object) -> None:
    plan = _plan()
    plan[path[0]] = {**plan.get(path[0], {}), path[1]: value}
    with pytest.raises(AdvisorError) as info:
        plan_from_dict(plan)
    text = str(info.value)
    assert ".".join(path) in text and "credential" in text
    assert "hunter2pass" not in text and GH not in text and HF not in text


def test_env_value_holding_a_password_is_rendered_as_a_reference() -> None:
    from advisor.render import render_config

    plan = _plan()
    plan["env"] = {"DB_URL": "postgres://bob:hunter2pass@db:5432/x", "PLAIN": "ok"}
    rendered = render_config(plan_from_dict(plan))
    for art in rendered.artifacts:
        assert "hunter2pass" not in art.content, art.name
    script = next(a for a in rendered.artifacts if a.format == "shell").content
    assert "${DB_URL:?" in script


# --------------------------------------------------------------------------- diagnosis outputs


def _secret_log() -> str:
    lines = [f"step:{i} - actor/entropy:{2.0 - i * 0.01:.3f} - critic/score/mean:{0.1 * i:.2f}"
             for i in range(1, 30)]
    lines += [
        f"export HF_TOKEN={HF}",
        "Traceback (most recent call last):",
        f'  File "train.py", line 3, in <module>  # git clone https://{GH}@github.com/x/y',
        f"huggingface_hub.errors.HfHubHTTPError: 401 Unauthorized token={HF} aws={AWS_ID} wandb={WANDB}",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB "
        f"(HF_TOKEN={HF} origin=https://{GH}@github.com/x/y key {AWS_ID} wandb {WANDB})",
    ]
    return "\n".join(lines) + "\n"


def _assert_clean(text: str, where: str) -> None:
    for token in TOKENS:
        assert token not in text, f"{token[:8]}... leaked into {where}"


def test_diagnose_run_over_mcp_returns_no_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rl_advisor.diagnose_tool import diagnose_run

    # the diagnosis core quotes the log line as evidence: the tokens are there before the boundary
    raw = diagnose_run(log_text=_secret_log()).model_dump_json()
    assert all(token in raw for token in TOKENS)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.log").write_text(_secret_log(), encoding="utf-8")

    async def go() -> list:
        async with Client(build_server()) as client:
            return [await client.call_tool("diagnose_run", {"path": "train.log"}),
                    await client.call_tool("diagnose_run", {"log_text": _secret_log()})]

    with start_blocking_portal() as portal:
        results = portal.call(go)
    for result in results:
        assert not result.is_error, result.content
        body = json.dumps(result.structured_content) + result.content[0].text
        assert "redacted" in body  # the evidence was there, and was masked
        _assert_clean(body, "diagnose_run")


def test_cli_diagnose_json_and_html_return_no_secret(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(_secret_log(), encoding="utf-8")
    html = tmp_path / "report.html"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-m", "rl_advisor", "diagnose", str(log), "--json",
                          "--html", str(html)], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    json.loads(out.stdout)
    _assert_clean(out.stdout + out.stderr, "diagnose --json")
    _assert_clean(html.read_text(encoding="utf-8"), "diagnose --html")
    text = subprocess.run([sys.executable, "-m", "rl_advisor", "diagnose", str(log)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert text.returncode == 0, text.stderr
    _assert_clean(text.stdout + text.stderr, "diagnose (text)")


def test_a_100k_deep_json_line_is_skipped_not_a_crash() -> None:
    async def go():
        async with Client(build_server()) as client:
            line = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"
            return await client.call_tool("diagnose_run", {"log_text": "step:1 - actor/entropy:1.0\n" + line +
                                                           "\nstep:2 - actor/entropy:0.9\n"})

    with start_blocking_portal() as portal:
        result = portal.call(go)
    assert not result.is_error, result.content
    assert result.structured_content["lines_read"] == 3


def test_run_ids_stay_ascii_for_unicode_plan_names() -> None:
    from backends.registry import new_run_id

    run_id = new_run_id("grpo-日本語-Ωmega-ＡＢＣ")
    assert run_id.isascii() and "grpo" in run_id
