"""Real TRL training on this machine's CPU through the local backend, read back through the
tools: GRPO (reward rises on the toy task), DPO (preference accuracy and margin rise), a
trainer killed mid-run, and the MCP server killed with SIGKILL while its run trains."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("trl")

from advisor.plan import plan_to_yaml  # noqa: E402
from backends.protocol import RunState  # noqa: E402
from rl_advisor import tinymodel  # noqa: E402
from rl_advisor.launch_tools import launch_run, run_logs, run_metrics, run_status  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return tinymodel.build_toy_workspace(tmp_path_factory.mktemp("toy"))


def _wait(run_id: str, timeout: float = 240) -> RunState:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = run_status(run_id)
        if st.state.terminal:
            return st
        time.sleep(0.5)
    raise AssertionError(f"run {run_id} still {run_status(run_id).state} after {timeout}s:\n"
                         f"{run_logs(run_id, 40).text}")


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def test_grpo_on_cpu_reward_rises(workspace: dict[str, Path]) -> None:
    plan = tinymodel.toy_plan(workspace, "grpo", steps=16)
    dry = launch_run(plan)
    assert dry.dry_run and dry.run_id is None and "accelerate" in dry.launch_script
    assert not Path(dry.run_dir).exists()  # a dry run writes nothing
    res = launch_run(plan, confirm=True)
    assert res.run_id and res.state == RunState.RUNNING
    st = _wait(res.run_id)
    assert st.state == RunState.SUCCEEDED, run_logs(res.run_id, 40).text
    m = run_metrics(res.run_id, max_points=1000)
    assert m.points == 16 and m.last_step == 16
    rewards = [v for _, v in m.series["reward_mean"]]
    assert m.raw_keys["reward_mean"] == "reward"
    assert _mean(rewards[-4:]) > _mean(rewards[:4]) + 0.05, rewards  # the toy task is learned
    assert {"entropy", "response_length_mean", "loss"} <= set(m.keys)


def test_dpo_on_cpu_preferences_learned(workspace: dict[str, Path]) -> None:
    res = launch_run(tinymodel.toy_plan(workspace, "dpo", steps=10), confirm=True)
    st = _wait(res.run_id)
    assert st.state == RunState.SUCCEEDED, run_logs(res.run_id, 40).text
    m = run_metrics(res.run_id)
    assert m.points == 10
    assert m.last["loss"] < m.first["loss"] - 0.2  # from ln 2 = 0.693 down
    margins = [v for _, v in m.series["dpo_margin"]]
    assert margins[-1] > margins[0]


def _live_group_members(pgid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                out.append(int(entry.name))
    return out


def _trainer_pid(run_dir: Path, timeout: float = 60) -> int:
    """The python process running train.py inside the run's process group."""
    runner = json.loads((run_dir / "runner.json").read_text())
    pgid = runner["runner_pid"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                cmd = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if int(fields[2]) == pgid and any(c.endswith(b"train.py") for c in cmd) and \
                    not any(c.endswith(b"accelerate") for c in cmd[:2]):
                return int(entry.name)
        time.sleep(0.2)
    raise AssertionError("trainer process not found")


def test_trainer_killed_mid_run_fails_with_reason_and_keeps_metrics(workspace: dict[str, Path]) -> None:
    res = launch_run(tinymodel.toy_plan(workspace, "dpo", steps=2000, name="toy-dpo-killed"), confirm=True)
    metrics = Path(res.metrics_paths[0])
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not metrics.exists() or len(metrics.read_text().splitlines()) < 5):
        time.sleep(0.2)
    os.kill(_trainer_pid(Path(res.run_dir)), signal.SIGKILL)  # what the OOM killer does
    st = _wait(res.run_id, 60)
    assert st.state == RunState.FAILED
    assert "SIGKILL" in st.message or "Signals.SIGKILL" in st.message or "-9" in st.message, st.message
    m = run_metrics(res.run_id)
    assert m.points >= 5 and m.last_step >= 5  # metrics so far are kept
    # nothing of the run is left running
    pgid = json.loads((Path(res.run_dir) / "runner.json").read_text())["runner_pid"]
    deadline = time.monotonic() + 10  # the runner itself exits just after writing exit.json
    while _live_group_members(pgid) and time.monotonic() < deadline:
        run_status(res.run_id)  # reaps the finished runner
        time.sleep(0.1)
    assert _live_group_members(pgid) == []


def _rpc(proc: subprocess.Popen, msg: dict) -> dict | None:
    proc.stdin.write((json.dumps(msg) + "\n").encode())
    proc.stdin.flush()
    if "id" not in msg:
        return None
    while True:
        line = proc.stdout.readline()
        assert line, "server closed stdout"
        reply = json.loads(line)
        if reply.get("id") == msg["id"]:
            return reply


def test_server_sigkilled_mid_run_leaves_registry_intact_and_run_trackable(
        workspace: dict[str, Path], tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    server = subprocess.Popen([sys.executable, "-m", "rl_advisor.mcp_server"], cwd=tmp_path, env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        init = _rpc(server, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}})
        assert "result" in init
        _rpc(server, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        plan = tinymodel.toy_plan(workspace, "dpo", steps=40, name="toy-dpo-orphan")
        reply = _rpc(server, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "launch_run", "arguments": {"plan": plan.model_dump(mode="json", exclude_none=True),
                                                "confirm": True}}})
        result = reply["result"]
        assert not result.get("isError"), result
        run_id = result["structuredContent"]["run_id"]
        run_dir = Path(result["structuredContent"]["run_dir"])
        # wait until it trains, then kill the server the hard way
        metrics = Path(result["structuredContent"]["metrics_paths"][0])
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not metrics.exists():
            time.sleep(0.2)
        server.kill()
        server.wait(10)
    finally:
        if server.poll() is None:
            server.kill()
    # a fresh process (the CLI) finds the run, which kept training, and follows it to the end
    from backends.registry import RunRegistry

    reg = RunRegistry()
    assert reg.integrity_check() == "ok"
    rec = reg.get(run_id)
    assert rec.plan_yaml == plan_to_yaml(tinymodel.toy_plan(workspace, "dpo", steps=40, name="toy-dpo-orphan"))
    assert rec.backend_ids["pid"] and rec.artifacts and (run_dir / "console.log").exists()
    cli = [sys.executable, "-m", "rl_advisor.cli"]
    out = subprocess.run(cli + ["run-status", "--run-id", run_id, "--json"], capture_output=True,
                         text=True, env=os.environ, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["state"] in ("running", "succeeded")
    deadline = time.monotonic() + 180
    state = None
    while time.monotonic() < deadline:
        out = subprocess.run(cli + ["run-status", "--run-id", run_id, "--json"], capture_output=True,
                             text=True, env=os.environ, timeout=60)
        state = json.loads(out.stdout)["state"]
        if state in ("succeeded", "failed", "stopped"):
            break
        time.sleep(1)
    assert state == "succeeded"
    out = subprocess.run(cli + ["run-metrics", "--run-id", run_id, "--json"], capture_output=True,
                         text=True, env=os.environ, timeout=60)
    assert json.loads(out.stdout)["points"] == 40
    history = [e.state for e in RunRegistry().get(run_id).history]
    assert history[0] == RunState.PENDING and history[-1] == RunState.SUCCEEDED
