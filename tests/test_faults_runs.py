"""A job killed mid-run and the Ray head killed mid-run, seen through the tools (issue 9).

The run is started the way launch_run starts one (registry record first, then the backend's
submit, then the ids and RUNNING recorded), with a small metric-writing script as the
entrypoint so the test does not depend on a training stack. Then the process (or the whole Ray
head) is SIGKILLed, and an agent's view is checked: run_status, run_metrics, diagnose_run and
stop_run over MCP, plus the registry file itself.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import start_blocking_portal
from mcp import Client

from backends import get_backend
from backends.protocol import LaunchSpec, Resources, RunRecord, RunState, utcnow
from backends.registry import RunRegistry, new_run_id, runs_root
from rl_advisor.mcp_server import build_server

pytestmark = pytest.mark.integration

WRITER = r"""
import json, os, sys, time
os.makedirs("outputs", exist_ok=True)
open("driver.pid", "w").write(str(os.getpid()))
for step in range(1, int(sys.argv[1]) + 1):
    row = {"step": step, "reward": 0.1 + step / 100, "kl": 0.001 * step, "entropy": 1.0, "loss": 1.0 / step}
    with open("outputs/metrics.jsonl", "a") as fh:
        fh.write(json.dumps(row) + "\n")
    print(row, flush=True)
    time.sleep(float(sys.argv[2]))
"""


def start_run(backend: str, options: dict[str, Any], steps: int = 600, delay: float = 0.2) -> str:
    """What launch_run(confirm=true) does once the Plan is rendered: record, submit, record ids."""
    run_id = new_run_id(f"fault-{backend}")
    run_dir = runs_root() / run_id
    work = run_dir / "work"
    work.mkdir(parents=True)
    (work / "writer.py").write_text(WRITER)
    spec = LaunchSpec(run_id=run_id, name=run_id, framework="trl", run_dir=str(run_dir),
                      working_dir=str(work), entrypoint=[sys.executable, "writer.py", str(steps), str(delay)],
                      resources=Resources(num_cpus=0.1), options=options,
                      metrics_files=[str(work / "outputs" / "metrics.jsonl")], metrics_format="trl_jsonl")
    reg = RunRegistry()
    now = utcnow()
    reg.create(RunRecord(run_id=run_id, name=run_id, created_at=now, updated_at=now, backend=backend,
                         framework="trl", method="grpo", state=RunState.PENDING, message="submitting",
                         run_dir=str(run_dir), log_paths={"console": str(run_dir / "console.log")},
                         metrics_paths=spec.metrics_files, metrics_format=spec.metrics_format,
                         options=options))
    ids = get_backend(backend, options).submit(spec)
    reg.update_ids(run_id, ids)
    reg.set_status(run_id, RunState.RUNNING if backend == "local" else RunState.PENDING, "started",
                   source="launch")
    return run_id


def wait_for_points(run_id: str, n: int, timeout: float = 90) -> Path:
    metrics = Path(RunRegistry().get(run_id).metrics_paths[0])
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if metrics.exists() and len(metrics.read_text().splitlines()) >= n:
            return metrics
        time.sleep(0.2)
    raise AssertionError(f"the run wrote fewer than {n} metric lines in {timeout} s")


def tools(calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(Client(build_server())) as client:
            return [portal.call(client.call_tool, name, args) for name, args in calls]


def test_local_job_killed_mid_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    run_id = start_run("local", {})
    metrics = wait_for_points(run_id, 5)
    pid = int((metrics.parent.parent / "driver.pid").read_text())
    os.kill(pid, signal.SIGKILL)  # the OOM killer
    written = len(metrics.read_text().splitlines())
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        (status,) = tools([("run_status", {"run_id": run_id})])
        if status.structured_content["state"] != "running":
            break
        time.sleep(0.3)
    report = status.structured_content
    assert report["state"] == "failed", report
    assert "SIGKILL" in report["message"] and report["message"], report
    metrics_result, diagnosis, stop = tools([("run_metrics", {"run_id": run_id}),
                                             ("diagnose_run", {"run_id": run_id}),
                                             ("stop_run", {"run_id": run_id, "confirm": True})])
    assert metrics_result.structured_content["points"] == written  # nothing lost
    assert diagnosis.structured_content["points_read"] == written
    assert not stop.is_error and "already failed" in stop.structured_content["message"]
    record = RunRegistry().get(run_id)
    assert [e.state for e in record.history] == [RunState.PENDING, RunState.RUNNING, RunState.FAILED]
    assert RunRegistry().integrity_check() == "ok"


@pytest.fixture
def ray_head():
    pytest.importorskip("ray")
    from backends.ray_head import LocalRayHead

    head = LocalRayHead(num_cpus=2, num_gpus=0)
    head.start()
    try:
        yield head
    finally:
        head.stop()


def test_ray_head_killed_mid_run(ray_head: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delenv("RAY_API_SERVER_ADDRESS", raising=False)
    run_id = start_run("ray", {"address": ray_head.address})
    metrics = wait_for_points(run_id, 5)
    (status,) = tools([("run_status", {"run_id": run_id})])
    assert status.structured_content["state"] == "running", status.structured_content
    ray_head.crash()  # SIGKILL the head's whole process group: GCS, raylet, dashboard, job driver
    time.sleep(1.0)
    written = len(metrics.read_text().splitlines())

    status, metrics_result, diagnosis, stop, listed = tools([
        ("run_status", {"run_id": run_id}),
        ("run_metrics", {"run_id": run_id}),
        ("diagnose_run", {"run_id": run_id}),
        ("stop_run", {"run_id": run_id, "confirm": True}),
        ("list_runs", {}),
    ])
    report = status.structured_content
    assert not status.is_error, status.content
    assert report["state"] in ("running", "unknown"), "a lost head is not a verdict on the run"
    assert "unreachable" in report["observed"] or "could not" in report["observed"], report
    # metrics written to the shared file system before the crash are still there
    assert not metrics_result.is_error
    assert metrics_result.structured_content["points"] >= 5 or metrics_result.structured_content["note"]
    assert diagnosis.structured_content["points_read"] >= min(written, 5)
    stop_problem = json.loads(stop.content[0].text)["problems"][0] if stop.is_error else None
    assert stop_problem is None or stop_problem["field"] in ("run_id", "backend")
    assert run_id in [r["run_id"] for r in listed.structured_content["runs"]]
    record = RunRegistry().get(run_id)
    assert not record.terminal
    states = [e.state for e in record.history]
    assert RunState.RUNNING in states and not any(s.terminal for s in states), states
    assert RunRegistry().integrity_check() == "ok"
