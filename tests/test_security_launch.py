"""Launch safety over MCP (issue 9): dry runs unless confirmed, re-validation right before
launch, runs addressed only by their registry id.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from anyio.from_thread import start_blocking_portal
from mcp import Client

from backends.protocol import RunRecord, RunState, utcnow
from backends.registry import RunRegistry, new_run_id, runs_root
from rl_advisor.mcp_server import build_server
from tests.conftest import example_plan_path


@pytest.fixture
def call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(Client(build_server())) as client:
            yield lambda tool, args: portal.call(client.call_tool, tool, args)


def plan(name: str = "dpo-qwen2.5-7b-trl-8xh100.yaml") -> dict[str, Any]:
    return yaml.safe_load(example_plan_path(name).read_text())


def fields(result: Any) -> list[str]:
    assert result.is_error, result.structured_content
    return [p["field"] for p in json.loads(result.content[0].text)["problems"]]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_launch_is_a_dry_run_unless_confirmed(call: Any) -> None:
    before = set(os.listdir("/proc"))
    for args in ({}, {"confirm": False}):
        for backend, extra in (("local", {}), ("ray", {"address": f"http://127.0.0.1:{closed_port()}"}),
                               ("k8s", {"namespace": "nowhere"})):
            result = call("launch_run", {"plan": plan(), "backend": backend, **extra, **args})
            assert not result.is_error, (backend, result.content)
            out = result.structured_content
            assert out["dry_run"] is True and out["run_id"] is None and out["state"] == "dry_run"
            assert out["entrypoint"] and "confirm=true" in out["next_step"]
    # nothing recorded, nothing written, nothing started, no backend contacted (the Ray address
    # and the k8s namespace above do not exist)
    assert RunRegistry().list() == []
    assert list(runs_root().iterdir()) == []
    time.sleep(0.2)
    children = [p for p in set(os.listdir("/proc")) - before if p.isdigit() and _is_child(int(p))]
    assert children == []


def _is_child(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid()


def test_confirm_must_be_a_real_boolean(call: Any) -> None:
    """A truthy string or number never counts as consent to launch."""
    for value in ("yes", "true", "on", "1", 1, 1.0, "true ", [True], {"yes": True}, None):
        result = call("launch_run", {"plan": plan(), "confirm": value})
        assert result.is_error and fields(result) == ["confirm"], (value, result.structured_content)
        stop = call("stop_run", {"run_id": "20261130-000000-x-abcdef", "confirm": value})
        assert fields(stop) == ["confirm"], value
    assert RunRegistry().list() == []
    assert list(runs_root().iterdir()) == []


def test_plan_is_revalidated_right_before_launch(tmp_path: Path) -> None:
    """A Plan object changed after it was checked (bypassing validation) is refused at launch."""
    from advisor.errors import AdvisorError
    from advisor.plan import plan_from_dict
    from rl_advisor.launch_tools import launch_run

    p = plan_from_dict(plan())
    object.__setattr__(p.data, "train_batch_size", -8)          # skips validate_assignment
    object.__setattr__(p.memory, "rollout_memory_fraction", 3.0)
    for confirm in (False, True):
        with pytest.raises(AdvisorError) as err:
            launch_run(p, backend="local", confirm=confirm)
        names = {q.field for q in err.value.problems}
        assert any("train_batch_size" in n for n in names), names
    assert RunRegistry().list() == []


def _recorded_run(pid: int | None = None) -> str:
    reg = RunRegistry()
    run_id = new_run_id("victim")
    run_dir = runs_root() / run_id
    run_dir.mkdir(parents=True)
    now = utcnow()
    ids = {"pid": pid, "pgid": pid} if pid else {}
    reg.create(RunRecord(run_id=run_id, name="victim", created_at=now, updated_at=now, backend="local",
                         framework="trl", method="grpo", state=RunState.RUNNING, message="running",
                         backend_ids=ids, run_dir=str(run_dir)))
    return run_id


def test_stop_only_by_registry_id(call: Any) -> None:
    """stop_run takes a registry id and nothing else: no pid, no name, no path, no pattern."""
    import subprocess

    bystander = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        run_id = _recorded_run()
        for bad in (str(bystander.pid), f"-{bystander.pid}", "*", "%", "victim", "../" + run_id,
                    run_id + "/..", run_id + "\n", run_id[:-1], "", " ", "0", "-1", "1; kill -9 1",
                    run_id.upper() if run_id.upper() != run_id else "X" + run_id):
            result = call("stop_run", {"run_id": bad, "confirm": True})
            assert fields(result) == ["run_id"], bad
        for extra in ({"pid": bystander.pid}, {"pgid": bystander.pid}, {"name": "victim"},
                      {"signal": 9}):
            result = call("stop_run", {"run_id": run_id, "confirm": True, **extra})
            assert fields(result) == list(extra), extra
        assert bystander.poll() is None, "a process that is not a registered run was signalled"
        # without confirm it is a dry run: nothing is stopped
        dry = call("stop_run", {"run_id": run_id})
        assert not dry.is_error and dry.structured_content["dry_run"] is True
        history = RunRegistry().get(run_id).history
        assert all(e.state != RunState.STOPPED and e.source != "stop" for e in history)
    finally:
        bystander.kill()
        bystander.wait()


def test_stop_never_signals_a_recycled_pid(call: Any) -> None:
    """A recorded pid that now belongs to another process (pid reuse) is not killed."""
    import subprocess

    other = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        reg = RunRegistry()
        run_id = new_run_id("recycled")
        run_dir = runs_root() / run_id
        run_dir.mkdir(parents=True)
        now = utcnow()
        reg.create(RunRecord(run_id=run_id, name="recycled", created_at=now, updated_at=now,
                             backend="local", framework="trl", method="grpo", state=RunState.RUNNING,
                             backend_ids={"pid": other.pid, "pgid": other.pid, "proc_start": "1"},
                             run_dir=str(run_dir)))
        result = call("stop_run", {"run_id": run_id, "confirm": True})
        assert not result.is_error, result.content
        time.sleep(0.3)
        assert other.poll() is None, "stop_run killed a process that only reused the run's pid"
    finally:
        other.kill()
        other.wait()
