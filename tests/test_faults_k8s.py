"""Kubernetes API faults through the tools: 403, 404, 409 and 5xx (issue 9).

A tiny local HTTP server plays the API server and answers with scripted status codes; the
kubeconfig points the real ``kubernetes`` client at it. Calls go through the MCP tools
(launch_run with confirm=true, run_status, stop_run), so what is checked is what an agent sees
and what the registry keeps:

* 5xx is retried with exponential backoff, then a clear error; 403/404/409 are not retried and
  say what is wrong (RBAC, missing CRD/operator, a foreign object with the same name);
* a refused submission is recorded as FAILED with the reason (the run is not lost);
* an API outage while a run is tracked leaves the last known state and history untouched, and
  the run is followed again once the API answers.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import yaml
from anyio.from_thread import start_blocking_portal
from mcp import Client

pytest.importorskip("kubernetes")

from backends.protocol import RunRecord, RunState, utcnow  # noqa: E402
from backends.registry import RunRegistry, new_run_id  # noqa: E402
from rl_advisor.mcp_server import build_server  # noqa: E402
from tests.conftest import example_plan_path  # noqa: E402

NS = "team"
Script = Callable[[str, str, int], tuple[int, dict[str, Any]]]


def status_body(code: int, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
            "reason": {403: "Forbidden", 404: "NotFound", 409: "AlreadyExists"}.get(code, "InternalError"),
            "code": code}


class FakeAPI:
    """An HTTP server whose every answer comes from ``script(method, path, n)``."""

    def __init__(self) -> None:
        self.script: Script = lambda method, path, n: (503, status_body(503, "etcd unavailable"))
        self.requests: list[tuple[float, str, str]] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                if length:
                    self.rfile.read(length)
                api.requests.append((time.monotonic(), self.command, self.path.split("?")[0]))
                code, body = api.script(self.command, self.path.split("?")[0], len(api.requests))
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAPI]:
    fake = FakeAPI()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "fake",
        "clusters": [{"name": "fake", "cluster": {"server": fake.url}}],
        "users": [{"name": "me", "user": {"token": "not-a-real-token-0000"}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "me", "namespace": NS}}]}))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.chdir(tmp_path)
    yield fake
    fake.close()


def call(tool: str, args: dict[str, Any]) -> Any:
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(Client(build_server())) as client:
            return portal.call(client.call_tool, tool, args)


def problem(result: Any) -> dict[str, Any]:
    assert result.is_error, result.structured_content
    return json.loads(result.content[0].text)["problems"][0]


def launch(api: FakeAPI) -> tuple[Any, RunRecord]:
    """launch_run(confirm=true) on k8s; returns the tool result and the one recorded run."""
    plan = yaml.safe_load(example_plan_path().read_text())
    result = call("launch_run", {"plan": plan, "backend": "k8s", "confirm": True})
    runs = RunRegistry().list(limit=10)
    assert len(runs) == 1, "the submission must be recorded, whatever happened"
    return result, RunRegistry().get(runs[0].run_id)


def test_persistent_5xx_is_retried_with_backoff_then_recorded_failed(api: FakeAPI) -> None:
    result, record = launch(api)
    p = problem(result)
    assert p["field"] == "backend" and "503" in p["message"] and "attempts" in p["message"]
    times = [t for t, _, _ in api.requests]
    assert len(times) == 5, api.requests  # K8sBackend's default: 5 attempts
    assert len({path for _, _, path in api.requests}) == 1, "the same call was retried"
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert all(later >= earlier * 1.3 for earlier, later in zip(gaps, gaps[1:])), gaps  # exponential
    assert record.state == RunState.FAILED and "503" in record.message
    assert [e.state for e in record.history] == [RunState.PENDING, RunState.FAILED]
    assert RunRegistry().integrity_check() == "ok"


def test_5xx_then_recovery_needs_no_user_action(api: FakeAPI) -> None:
    def script(method: str, path: str, n: int) -> tuple[int, dict[str, Any]]:
        if n <= 2:
            return 503, status_body(503, "apiserver restarting")
        if method == "POST":
            return 201, {"kind": "Created", "metadata": {"name": "x"}}
        return 200, {}
    api.script = script
    result, record = launch(api)
    assert not result.is_error, result.content
    assert result.structured_content["state"] == "pending"
    assert record.state == RunState.PENDING and record.backend_ids["namespace"] == NS
    assert api.requests[0][2] == api.requests[2][2], "the failed call was retried, not skipped"


@pytest.mark.parametrize("code,expect", [
    (403, "forbidden"),      # RBAC
    (404, "installed"),      # CRD / operator missing
])
def test_403_and_404_fail_at_once_with_the_reason(api: FakeAPI, code: int, expect: str) -> None:
    api.script = lambda method, path, n: (code, status_body(code, f"the server says {code}"))
    result, record = launch(api)
    p = problem(result)
    assert p["field"] == "backend" and expect in p["message"].lower(), p
    assert len(api.requests) == 1, "4xx must not be retried"
    assert record.state == RunState.FAILED and str(code) in record.message


def test_409_on_a_foreign_workload_is_refused_and_shared_queues_are_reused(api: FakeAPI) -> None:
    def script(method: str, path: str, n: int) -> tuple[int, dict[str, Any]]:
        if method == "POST":
            return 409, status_body(409, "already exists")
        # the existing workload belongs to someone else
        return 200, {"apiVersion": "ray.io/v1", "kind": "RayJob",
                     "metadata": {"name": path.rsplit("/", 1)[-1], "labels": {"rl-advisor/run-id": "someone-else"}}}
    api.script = script
    result, record = launch(api)
    p = problem(result)
    assert p["field"] == "backend" and "not this run's" in p["message"], p
    posts = [path for _, method, path in api.requests if method == "POST"]
    assert any("kueue" in path for path in posts), "Kueue objects: 409 means reuse, go on"
    assert posts[-1].endswith("/rayjobs")
    assert record.state == RunState.FAILED and "409" in record.message


def _tracked_run() -> str:
    """A RayJob run recorded as RUNNING, as launch_run leaves it."""
    reg = RunRegistry()
    run_id = new_run_id("k8s-tracked")
    now = utcnow()
    reg.create(RunRecord(run_id=run_id, name="k8s-tracked", created_at=now, updated_at=now,
                         backend="k8s", framework="verl", method="grpo", state=RunState.RUNNING,
                         message="running", backend_ids={"namespace": NS, "kind": "RayJob",
                                                         "name": "k8s-tracked"},
                         options={"namespace": NS, "context": None}))
    return run_id


@pytest.mark.parametrize("code", [503, 403])
def test_api_outage_while_tracking_keeps_the_record(api: FakeAPI, code: int) -> None:
    """An outage is not a verdict: the run is not marked failed, the reason is visible, the
    history keeps what was known, and the run is followed again once the API answers."""
    run_id = _tracked_run()
    api.script = lambda method, path, n: (code, status_body(code, "nope"))
    status = call("run_status", {"run_id": run_id})
    assert not status.is_error, status.content
    # 5xx: the backend cannot say (recorded as "unknown", with why); 403: last state kept
    assert status.structured_content["state"] in ("running", "unknown")
    assert str(code) in status.structured_content["observed"]
    stop = call("stop_run", {"run_id": run_id, "confirm": True})
    assert problem(stop)["field"] == "run_id"
    record = RunRegistry().get(run_id)
    assert not record.terminal, "an API outage must not invent a final state"
    assert record.history[0].state == RunState.RUNNING
    assert all(not e.state.terminal for e in record.history)
    if len(record.history) > 1:
        assert str(code) in record.history[-1].message
    # the API comes back: the run is followed again, its history grows, nothing was lost
    api.script = lambda method, path, n: (200, {"apiVersion": "ray.io/v1", "kind": "RayJob",
                                                "metadata": {"name": "k8s-tracked"},
                                                "status": {"jobDeploymentStatus": "Complete",
                                                           "jobStatus": "SUCCEEDED"}})
    status = call("run_status", {"run_id": run_id})
    assert status.structured_content["state"] == "succeeded", status.structured_content
    after = RunRegistry().get(run_id)
    assert after.history[:len(record.history)] == record.history
    assert after.history[-1].state == RunState.SUCCEEDED
    assert RunRegistry().integrity_check() == "ok"
