"""Streamable HTTP transport: loopback by default, bearer token otherwise, Origin/Host checks.

The real server runs as ``rl-advisor-mcp --transport http`` (uvicorn) on a free loopback port
in a subprocess. The token path is exercised on loopback with ``--require-token``; the
non-loopback rules (a token is generated, never optional) are checked on the ASGI app itself
through httpx's in-memory transport, so no public address is ever bound.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest
from anyio.from_thread import start_blocking_portal

from rl_advisor import http_transport
from rl_advisor.http_transport import TokenError, build_app, load_or_create_token, token_file
from rl_advisor.mcp_server import build_server

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "http-test", "version": "0"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

pytestmark = pytest.mark.integration


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def http_server(home: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[dict[str, Any]]:
    port = free_port()
    full_env = {**os.environ, "RL_ADVISOR_HOME": str(home), **(env or {})}
    if http_transport.TOKEN_ENV not in (env or {}):
        full_env.pop(http_transport.TOKEN_ENV, None)
    proc = subprocess.Popen([sys.executable, "-m", "rl_advisor.mcp_server", "--transport", "http",
                             "--port", str(port), *args], env=full_env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        yield {"proc": proc, "port": port, "url": f"http://127.0.0.1:{port}/mcp"}
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def listening_addresses(port: int) -> set[str]:
    """Local addresses with a LISTEN socket on ``port`` (Linux /proc/net/tcp{,6})."""
    out = set()
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            addr, _, hexport = local.partition(":")
            if state == "0A" and int(hexport, 16) == port:
                if len(addr) == 8:
                    out.add(socket.inet_ntop(socket.AF_INET, bytes.fromhex(addr)[::-1]))
                else:
                    raw = b"".join(bytes.fromhex(addr[i:i + 8])[::-1] for i in range(0, 32, 8))
                    out.add(socket.inet_ntop(socket.AF_INET6, raw))
    return out


def post(url: str, headers: dict[str, str] | None = None, body: Any = INIT) -> httpx.Response:
    return httpx.post(url, headers={**MCP_HEADERS, **(headers or {})}, content=json.dumps(body),
                      timeout=20)


def mcp_round_trip(url: str, token: str | None = None) -> list[str]:
    """List tools and call one through the SDK client over Streamable HTTP."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def go() -> list[str]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                tools = [t.name for t in (await client.list_tools()).tools]
                result = await client.call_tool("list_catalog", {})
                assert not result.is_error, result.content
                return tools

    with start_blocking_portal() as portal:
        return portal.call(go)


# --------------------------------------------------------------------------- loopback, no token


def test_default_binds_loopback_only_and_needs_no_token(tmp_path: Path) -> None:
    with http_server(tmp_path / "home") as srv:
        assert srv["proc"].poll() is None, srv["proc"].stderr.read()
        assert listening_addresses(srv["port"]) == {"127.0.0.1"}
        assert "choose_method" in mcp_round_trip(srv["url"])
        assert not token_file_in(tmp_path / "home").exists(), "loopback must not need a token"


def token_file_in(home: Path) -> Path:
    return home / "http-token"


def test_origin_and_host_are_validated(tmp_path: Path) -> None:
    with http_server(tmp_path / "home") as srv:
        url, port = srv["url"], srv["port"]
        assert post(url).status_code == 200  # no Origin: a non-browser client
        for origin in (f"http://localhost:{port}", f"http://127.0.0.1:{port}", "http://localhost:3000"):
            assert post(url, {"Origin": origin}).status_code == 200, origin
        for origin in ("http://evil.example", "https://evil.example:443", "null",
                       f"http://localhost.evil.example:{port}", f"http://127.0.0.1.nip.io:{port}"):
            assert post(url, {"Origin": origin}).status_code == 403, origin
        # DNS rebinding: a foreign name that resolves to 127.0.0.1 arrives with its own Host
        assert post(url, {"Host": f"rebind.evil.example:{port}"}).status_code == 421
        assert post(url, {"Host": f"localhost:{port}"}).status_code == 200
        # hostile bodies are answered, and the server keeps serving
        huge = {**INIT, "params": {**INIT["params"], "pad": "x" * 5_000_000}}
        assert post(url, body=huge).status_code == 413
        r = httpx.post(url, headers=MCP_HEADERS, content=b"\xff\xfe{garbage", timeout=20)
        assert r.status_code == 400 and r.json()["error"]["code"] == -32700
        assert httpx.post(url, headers={**MCP_HEADERS, "Content-Type": "text/plain"},
                          content=json.dumps(INIT), timeout=20).status_code == 400
        assert post(url).status_code == 200


# --------------------------------------------------------------------------- token required


