"""Streamable HTTP for the MCP server: loopback by default, a bearer token for anything else.

Binding 127.0.0.1/::1/localhost needs no token (only local processes can connect; the Host and
Origin headers are still checked against DNS rebinding, as the MCP specification requires for
Streamable HTTP). Binding any other address requires a bearer token, generated on first use and
stored with mode 0600 in the user's data folder; requests without it get 401.
"""

from __future__ import annotations

import hmac
import os
import secrets
from pathlib import Path
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings

from rl_advisor import paths

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
TOKEN_ENV = "RL_ADVISOR_TOKEN"


def token_file() -> Path:
    return paths.data_dir() / "http-token"


def load_or_create_token() -> str:
    """The server's bearer token: $RL_ADVISOR_TOKEN, else the stored one, else a new one (0600)."""
    env = os.environ.get(TOKEN_ENV)
    if env:
        return env
    path = token_file()
    if path.exists():
        return path.read_text(encoding="utf-8").strip()
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(token)
    return token


def security_settings(host: str, port: int, extra_origins: list[str] | None = None) -> TransportSecuritySettings:
    """Host/Origin allow-lists: loopback names, plus the bound address when it is not loopback."""
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    if host not in LOOPBACK:
        hosts.append(f"{host}:{port}")
        origins.append(f"http://{host}:{port}")
    origins.extend(extra_origins or [])
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=origins)


class BearerTokenMiddleware:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``."""

    def __init__(self, app: Any, token: str):
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = dict(scope.get("headers") or []).get(b"authorization", b"")
        scheme, _, value = header.partition(b" ")
        if scheme.lower() != b"bearer" or not hmac.compare_digest(value.strip(), self._token):
            body = b'{"error": "unauthorized", "message": "missing or wrong bearer token"}'
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"www-authenticate", b"Bearer")]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


def build_app(server: Any, host: str = "127.0.0.1", port: int = 8765,
              require_token: bool | None = None) -> Any:
    """The ASGI app for ``server``; token-protected unless bound to loopback."""
    app = server.streamable_http_app(transport_security=security_settings(host, port), host=host)
    if require_token is None:
        require_token = host not in LOOPBACK
    if require_token:
        app = BearerTokenMiddleware(app, load_or_create_token())
    return app


def serve_http(server: Any, host: str = "127.0.0.1", port: int = 8765) -> int:
    import sys

    import uvicorn

    app = build_app(server, host, port)
    if host not in LOOPBACK:
        print(f"rl-advisor-mcp: bound to {host}; clients must send the bearer token in "
              f"{token_file()} (or ${TOKEN_ENV})", file=sys.stderr)
    uvicorn.run(app, host=host, port=port, log_level="warning")
    return 0
