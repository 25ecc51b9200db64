"""The server stays responsive and every error is labelled (issue 14): per-call time limit,
the alias bomb over real Streamable HTTP while a second client is served, header timeout,
sessions per client, a corrupted registry, devices and FIFOs on the CLI, overflowing numbers.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
import yaml
from anyio.from_thread import start_blocking_portal
from mcp import Client

from rl_advisor import mcp_server
from rl_advisor.http_transport import SessionCapMiddleware
from tests.conftest import REPO, example_plan_path
from tests.test_hardening_input import TRL_BOMB
from tests.test_http_transport import http_server


def _plan() -> dict:
    return yaml.safe_load(example_plan_path().read_text(encoding="utf-8"))


def _payload(result) -> dict:
    assert result.is_error
    return json.loads(result.content[0].text)


# --------------------------------------------------------------------------- time limit


def test_a_call_past_its_time_limit_is_answered_and_others_are_served(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RL_ADVISOR_CALL_TIMEOUT_S", "1")
    server = mcp_server.build_server()

    def slow_tool(seconds: float = 30.0) -> dict:
        """Sleeps (stands in for a call that would run too long)."""
        time.sleep(seconds)
        return {"slept": seconds}

    server.add_tool(mcp_server._as_mcp_tool(slow_tool, "slow_tool"), name="slow_tool")

    async def go() -> tuple:
        async with Client(server) as client:
            t0 = time.perf_counter()
            slow = await client.call_tool("slow_tool", {"seconds": 30.0})
            elapsed = time.perf_counter() - t0
            fast = await client.call_tool("list_catalog", {})
            return slow, elapsed, fast

    with start_blocking_portal() as portal:
        slow, elapsed, fast = portal.call(go)
    problem = _payload(slow)["problems"][0]
    assert problem["field"] == "(call)" and "time limit of 1 s" in problem["message"]
    assert elapsed < 10
    assert not fast.is_error


# --------------------------------------------------------------------------- real HTTP


@pytest.mark.integration
def test_alias_bomb_over_http_is_refused_fast_while_a_second_client_is_served(tmp_path: Path) -> None:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async def call(url: str, tool: str, args: dict) -> tuple:
        async with httpx2.AsyncClient(timeout=60) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                t0 = time.perf_counter()
                result = await client.call_tool(tool, args)
                return result, time.perf_counter() - t0

    with http_server(tmp_path / "home") as srv:
        out: dict = {}

        async def go() -> None:
            async def one(key: str, tool: str, args: dict) -> None:
                out[key] = await call(srv["url"], tool, args)

            async with anyio.create_task_group() as tg:
                for i in range(3):
                    tg.start_soon(one, f"bomb{i}", "import_config", {"text": TRL_BOMB})
                tg.start_soon(one, "other", "choose_method", {"objective": {"task": "math"}})

        with start_blocking_portal() as portal:
            portal.call(go)
        assert srv["proc"].poll() is None  # still serving
    for i in range(3):
        result, elapsed = out[f"bomb{i}"]
        assert _payload(result)["problems"][0]["field"] == "text"
        assert elapsed < 5.0, elapsed  # bounded, with slack for a loaded CI host
    other, _ = out["other"]
    assert not other.is_error


@pytest.mark.integration
def test_a_client_that_never_finishes_its_headers_is_disconnected(tmp_path: Path) -> None:
    from rl_advisor.http_transport import HEADER_TIMEOUT_S

    with http_server(tmp_path / "home") as srv:
        sock = socket.create_connection(("127.0.0.1", srv["port"]), timeout=HEADER_TIMEOUT_S + 20)
        t0 = time.monotonic()
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # ... and nothing more
        assert sock.recv(1024) == b""  # the server closed the connection
        elapsed = time.monotonic() - t0
        sock.close()
        assert HEADER_TIMEOUT_S - 1 <= elapsed < HEADER_TIMEOUT_S + 15


def test_sessions_per_client_are_capped() -> None:
    import httpx

    counter = iter(range(1000))

    async def app(scope, receive, send):
        sid = f"s{next(counter)}".encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"mcp-session-id", sid)]})
        await send({"type": "http.response.body", "body": b"{}"})

    capped = SessionCapMiddleware(app, per_client=2)

    async def go() -> list[int]:
        codes = []
        for client in ("10.0.0.1", "10.0.0.1", "10.0.0.1", "10.0.0.2"):
            transport = httpx.ASGITransport(app=capped, client=(client, 1234))
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
                codes.append((await http.post("/mcp", content=b"{}")).status_code)
        transport = httpx.ASGITransport(app=capped, client=("10.0.0.1", 1234))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            codes.append((await http.delete("/mcp", headers={"mcp-session-id": "s0"})).status_code)
            codes.append((await http.post("/mcp", content=b"{}")).status_code)
        return codes

    assert anyio.run(go) == [200, 200, 429, 200, 200, 200]


# --------------------------------------------------------------------------- labelled errors


def test_corrupted_registry_is_a_labelled_error(monkeypatch: pytest.MonkeyPatch) -> None:
    home = Path(os.environ["RL_ADVISOR_HOME"])
    (home / "registry.sqlite3").write_bytes(b"this is not a database" * 100)

    calls = [("list_runs", {}), ("run_status", {"run_id": "r1"}), ("run_logs", {"run_id": "r1"}),
             ("run_metrics", {"run_id": "r1"}), ("diagnose_run", {"run_id": "r1"}),
             ("stop_run", {"run_id": "r1"})]

    async def go():
        async with Client(mcp_server.build_server()) as client:
            return [await client.call_tool(tool, args) for tool, args in calls]

    with start_blocking_portal() as portal:
        results = portal.call(go)
    for (tool, _), result in zip(calls, results):
        problem = _payload(result)["problems"][0]
        assert problem["field"] in ("registry", "run_id"), (tool, problem)
        assert "registry" in problem["message"] and "not a database" in problem["message"], (tool, problem)


def test_overflowing_host_memory_is_refused_naming_the_field() -> None:
    plan = _plan()
    plan["hardware"]["host_memory_gb"] = 1e300

    async def go():
        async with Client(mcp_server.build_server()) as client:
            return await client.call_tool("budget_memory", {"plan": plan})

    with start_blocking_portal() as portal:
        problems = _payload(portal.call(go))["problems"]
    assert any("host_memory_gb" in p["field"] for p in problems)


@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_cli_refuses_devices_and_fifos(kind: str, tmp_path: Path) -> None:
    if kind == "device":
        target = "/dev/zero"
    else:
        target = str(tmp_path / "fifo")
        os.mkfifo(target)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for argv in (["validate-plan", "--plan", target], ["diagnose", target],
                 ["diagnose", str(example_plan_path()), "--plan", target],
                 ["memory-check", "--plan", target]):
        out = subprocess.run([sys.executable, "-m", "rl_advisor", *argv], capture_output=True,
                             text=True, env=env, timeout=60)
        assert out.returncode == 2, (argv, out.stdout, out.stderr[-2000:])
        assert "regular file" in out.stderr and "Traceback" not in out.stderr, (argv, out.stderr)