def test_token_required_rejects_missing_and_wrong_tokens(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with http_server(home, "--require-token") as srv:
        url = srv["url"]
        path = token_file_in(home)
        assert path.exists(), srv["proc"].stderr.read()
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        token = path.read_text().strip()
        assert len(token) >= 32
        assert str(path) in _stderr_so_far(srv["proc"]) and token not in _stderr_so_far(srv["proc"])
        for headers in ({}, {"Authorization": "Bearer"}, {"Authorization": "Bearer x"},
                        {"Authorization": f"Bearer {token[:-1]}"}, {"Authorization": f"Bearer {token}x"},
                        {"Authorization": f"Basic {token}"}, {"Authorization": token},
                        {"X-Token": token}):
            r = post(url, headers)
            assert r.status_code == 401, (headers, r.status_code)
            assert r.headers["www-authenticate"].startswith("Bearer")
        assert post(url, {"Authorization": f"Bearer {token}"}).status_code == 200
        assert post(url, {"Authorization": f"bearer {token}"}).status_code == 200
        # the token does not switch off the Origin check
        assert post(url, {"Authorization": f"Bearer {token}", "Origin": "http://evil.example"}).status_code == 403
        assert "choose_method" in mcp_round_trip(url, token)
        with pytest.raises(BaseException):
            mcp_round_trip(url, "wrong-token-wrong-token-wrong")


def _stderr_so_far(proc: subprocess.Popen) -> str:
    if not hasattr(proc, "_seen_stderr"):
        os.set_blocking(proc.stderr.fileno(), False)
        proc._seen_stderr = ""  # type: ignore[attr-defined]
    try:
        proc._seen_stderr += proc.stderr.read() or ""  # type: ignore[attr-defined]
    except (TypeError, BlockingIOError):
        pass
    return proc._seen_stderr  # type: ignore[attr-defined]


def test_token_is_reused_and_env_token_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("RL_ADVISOR_HOME", str(home))
    monkeypatch.delenv(http_transport.TOKEN_ENV, raising=False)
    first = load_or_create_token()
    assert load_or_create_token() == first
    assert stat.S_IMODE(token_file().stat().st_mode) == 0o600
    env_token = "e" * 40
    with http_server(home, "--require-token", env={http_transport.TOKEN_ENV: env_token}) as srv:
        assert post(srv["url"], {"Authorization": f"Bearer {first}"}).status_code == 401
        assert post(srv["url"], {"Authorization": f"Bearer {env_token}"}).status_code == 200


def test_unsafe_token_setups_refuse_to_start(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    path = token_file_in(home)
    path.write_text("a-long-enough-token-but-world-readable\n")
    path.chmod(0o644)
    with http_server(home, "--require-token") as srv:
        assert srv["proc"].wait(20) == 2
        assert "chmod 600" in srv["proc"].stderr.read()
    path.chmod(0o600)
    path.write_text("short\n")
    with http_server(home, "--require-token") as srv:
        assert srv["proc"].wait(20) == 2
    path.unlink()
    with http_server(home, "--require-token", env={http_transport.TOKEN_ENV: "tooshort"}) as srv:
        assert srv["proc"].wait(20) == 2
        assert http_transport.TOKEN_ENV in srv["proc"].stderr.read()


# --------------------------------------------------------------------------- non-loopback binds


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3"])
def test_non_loopback_bind_generates_a_token_and_enforces_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, host: str) -> None:
    """``--host 0.0.0.0`` without any token set up: one is generated (0600) and required.
    Checked on the ASGI app in memory, so nothing is bound to a public address."""
    monkeypatch.setenv("RL_ADVISOR_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(http_transport.TOKEN_ENV, raising=False)
    assert not token_file().exists()
    app = build_app(build_server(), host=host, port=8765)
    assert token_file().exists() and stat.S_IMODE(token_file().stat().st_mode) == 0o600
    assert isinstance(app, http_transport.BearerTokenMiddleware)

    async def hit(headers: dict[str, str]) -> int:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://10.1.2.3:8765") as c:
            r = await c.post("/mcp", headers={**MCP_HEADERS, **headers}, content=json.dumps(INIT))
            return r.status_code

    with start_blocking_portal() as portal:
        assert portal.call(hit, {}) == 401
        assert portal.call(hit, {"Authorization": "Bearer nope-nope-nope-nope"}) == 401
    with pytest.raises(TokenError):
        build_app(build_server(), host=host, port=8765, require_token=False)


def test_cli_refuses_public_bind_without_usable_token(tmp_path: Path) -> None:
    """The same rule through the command: a bad token setup stops a 0.0.0.0 server before it binds."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "http-token").write_text("")
    (home / "http-token").chmod(0o600)
    port = free_port()
    env = {**os.environ, "RL_ADVISOR_HOME": str(home)}
    env.pop(http_transport.TOKEN_ENV, None)
    proc = subprocess.run([sys.executable, "-m", "rl_advisor.mcp_server", "--transport", "http",
                           "--host", "0.0.0.0", "--port", str(port)], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    assert "refusing to start" in proc.stderr
    assert listening_addresses(port) == set()


def test_load_100_concurrent_clients_zero_errors() -> None:
    """benchmarks/http_load.py, bounded: 100 clients at once, one call each, on both servers."""
    bench = Path(__file__).resolve().parents[1] / "benchmarks" / "http_load.py"
    proc = subprocess.run([sys.executable, str(bench), "--clients", "100", "--calls", "1",
                           "--procs", "2", "--timeout", "200"], capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    done = next(line for line in proc.stdout.splitlines() if line.startswith("calls done"))
    assert done.split()[2:4] == ["100.0", "100.0"], proc.stdout
