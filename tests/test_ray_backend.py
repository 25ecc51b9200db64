"""Ray backend against a real Ray head on 127.0.0.1 (one head for the module), plus the pure
feasibility check."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from backends.protocol import BackendError, LaunchSpec, Resources, RunRecord, RunState, utcnow
from backends.ray import RayBackend, check_feasible, normalize_address
from backends.ray_head import free_port

WRITER = r"""
import json, os, sys, time
os.makedirs("outputs", exist_ok=True)
open("driver.pid", "w").write(str(os.getpid()))
for step in range(1, int(sys.argv[1]) + 1):
    row = {"step": step, "reward": step / 100, "loss": 1.0 / step}
    with open("outputs/metrics.jsonl", "a") as fh:
        fh.write(json.dumps(row) + "\n")
    print({k: str(v) for k, v in row.items() if k != "step"}, flush=True)
    time.sleep(float(sys.argv[2]))
"""


# --------------------------------------------------------------------------- pure


def test_feasibility_rules() -> None:
    nodes = [{"CPU": 8, "GPU": 4}, {"CPU": 8, "GPU": 4}]
    assert check_feasible(nodes, {"CPU": 1}, [{"GPU": 1}] * 8, "PACK") == []
    assert check_feasible(nodes, {"GPU": 8}, [], "PACK")  # entrypoint must fit one node
    assert any("STRICT_PACK" in p for p in check_feasible(nodes, {}, [{"GPU": 1}] * 5, "STRICT_PACK"))
    assert any("STRICT_SPREAD" in p for p in check_feasible(nodes, {}, [{"GPU": 1}] * 3, "STRICT_SPREAD"))
    assert any("in all" in p for p in check_feasible(nodes, {"CPU": 1}, [{"GPU": 4}] * 3, "PACK"))
    assert check_feasible([], {}, [], "PACK") == ["the cluster has no alive nodes"]
    assert any("accelerator_type:H100" in p
               for p in check_feasible(nodes, {"accelerator_type:H100": 1}, [], "PACK"))


def test_addresses() -> None:
    assert normalize_address("127.0.0.1:8265") == "http://127.0.0.1:8265"
    with pytest.raises(BackendError, match="Jobs API"):
        normalize_address("ray://head:10001")


def test_unreachable_head_is_a_clear_error() -> None:
    be = RayBackend(f"http://127.0.0.1:{free_port()}", timeout_s=2)
    with pytest.raises(BackendError, match="unreachable") as err:
        be.version()
    assert err.value.reason == "unreachable"


# --------------------------------------------------------------------------- real head


@pytest.fixture(scope="module")
def head():
    pytest.importorskip("ray")
    from backends.ray_head import LocalRayHead

    h = LocalRayHead(num_cpus=2, num_gpus=2)
    h.start()
    yield h
    h.stop()


def _spec(tmp_path: Path, run_id: str, steps: int, delay: float, **res) -> LaunchSpec:
    work = tmp_path / "work"
    work.mkdir(parents=True, exist_ok=True)
    (work / "writer.py").write_text(WRITER)
    return LaunchSpec(run_id=run_id, name="t", framework="trl", run_dir=str(tmp_path),
                      working_dir=str(work), entrypoint=[sys.executable, "writer.py", str(steps), str(delay)],
                      resources=Resources(num_cpus=0.1, **res),
                      metrics_files=[str(work / "outputs" / "metrics.jsonl")], metrics_format="trl_jsonl")


def _record(spec: LaunchSpec, ids: dict) -> RunRecord:
    now = utcnow()
    return RunRecord(run_id=spec.run_id, name="t", created_at=now, updated_at=now, backend="ray",
                     framework="trl", state=RunState.PENDING, backend_ids=ids, run_dir=spec.run_dir,
                     metrics_paths=spec.metrics_files, metrics_format=spec.metrics_format)


def _wait(be: RayBackend, rec: RunRecord, states: set[RunState], timeout: float = 60) -> RunState:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = be.status(rec)
        if st.state in states:
            return st
        time.sleep(0.3)
    raise AssertionError(f"status stayed {be.status(rec)}")


@pytest.mark.integration
def test_submit_stream_logs_read_metrics_and_stop(head, tmp_path: Path) -> None:
    be = RayBackend(head.address)
    spec = _spec(tmp_path, f"ray-stream-{os.getpid()}", steps=300, delay=0.2, num_gpus=1)
    be.preflight(spec)
    ids = be.submit(spec)
    assert ids["submission_id"] == spec.run_id and ids["shared_fs"] is True
    rec = _record(spec, ids)
    seen = ""
    for chunk in be.follow_logs(rec, poll_s=0.3, timeout_s=60):
        seen += chunk
        if seen.count("'reward'") >= 3:
            break
    assert "'reward': '0.03'" in seen  # live output, before the job ends
    assert be.status(rec).state == RunState.RUNNING
    points = be.metrics(rec)
    assert len(points) >= 3 and points[2].values["reward_mean"] == pytest.approx(0.03)
    st = be.stop(rec)
    assert st.state == RunState.STOPPED
    assert _wait(be, rec, {RunState.STOPPED}).state == RunState.STOPPED
    kept = be.metrics(rec)
    assert len(kept) >= len(points)  # metrics written before the stop are kept


@pytest.mark.integration
def test_job_killed_mid_run_is_failed_with_reason_and_keeps_metrics(head, tmp_path: Path) -> None:
    be = RayBackend(head.address)
    spec = _spec(tmp_path, f"ray-killed-{os.getpid()}", steps=300, delay=0.2)
    rec = _record(spec, be.submit(spec))
    metrics = Path(spec.metrics_files[0])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not metrics.exists() or len(metrics.read_text().splitlines()) < 4):
        time.sleep(0.2)
    pid = int((Path(spec.working_dir) / "driver.pid").read_text())
    os.kill(pid, signal.SIGKILL)  # the OOM killer, or a node losing the process
    st = _wait(be, rec, {RunState.FAILED, RunState.SUCCEEDED, RunState.STOPPED})
    assert st.state == RunState.FAILED
    assert st.message  # Ray's reason is reported
    assert "exit code" in st.message or "killed" in st.message.lower() or "signal" in st.message.lower()
    points = be.metrics(rec)
    assert len(points) >= 4 and [p.step for p in points[:4]] == [1, 2, 3, 4]


@pytest.mark.integration
def test_infeasible_job_is_refused_up_front(head, tmp_path: Path) -> None:
    be = RayBackend(head.address)
    spec = _spec(tmp_path, "never", steps=1, delay=0, num_gpus=16)
    with pytest.raises(BackendError, match="can never schedule .*GPU: 16") as err:
        be.preflight(spec)
    assert err.value.reason == "infeasible"
    packed = spec.model_copy(update={"resources": Resources(
        num_cpus=0.1, placement_bundles=[{"GPU": 1.0}] * 3, placement_strategy="STRICT_PACK")})
    with pytest.raises(BackendError, match="STRICT_PACK"):
        be.preflight(packed)
    listed = be._request("GET", "/api/jobs/")
    assert all(j.get("submission_id") != "never" for j in (listed if isinstance(listed, list) else []))


@pytest.mark.integration
def test_launch_tool_trains_trl_through_ray(head, tmp_path: Path) -> None:
    """launch_run(backend='ray') with a real rendered TRL DPO run of the tiny model."""
    pytest.importorskip("trl")
    from rl_advisor import tinymodel
    from rl_advisor.launch_tools import launch_run, run_logs, run_metrics, run_status

    ws = tinymodel.build_toy_workspace(tmp_path / "toy")
    plan = tinymodel.toy_plan(ws, "dpo", steps=6, name="ray-dpo")
    res = launch_run(plan, backend="ray", address=head.address, confirm=True)
    assert res.backend_ids["submission_id"] == res.run_id
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not run_status(res.run_id).state.terminal:
        time.sleep(1)
    st = run_status(res.run_id)
    assert st.state == RunState.SUCCEEDED, run_logs(res.run_id, 40).text
    assert "rewards/margins" in run_logs(res.run_id, 50).text  # TRL's console, from Ray's log API
    m = run_metrics(res.run_id)
    assert m.points == 6 and m.last["loss"] < m.first["loss"]


@pytest.mark.integration
def test_launch_tool_refuses_an_unschedulable_plan(head, tmp_path: Path) -> None:
    from advisor.errors import AdvisorError
    from backends.registry import RunRegistry
    from rl_advisor import tinymodel
    from rl_advisor.launch_tools import launch_run

    ws = {"model": tmp_path / "m", "prompts": tmp_path / "p.jsonl", "reward": tmp_path / "r.py",
          "pairs": tmp_path / "d.jsonl"}
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(
        '{"num_attention_heads": 4, "hidden_size": 64, "num_hidden_layers": 2, "num_key_value_heads": 2, '
        '"intermediate_size": 128, "vocab_size": 80, "max_position_embeddings": 256}')
    plan = tinymodel.toy_plan(ws, "dpo", steps=5, gpu="H100")  # 1 GPU plan: the head has 2 logical GPUs
    plan = plan.model_copy(update={"hardware": plan.hardware.model_copy(update={"gpus_per_node": 8})})
    with pytest.raises(AdvisorError, match="can never schedule"):
        launch_run(plan, backend="ray", address=head.address, confirm=True)
    assert RunRegistry().list() == []  # refused before anything was recorded
