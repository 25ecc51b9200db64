"""Ray token authentication for the Ray backend's HTTP calls (Jobs API, dashboard).

Recent Ray turns token authentication on when a token exists (``RAY_AUTH_MODE=token``, or
``RAY_AUTH_MODE`` unset and a token in ``~/.ray/auth_token`` when ``ray start`` runs); the
dashboard then answers 401 to any request without ``Authorization: Bearer <token>``
(Ray security guide, https://docs.ray.io/en/latest/ray-security/token-auth.html). The token is
read from Ray's own sources, in Ray's order, without importing ``ray``:

1. ``$RAY_AUTH_TOKEN``;
2. the file named by ``$RAY_AUTH_TOKEN_PATH``;
3. ``~/.ray/auth_token``.

``RAY_AUTH_MODE=disabled`` means no token is sent. The token is a credential for the whole
cluster, so it is only sent to a head on this machine (loopback) or to the head the user
configured for Ray itself (``$RAY_ADDRESS`` / ``$RAY_API_SERVER_ADDRESS``): an address that
arrived in a tool call from an MCP client never receives the user's token unless it is one of
those.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
MAX_TOKEN_BYTES = 4096


def _read(path: Path) -> str | None:
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_TOKEN_BYTES + 1)
    except OSError:
        return None
    token = data.decode("utf-8", errors="replace").strip()
    return token if token and len(data) <= MAX_TOKEN_BYTES else None


def find_token(env: dict[str, str] | None = None) -> str | None:
    """The Ray token from Ray's own sources, or None (also when RAY_AUTH_MODE=disabled)."""
    env = dict(os.environ) if env is None else env
    if env.get("RAY_AUTH_MODE", "").strip().lower() == "disabled":
        return None
    direct = env.get("RAY_AUTH_TOKEN", "").strip()
    if direct:
        return direct
    if env.get("RAY_AUTH_TOKEN_PATH"):
        return _read(Path(os.path.expanduser(env["RAY_AUTH_TOKEN_PATH"])))
    home = env.get("HOME") or os.path.expanduser("~")
    return _read(Path(home) / ".ray" / "auth_token")


def _host(address: str) -> str:
    address = address.strip()
    if "://" not in address:
        address = "http://" + address
    return (urlparse(address).hostname or "").lower()


def may_send_token(address: str, env: dict[str, str] | None = None) -> bool:
    """Loopback heads, and the head the user configured for Ray, may receive the token."""
    env = dict(os.environ) if env is None else env
    host = _host(address)
    if host in LOOPBACK:
        return True
    configured = {_host(env[k]) for k in ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS") if env.get(k)}
    return bool(host) and host in configured


def auth_headers(address: str, token: str | None = None) -> dict[str, str]:
    """``Authorization`` for a request to ``address``: an explicit token, else Ray's own
    sources when the address may receive it; empty when there is none."""
    if token is None and may_send_token(address):
        token = find_token()
    return {"Authorization": f"Bearer {token}"} if token else {}


__all__ = ["find_token", "may_send_token", "auth_headers"]
