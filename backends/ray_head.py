"""A throw-away Ray head on 127.0.0.1 for the demo and the tests, stopped by its own PID.

``ray stop`` kills every Ray process of the user on the machine, including other people's
clusters, so it is never used here. The head runs as ``ray start --head --block`` in a new
session; stopping it signals that session's process group only (SIGTERM, then SIGKILL).

Loopback only (research/runtime.md §2, pitfall 1): ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` makes
Ray bind and advertise 127.0.0.1; every port Ray would otherwise take from a fixed default is
picked free, and the temp dir is our own, so several heads can coexist on one machine.

Authentication is set explicitly, never inherited: Ray turns token authentication on by itself
when ``RAY_AUTH_MODE`` is unset and ``~/.ray/auth_token`` exists, so a head that inherited the
user's environment would depend on their home folder (and answer 401 to our readiness check).
``auth="disabled"`` (default, a loopback throw-away head) or ``auth="token"``: a fresh token in
the head's own temp dir (0600), sent by the readiness check; clients get it from
:meth:`LocalRayHead.client_env` or :attr:`LocalRayHead.token`.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

START_TIMEOUT_S = 90.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _group_alive(pgid: int) -> bool:
    """Whether any live (non-zombie) process is left in the process group."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def _ray_executable() -> str:
    candidate = Path(sys.executable).with_name("ray")
    if candidate.exists():
        return str(candidate)
    found = shutil.which("ray")
    if not found:
        raise RuntimeError("the `ray` command is not installed: pip install 'rl-advisor[ray]'")
    return found


class _EarlyExit(RuntimeError):
    """`ray start` exited before the head answered."""


class LocalRayHead:
    """``with LocalRayHead(num_gpus=1) as head: head.address`` -> http://127.0.0.1:PORT."""

    def __init__(self, *, num_cpus: int = 2, num_gpus: int = 0, resources: dict[str, float] | None = None,
                 log_path: str | Path | None = None, auth: str = "disabled"):
        if auth not in ("disabled", "token"):
            raise ValueError(f"auth must be 'disabled' or 'token', not {auth!r}")
        self.num_cpus, self.num_gpus, self.auth = num_cpus, num_gpus, auth
        self.resources = resources or {}
        # Short path: Ray's unix socket paths must stay under ~107 characters.
        self.temp_dir = tempfile.mkdtemp(prefix="rlad-ray-", dir="/tmp" if os.path.isdir("/tmp") else None)
        self.log_path = Path(log_path) if log_path else Path(self.temp_dir) / "head.log"
        self.dashboard_port = free_port()
        self.gcs_port = free_port()
        self.proc: subprocess.Popen | None = None
        self.token: str | None = None
        self.token_path = Path(self.temp_dir) / "auth_token"
        if auth == "token":
            self.token = secrets.token_hex(32)
        self._write_token()

    def _write_token(self) -> None:
        """The head's temp folder with its token file (0600): at set-up, and again before a retried
        start, since ``stop`` after an early exit removes the folder."""
        os.makedirs(self.temp_dir, mode=0o700, exist_ok=True)
        if self.token is None:
            return
        fd = os.open(self.token_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(self.token)

    def client_env(self) -> dict[str, str]:
        """Environment for a client (driver, CLI, backend) of this head: its auth settings."""
        if self.auth == "token":
            return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(self.token_path)}
        return {"RAY_AUTH_MODE": "disabled"}

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.dashboard_port}"

    def env(self) -> dict[str, str]:
        env = {**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}
        for key in ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS",  # they override explicit addresses
                    "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):  # auth is ours, not the user's
            env.pop(key, None)
        env.update(self.client_env())
        return env

    def start(self, attempts: int = 3) -> "LocalRayHead":
        """Start the head; a start that dies early (a port taken between choosing and binding it,
        on a busy machine) is retried with fresh ports."""
        for attempt in range(1, attempts + 1):
            try:
                return self._start_once()
            except _EarlyExit:
                if attempt == attempts:
                    raise
                self.dashboard_port, self.gcs_port = free_port(), free_port()
                self._write_token()  # stop() removed the temp folder and the token in it
        return self

    def _start_once(self) -> "LocalRayHead":
        import json

        worker_lo = free_port()
        cmd = [_ray_executable(), "start", "--head", "--block", f"--num-cpus={self.num_cpus}",
               f"--num-gpus={self.num_gpus}", f"--port={self.gcs_port}",
               "--node-ip-address=127.0.0.1", "--dashboard-host=127.0.0.1",
               f"--dashboard-port={self.dashboard_port}", f"--temp-dir={self.temp_dir}",
               f"--ray-client-server-port={free_port()}", f"--node-manager-port={free_port()}",
               f"--object-manager-port={free_port()}", f"--metrics-export-port={free_port()}",
               f"--dashboard-agent-listen-port={free_port()}",
               f"--dashboard-agent-grpc-port={free_port()}", f"--runtime-env-agent-port={free_port()}",
               f"--min-worker-port={worker_lo}", f"--max-worker-port={min(worker_lo + 200, 65000)}",
               "--disable-usage-stats", "--include-dashboard=true"]
        if self.resources:
            cmd.append(f"--resources={json.dumps(self.resources)}")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         env=self.env(), start_new_session=True)
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        import httpx

        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                code = self.proc.returncode
                tail = self.log_path.read_text(errors="replace")[-2000:]
                self.stop()
                raise _EarlyExit(f"ray start exited with {code}:\n{tail}")
            try:
                r = httpx.get(self.address + "/nodes?view=summary", timeout=2, trust_env=False,
                              headers=self._headers())
                if r.status_code in (401, 403):
                    self.stop()
                    raise RuntimeError(f"the Ray head refused our token (HTTP {r.status_code}); "
                                       f"log: {self.log_path}")
                nodes = (r.json().get("data") or {}).get("summary") or []
                if r.status_code == 200 and nodes and httpx.get(
                        self.address + "/api/version", timeout=2, trust_env=False,
                        headers=self._headers()).status_code == 200:
                    return
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the Ray head did not come up within {START_TIMEOUT_S:.0f} s "
                           f"(log: {self.log_path})")

    def crash(self) -> None:
        """Simulate a head crash (fault tests): SIGKILL the whole head process group."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def stop(self, grace_s: float = 5.0) -> None:
        """SIGTERM the head's process group, SIGKILL what is left after ``grace_s``; wait until
        the group is gone (only this head's processes: its own session)."""
        proc, self.proc = self.proc, None
        if proc is not None:
            pgid = proc.pid
            for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 10.0)):
                try:
                    os.killpg(pgid, sig)
                except ProcessLookupError:
                    break
                deadline = time.monotonic() + wait_s
                while time.monotonic() < deadline and _group_alive(pgid):
                    proc.poll()  # reap the leader
                    time.sleep(0.1)
                if not _group_alive(pgid):
                    break
            proc.poll()
        shutil.rmtree(self.temp_dir, ignore_errors=True)

    def __enter__(self) -> "LocalRayHead":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
