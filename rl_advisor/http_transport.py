"""Streamable HTTP for the MCP server: loopback by default, a bearer token for anything else.

The rules (issue 9; MCP specification, Streamable HTTP, "Security Warning"):

* **Default bind is 127.0.0.1**: only processes on this machine can connect.
* **Any other bind address requires a bearer token.** ``rl-advisor-mcp --transport http --host
  0.0.0.0`` uses ``$RL_ADVISOR_TOKEN`` if set, else the token stored in
  ``<data dir>/http-token``, else generates one (``secrets.token_urlsafe(32)``) into that file with
  mode 0600, and says on stderr where it is (never the token itself). A request without
  ``Authorization: Bearer <token>``, or with a wrong one, gets 401 before it reaches MCP.
  There is deliberately no switch to serve a public address without a token: use an SSH tunnel
  or a reverse proxy on loopback instead.
* ``--require-token`` asks for the token on loopback too (on a shared machine every local user
  can reach 127.0.0.1).
* A token file readable by group or others, or a token shorter than 16 characters, is refused:
  the server does not start.
* **Origin and Host are validated on every request** (DNS-rebinding protection, the SDK's
  ``TransportSecuritySettings``): a browser page from a foreign origin gets 403, a foreign Host
  header gets 421. Loopback origins (``http://localhost:*``, ``http://127.0.0.1:*``,
  ``http://[::1]:*``) are accepted; more with ``--allowed-origin``.
* **Slow and greedy clients are bounded**: a connection must send its request headers within
  ``HEADER_TIMEOUT_S`` and is closed after ``IDLE_TIMEOUT_S`` idle between requests; MCP sessions
  idle for ``SESSION_IDLE_TIMEOUT_S`` are closed; one client address may hold at most
  ``MAX_SESSIONS_PER_CLIENT`` open sessions (429 beyond), the server ``MAX_SESSIONS`` in all.
"""

from __future__ import annotations

import hmac
import os
import secrets
import socket
import stat
import sys
from pathlib import Path
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings

from backends.data_folder import data_dir

HEADER_TIMEOUT_S = 10.0
IDLE_TIMEOUT_S = 15
SESSION_IDLE_TIMEOUT_S = 15 * 60
MAX_SESSIONS = 1000
MAX_SESSIONS_PER_CLIENT = 128

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
WILDCARD = {"0.0.0.0", "::", ""}
TOKEN_ENV = "RL_ADVISOR_TOKEN"
MIN_TOKEN_LEN = 16


class TokenError(RuntimeError):
    """The bearer token cannot be used safely; the message says how to fix it."""


def token_file() -> Path:
    return data_dir() / "http-token"


def _check_token(token: str, where: str) -> str:
    token = token.strip()
    if len(token) < MIN_TOKEN_LEN or any(c.isspace() for c in token):
        raise TokenError(f"the bearer token from {where} is empty, shorter than {MIN_TOKEN_LEN} "
                         "characters or contains whitespace; delete it to have a new one generated")
    return token


def _read_token_file(path: Path) -> str:
    info = path.stat()
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise TokenError(f"{path} is readable by other users (mode {stat.filemode(info.st_mode)}); "
                         f"run `chmod 600 {path}` or delete it to generate a new token")
    return _check_token(path.read_text(encoding="utf-8"), str(path))


