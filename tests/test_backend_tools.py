"""The launch/status/logs/metrics/stop/list tools: dry runs, registry ids only, clear errors."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from advisor.errors import AdvisorError
from backends.local import LocalBackend
from backends.protocol import LaunchSpec, RunRecord, RunState, utcnow
from backends.registry import RunRegistry, new_run_id, runs_root
from rl_advisor import tinymodel
from rl_advisor.launch_tools import (launch_run, list_runs, run_logs, run_metrics, run_status,
                                     stop_run)


@pytest.fixture
def toy_plan(tmp_path: Path):
    ws = {"model": tmp_path / "m", "prompts": tmp_path / "p.jsonl", "reward": tmp_path / "r.py",
          "pairs": tmp_path / "d.jsonl"}
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(
        '{"num_attention_heads": 4, "hidden_size": 64, "num_hidden_layers": 2, "num_key_value_heads": 2, '
        '"intermediate_size": 128, "vocab_size": 80, "max_position_embeddings": 256}')
    return tinymodel.toy_plan(ws, "grpo", steps=3)


def _sleeping_run(tmp_path: Path) -> str:
    """A run recorded like launch_run does, whose process just sleeps (no training needed)."""
    run_id = new_run_id("sleeper")
    run_dir = runs_root() / run_id
    spec = LaunchSpec(run_id=run_id, name="sleeper", framework="trl", run_dir=str(run_dir),
                      working_dir=str(run_dir / "work"),
                      entrypoint=[sys.executable, "-c", "import time; print('hi', flush=True); time.sleep(300)"])
    now = utcnow()
    reg = RunRegistry()
    reg.create(RunRecord(run_id=run_id, name="sleeper", created_at=now, updated_at=now, backend="local",
                         framework="trl", method="grpo", state=RunState.PENDING, run_dir=str(run_dir),
                         log_paths={"console": str(run_dir / "console.log")}))
    reg.update_ids(run_id, LocalBackend().submit(spec))
    return run_id


def test_launch_is_a_dry_run_unless_confirmed(toy_plan) -> None:
    res = launch_run(toy_plan)
    assert res.dry_run and res.state == RunState.DRY_RUN and res.run_id is None
    assert "accelerate" in res.launch_script and "trl_config.yaml" in res.artifacts
    assert "HF_HUB_OFFLINE" in res.env_keys
    assert not Path(res.run_dir).exists()
    assert list_runs().runs == []
    assert "DRY RUN" in res.to_text()


def test_launch_rejects_bad_backend_options(toy_plan) -> None:
    with pytest.raises(AdvisorError) as err:
        launch_run(toy_plan, backend="slurm")
    assert err.value.problems[0].field == "backend"
    with pytest.raises(AdvisorError) as err:
        launch_run(toy_plan, backend="local", address="http://x:8265")
    assert err.value.problems[0].field == "address"
    with pytest.raises(AdvisorError) as err:
        launch_run(toy_plan, backend="ray", namespace="ns")
    assert err.value.problems[0].field == "namespace"


def test_runs_are_addressed_only_by_registry_id() -> None:
    for bad in ("../../etc/passwd", "", "a b", "x" * 200, "1; rm -rf /"):
        with pytest.raises(AdvisorError) as err:
            run_status(bad)
        assert err.value.problems[0].field == "run_id"
    with pytest.raises(AdvisorError, match="no run with this id"):
        stop_run("20990101-000000-nothing-000000", confirm=True)


def test_status_logs_stop_and_list(tmp_path: Path) -> None:
    run_id = _sleeping_run(tmp_path)
    try:
        assert run_status(run_id).state == RunState.RUNNING
        for _ in range(50):
            if "hi" in run_logs(run_id, tail=5).text:
                break
            time.sleep(0.1)
        assert "hi" in run_logs(run_id, tail=5).text
        with pytest.raises(AdvisorError) as err:
            run_logs(run_id, tail=0)
        assert err.value.problems[0].field == "tail"
        m = run_metrics(run_id)
        assert m.points == 0 and "no metric points yet" in m.note
        dry = stop_run(run_id)
        assert dry.dry_run and run_status(run_id).state == RunState.RUNNING
        done = stop_run(run_id, confirm=True)
        assert done.state == RunState.STOPPED and not done.dry_run
        st = run_status(run_id)
        assert st.state == RunState.STOPPED
        assert [e.state for e in st.history][-1] == RunState.STOPPED
        assert stop_run(run_id, confirm=True).message.startswith("already stopped")
        assert [r.run_id for r in list_runs().runs] == [run_id]
        assert list_runs(state=RunState.RUNNING).runs == []
    finally:
        rec = RunRegistry().get(run_id)
        LocalBackend().stop(rec, grace_s=1)


def test_locked_registry_is_a_clear_tool_error(toy_plan, monkeypatch: pytest.MonkeyPatch) -> None:
    reg = RunRegistry()
    monkeypatch.setenv("RL_ADVISOR_REGISTRY_BUSY_MS", "200")
    holder = sqlite3.connect(reg.path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(AdvisorError) as err:
            launch_run(toy_plan, confirm=True)
        assert err.value.problems[0].field == "registry" and "locked" in str(err.value)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert list_runs().runs == []  # nothing half-recorded, nothing launched
    assert not any(runs_root().iterdir())


def test_tools_over_mcp_in_process(toy_plan) -> None:
    from mcp import Client

    from rl_advisor.mcp_server import build_server

    async def go():
        async with Client(build_server()) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"launch_run", "run_status", "run_logs", "run_metrics", "stop_run", "list_runs"} <= names
            r = await client.call_tool("launch_run", {"plan": toy_plan.model_dump(mode="json", exclude_none=True)})
            assert not r.is_error and r.structured_content["dry_run"] is True
            bad = await client.call_tool("stop_run", {"run_id": "../x", "confirm": True})
            assert bad.is_error and "run_id" in bad.content[0].text

    asyncio.run(go())


def test_every_backend_implements_the_protocol() -> None:
    from backends import get_backend
    from backends.protocol import Backend

    for name, opts in (("local", {}), ("ray", {"address": "http://127.0.0.1:1"}), ("k8s", {})):
        be = get_backend(name, opts)
        assert isinstance(be, Backend) and be.name == name
    with pytest.raises(AdvisorError):
        get_backend("slurm")


@pytest.mark.parametrize("framework,metrics_suffix,fmt_env", [
    ("verl", "outputs/metrics.jsonl", "VERL_FILE_LOGGER_PATH"),
    ("openrlhf", "console.log", None),
])
def test_dry_run_of_gpu_frameworks_on_ray(framework: str, metrics_suffix: str, fmt_env: str | None) -> None:
    """veRL/OpenRLHF create their own placement groups: the dry run carries the placement plan's
    bundles (checked against the cluster before a real submission) and where metrics will be."""
    from advisor.plan import Framework, plan_from_yaml
    from tests.conftest import example_plan_path

    plan = plan_from_yaml(example_plan_path().read_text())
    plan = plan.model_copy(update={"framework": Framework(framework)})
    res = launch_run(plan, backend="ray", address="http://127.0.0.1:1")  # dry run: nothing contacted
    assert res.dry_run and res.entrypoint.startswith("bash ")
    gpus = sum(b.get("GPU", 0) for b in res.resources.placement_bundles)
    assert gpus == plan.hardware.total_gpus
    assert res.metrics_paths and res.metrics_paths[0].endswith(metrics_suffix)
    if fmt_env:  # the launch script exports it, with the very path the adapter follows
        assert f"export {fmt_env}={res.metrics_paths[0]}" in res.launch_script
        assert fmt_env not in res.env_keys
