"""Secrets (W&B, HF, cloud tokens) never appear in logs, registry rows or rendered artifacts.

Real credentials-shaped values are put in the environment and in a Plan's ``env``; then the
real code paths run: render_config over MCP for every framework (artifacts, Ray job spec, K8s
manifests), launch_run's dry run, the run registry (read back with raw SQL, not through the
class that scrubbed it), run_logs over MCP, and the server's own logging.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml
from anyio.from_thread import start_blocking_portal
from mcp import Client

from rl_advisor.mcp_server import build_server
from advisor.secrets import (REDACTED, ScrubbingFilter, is_secret, is_secret_name, scrub,
                                scrub_text)
from tests.conftest import example_plan_path

WANDB = "0123456789abcdef0123456789abcdef0badf00d"          # W&B keys: 40 hex
HF = "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12"              # Hugging Face token
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
AWS_ID = "AKIAIOSFODNN7EXAMPLE"
OPENAI = "sk-proj-Abcdefghijklmnopqrstuvwxyz0123456789ABCD"
PLAN_ONLY = "hf_OnlyInThePlanNotInTheEnvironment99"          # a token that is only in the Plan
SECRETS = [WANDB, HF, AWS_SECRET, AWS_ID, OPENAI, PLAN_ONLY]


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("WANDB_API_KEY", WANDB)
    monkeypatch.setenv("HF_TOKEN", HF)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", AWS_ID)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI)
    monkeypatch.chdir(tmp_path)


def assert_clean(text: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret[:8]}... leaked into {where}"


def plan_with_secrets(name: str = "grpo-qwen2.5-7b-8xh100.yaml") -> dict[str, Any]:
    plan = yaml.safe_load(example_plan_path(name).read_text())
    plan["env"] = {"WANDB_API_KEY": WANDB, "HF_TOKEN": HF, "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
                   "EXTRA_TOKEN_LIKE": PLAN_ONLY, "NCCL_DEBUG": "WARN", "MY_FLAG": "1"}
    plan.setdefault("logging", {})["backends"] = ["console", "wandb"]
    return plan


def mcp_calls(calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(Client(build_server())) as client:
            return [portal.call(client.call_tool, name, args) for name, args in calls]


# --------------------------------------------------------------------------- the scrubber


def test_scrubber_masks_known_values_shapes_and_assignments(secret_env: None) -> None:
    text = "\n".join([
        f"wandb: logging in with {WANDB}",
        f"export HF_TOKEN={HF}",
        f'{{"AWS_SECRET_ACCESS_KEY": "{AWS_SECRET}", "region": "us-east-1"}}',
        f"aws id {AWS_ID} openai {OPENAI}",
        f"--use_wandb {WANDB} --wandb_project demo",
        f"token only in a plan: {PLAN_ONLY}",
        "remote: https://alice:s3cr3t-passw0rd@git.example.com/repo.git",
        "Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
    ])
    clean = scrub_text(text)
    assert_clean(clean, "scrubbed text")
    for gone in ("s3cr3t-passw0rd", "abcdefghijklmnopqrstuvwxyz0123", "MIIEow"):
        assert gone not in clean
    assert clean.count(REDACTED) >= 9
    assert "us-east-1" in clean and "--wandb_project demo" in clean


def test_scrubber_keeps_references_and_ordinary_text() -> None:
    keep = [
        ': "${WANDB_API_KEY:?set WANDB_API_KEY in the environment}"',
        '--use_wandb "${WANDB_API_KEY}"', "HF_TOKEN=$HF_TOKEN",
        "max_tokens=512 max_new_tokens: 256 pad_token: <|endoftext|> eos_token_id=2",
        "logging.wandb_api_key_env: WANDB_API_KEY  hf_token_env: HF_TOKEN",
        "verl commit 89abcdef0123456789abcdef0123456789abcdef, git sha=89abcdef0123456789abcdef0123456789abcdef",
        "step 10: reward_mean=0.53 kl=0.0012 entropy=1.1 response_length/mean=233.0",
        "tokens/s 1234.5  num_tokens 99  total_tokens=1000000",
    ]
    for line in keep:
        assert scrub_text(line) == line, line


def test_secret_names_and_values() -> None:
    for name in ("WANDB_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "AWS_SECRET_ACCESS_KEY",
                 "AWS_SESSION_TOKEN", "OPENAI_API_KEY", "GITHUB_TOKEN", "MY_DB_PASSWORD",
                 "SERVICE_SECRET", "AZURE_CLIENT_SECRET", "RL_ADVISOR_TOKEN"):
        assert is_secret_name(name), name
    for name in ("HF_HOME", "WANDB_PROJECT", "hf_token_env", "wandb_api_key_env", "MAX_TOKENS",
                 "PAD_TOKEN", "NCCL_DEBUG", "TOKENIZERS_PARALLELISM", "HF_TOKEN_PATH", "CUDA_VISIBLE_DEVICES"):
        assert not is_secret_name(name), name
    assert is_secret("SOMETHING", HF) and is_secret("X", WANDB) and not is_secret("HF_TOKEN", "${HF_TOKEN}")
    nested = scrub({"env": {"HF_TOKEN": "short-but-secret", "HOME": "/root"},
                    "args": ["--x", f"key={OPENAI}"], "n": 3})
    assert nested == {"env": {"HF_TOKEN": REDACTED, "HOME": "/root"}, "args": ["--x", f"key={REDACTED}"], "n": 3}


def test_log_filter_scrubs_server_logs(secret_env: None, caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("rl_advisor.test_secrets")
    handler = logging.StreamHandler()
    records: list[str] = []
    handler.emit = lambda record: records.append(handler.format(record))  # type: ignore[method-assign]
    handler.addFilter(ScrubbingFilter())
    logger.addHandler(handler)
    try:
        logger.warning("calling wandb with %s and token=%s", WANDB, PLAN_ONLY)
    finally:
        logger.removeHandler(handler)
    assert records and REDACTED in records[0]
    assert_clean(records[0], "a log record")


def test_server_main_installs_the_log_filter() -> None:
    from rl_advisor import mcp_server

    source = Path(mcp_server.__file__).read_text()
    assert "install_log_filter" in source


# --------------------------------------------------------------------------- rendered artifacts


@pytest.mark.parametrize("plan_file,framework", [
    ("grpo-qwen2.5-7b-8xh100.yaml", "verl"),
    ("grpo-qwen2.5-7b-8xh100.yaml", "trl"),
    ("grpo-qwen2.5-7b-8xh100.yaml", "openrlhf"),
    ("dpo-qwen2.5-7b-trl-8xh100.yaml", "trl"),
    ("ppo-llama3.1-8b-openrlhf-2x8xh100.yaml", "openrlhf"),
])
def test_rendered_artifacts_carry_references_not_values(secret_env: None, plan_file: str,
                                                        framework: str) -> None:
    plan = plan_with_secrets(plan_file)
    (result,) = mcp_calls([("render_config", {"plan": plan, "framework": framework, "detail": True,
                                               "validate": False, "output_dir": "out"})])
    assert not result.is_error, result.content
    payload = json.dumps(result.structured_content)
    assert_clean(payload, f"render_config({framework}) result")
    for path in Path("out").iterdir():
        assert_clean(path.read_text(), str(path))
    contents = {a["name"]: a["content"] for a in result.structured_content["rendered"]["artifacts"]}
    launch = next(c for n, c in contents.items() if n.endswith(".sh"))
    # secrets are required by name, other env vars are still exported
    assert "${HF_TOKEN" in launch and "${WANDB_API_KEY" in launch and "${EXTRA_TOKEN_LIKE" in launch
    assert "NCCL_DEBUG" in launch and "MY_FLAG" in launch
    k8s = next((c for n, c in contents.items() if n.endswith((".yaml", ".yml")) and "kind:" in c), "")
    if k8s:
        assert "secretKeyRef" in k8s


def test_launch_dry_run_shows_no_secret(secret_env: None) -> None:
    plan = plan_with_secrets("dpo-qwen2.5-7b-trl-8xh100.yaml")
    (result,) = mcp_calls([("launch_run", {"plan": plan, "backend": "local", "confirm": False})])
    assert not result.is_error, result.content
    assert result.structured_content["dry_run"] is True
    assert_clean(json.dumps(result.structured_content), "launch_run dry run")


# --------------------------------------------------------------------------- registry rows and run logs


def test_registry_rows_and_run_logs_are_scrubbed(secret_env: None) -> None:
    from advisor.plan import plan_from_dict, plan_to_yaml
    from backends.protocol import RunRecord, RunState, utcnow
    from backends.registry import RunRegistry, new_run_id, runs_root

    reg = RunRegistry()
    run_id = new_run_id("secrets")
    run_dir = runs_root() / run_id
    run_dir.mkdir(parents=True)
    (run_dir / "console.log").write_text(
        f"env: WANDB_API_KEY={WANDB}\nHF_TOKEN={HF}\nloaded {PLAN_ONLY}\nstep 1 reward 0.5\n")
    (run_dir / "exit.json").write_text(json.dumps({"exit_code": 0, "signal": None}))
    now = utcnow()
    reg.create(RunRecord(
        run_id=run_id, name="secrets", created_at=now, updated_at=now, backend="local",
        framework="trl", method="dpo", state=RunState.RUNNING,
        message=f"started with key {WANDB}", plan_yaml=plan_to_yaml(plan_from_dict(plan_with_secrets())),
        artifacts=[{"name": "run.sh", "content": f"export OPENAI_API_KEY={OPENAI}\n"}],
        run_dir=str(run_dir), log_paths={"console": str(run_dir / "console.log")},
        options={"token": HF}))
    reg.set_status(run_id, RunState.FAILED, f"crashed; AWS_SECRET_ACCESS_KEY={AWS_SECRET}", source="test")

    with sqlite3.connect(reg.path) as conn:
        dump = "\n".join(str(tuple(row)) for table in ("runs", "status_history")
                         for row in conn.execute(f"SELECT * FROM {table}"))
    assert run_id in dump
    assert_clean(dump, "the registry file")
    assert_clean(reg.path.read_bytes().decode("latin-1"), "the raw registry bytes")

    logs, status = mcp_calls([("run_logs", {"run_id": run_id}), ("run_status", {"run_id": run_id})])
    assert not logs.is_error, logs.content
    assert "step 1 reward 0.5" in logs.structured_content["text"]
    assert_clean(logs.structured_content["text"], "run_logs")
    assert_clean(json.dumps(status.structured_content), "run_status")