def load_or_create_token() -> str:
    """The server's bearer token: $RL_ADVISOR_TOKEN, else the stored one, else a new one (0600).

    A new token is written to a private temporary file and hard-linked into place, so another
    server starting at the same moment either wins the link or reads the complete winner's token;
    nobody ever reads a half-written file.
    """
    env = os.environ.get(TOKEN_ENV)
    if env is not None and env != "":
        return _check_token(env, f"${TOKEN_ENV}")
    path = token_file()
    if path.exists():
        return _read_token_file(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(secrets.token_urlsafe(32) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another server created it first: use theirs
    finally:
        tmp.unlink(missing_ok=True)
    return _read_token_file(path)


def _host_names(host: str) -> list[str]:
    """Names a client may use in its Host header to reach a server bound to ``host``."""
    names = {host} if host not in WILDCARD else set()
    if host in WILDCARD:
        hostname = socket.gethostname()
        names |= {hostname, socket.getfqdn()}
        try:
            names |= {info[4][0] for info in socket.getaddrinfo(hostname, None)}
        except OSError:
            pass
    names -= LOOPBACK | WILDCARD
    return sorted(n for n in names if n)


def _bracket(name: str) -> str:
    return f"[{name}]" if ":" in name and not name.startswith("[") else name


def security_settings(host: str, port: int, extra_origins: list[str] | None = None,
                      extra_hosts: list[str] | None = None) -> TransportSecuritySettings:
    """Host/Origin allow-lists: loopback names, plus the bound address's names when it is not
    loopback, plus whatever the user added (``--allowed-host`` / ``--allowed-origin``)."""
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    if host not in LOOPBACK:
        for name in _host_names(host):
            hosts.append(f"{_bracket(name)}:{port}")
            origins.append(f"http://{_bracket(name)}:{port}")
    hosts.extend(extra_hosts or [])
    origins.extend(extra_origins or [])
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=origins)


class BearerTokenMiddleware:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``.

    The comparison is constant-time (``hmac.compare_digest``); the answer to a bad request does
    not say whether the header was missing or wrong.
    """

    def __init__(self, app: Any, token: str):
        self.app = app
        self._token = _check_token(token, "the server configuration").encode()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        values = [v for k, v in scope.get("headers") or [] if k.lower() == b"authorization"]
        scheme, _, value = (values[0] if len(values) == 1 else b"").partition(b" ")
        if scheme.lower() != b"bearer" or not hmac.compare_digest(value.strip(), self._token):
            body = b'{"error": "unauthorized", "message": "missing or wrong bearer token"}'
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"www-authenticate", b'Bearer realm="rl-advisor"')]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


class SessionCapMiddleware:
    """ASGI middleware: at most ``per_client`` open MCP sessions per client address.

    A session is counted from the response that hands out its ``mcp-session-id`` until a DELETE
    ends it or it has been idle for ``idle_s`` (the session manager closes it then too). A request
    that would open one more session gets 429 with a JSON error; open sessions are unaffected.
    """

    def __init__(self, app: Any, per_client: int = MAX_SESSIONS_PER_CLIENT,
                 idle_s: float = SESSION_IDLE_TIMEOUT_S):
        self.app, self.per_client, self.idle_s = app, per_client, idle_s
        self._sessions: dict[str, dict[bytes, float]] = {}

    def _live(self, client: str, now: float) -> dict[bytes, float]:
        sessions = self._sessions.setdefault(client, {})
        for sid in [s for s, seen in sessions.items() if now - seen > self.idle_s]:
            del sessions[sid]
        return sessions

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        import time

        now = time.monotonic()
        client = (scope.get("client") or ("?", 0))[0]
        sessions = self._live(client, now)
        sid = next((v for k, v in scope.get("headers") or [] if k.lower() == b"mcp-session-id"), None)
        if sid is not None:
            if scope.get("method") == "DELETE":
                sessions.pop(sid, None)
            elif sid in sessions:
                sessions[sid] = now
            await self.app(scope, receive, send)
            return
        if scope.get("method") == "POST" and len(sessions) >= self.per_client:
            body = (b'{"error": "too_many_sessions", "message": "this client already holds the '
                    b'maximum number of open MCP sessions; close one (DELETE) or reuse it"}')
            await send({"type": "http.response.start", "status": 429,
                        "headers": [(b"content-type", b"application/json"), (b"retry-after", b"60")]})
            await send({"type": "http.response.body", "body": body})
            return

        async def send_and_count(message: dict) -> None:
            if message["type"] == "http.response.start":
                new = next((v for k, v in message.get("headers") or [] if k.lower() == b"mcp-session-id"), None)
                if new is not None:
                    sessions[new] = time.monotonic()
            await send(message)

        await self.app(scope, receive, send_and_count)


def _guarded_h11() -> type:
    """uvicorn's h11 protocol with a header timeout: a connection that has not sent a complete
    request head within HEADER_TIMEOUT_S is closed (uvicorn only times out idle keep-alives)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderTimeoutH11Protocol(H11Protocol):
        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._head_timer = self.loop.call_later(HEADER_TIMEOUT_S, self._head_timeout)

        def _head_timeout(self) -> None:
            if self.cycle is None and not self.transport.is_closing():
                self.transport.close()

        def connection_lost(self, exc: Exception | None) -> None:
            self._head_timer.cancel()
            super().connection_lost(exc)

    return HeaderTimeoutH11Protocol


def build_app(server: Any, host: str = "127.0.0.1", port: int = 8765,
              require_token: bool | None = None, *, allowed_origins: list[str] | None = None,
              allowed_hosts: list[str] | None = None) -> Any:
    """The ASGI app for ``server``; token-protected unless bound to loopback.

    ``require_token=False`` is refused for a non-loopback ``host``.
    """
    if host not in LOOPBACK and require_token is False:
        raise TokenError(f"binding {host!r} (not loopback) without a bearer token is not allowed")
    if require_token is None:
        require_token = host not in LOOPBACK
    security = security_settings(host, port, allowed_origins, allowed_hosts)
    app = server.streamable_http_app(transport_security=security, host=host,
                                     session_idle_timeout=SESSION_IDLE_TIMEOUT_S,
                                     max_sessions=MAX_SESSIONS)
    app = SessionCapMiddleware(app)
    if require_token:
        app = BearerTokenMiddleware(app, load_or_create_token())
    return app


def serve_http(server: Any, host: str = "127.0.0.1", port: int = 8765, *,
               require_token: bool | None = None, allowed_origins: list[str] | None = None,
               allowed_hosts: list[str] | None = None) -> int:
    """Run the server with uvicorn until interrupted. Returns the exit status (2: refused)."""
    import uvicorn

    try:
        app = build_app(server, host, port, require_token, allowed_origins=allowed_origins,
                        allowed_hosts=allowed_hosts)
    except (TokenError, OSError) as exc:
        print(f"rl-advisor-mcp: refusing to start: {exc}", file=sys.stderr)
        return 2
    if isinstance(app, BearerTokenMiddleware):
        where = f"${TOKEN_ENV}" if os.environ.get(TOKEN_ENV) else str(token_file())
        print(f"rl-advisor-mcp: serving http://{_bracket(host)}:{port}/mcp; every request needs "
              f"'Authorization: Bearer <token>' with the token in {where}", file=sys.stderr)
    uvicorn.run(app, host=host, port=port, log_level="warning", http=_guarded_h11(),
                timeout_keep_alive=IDLE_TIMEOUT_S)
    return 0
