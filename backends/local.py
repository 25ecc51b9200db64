"""Local backend: the rendered entrypoint as a subprocess on this machine.

The entrypoint runs under ``backends/runner.py`` in a **new session** (its own process group),
so that

* it survives the CLI or MCP server that launched it (a SIGKILL of the server does not reach it);
* ``stop`` can signal the whole tree (trainer, dataloader workers, ...) with one ``killpg``;
* the runner writes ``exit.json`` when the entrypoint ends, even if nobody is waiting for it.

Output goes to ``<run_dir>/console.log`` (stdout and stderr interleaved, in order) and never to
the caller's stdout, which in stdio mode is the MCP protocol stream.

Status is re-derived from files and the PID alone: ``exit.json`` present -> succeeded/failed
with the code or signal; runner PID alive (and its start time unchanged, so a reused PID is not
mistaken for the run) -> running; neither -> failed, "vanished without an exit status".
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from backends.follow import tail_lines
from backends.protocol import CONSOLE_LOG, BackendError, LaunchSpec, RunRecord, RunState, RunStatus

RUNNER = Path(__file__).resolve().with_name("runner.py")
STOP_GRACE_S = 10.0

# Popen objects of children started by this process, so they are reaped (no zombies in a
# long-lived MCP server). Purely an optimisation: status never depends on it.
_CHILDREN: dict[int, subprocess.Popen] = {}


def _proc_start_time(pid: int) -> str | None:
    """Kernel start time of ``pid`` (clock ticks since boot) to detect PID reuse; None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read().decode("ascii", "replace")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None if sys.platform.startswith("linux") else _portable_alive(pid)
    # comm (field 2) may contain spaces/parens: split after the last ')'
    rest = raw.rsplit(")", 1)[1].split()
    if rest[0] == "Z":  # zombie: finished, waiting to be reaped
        return None
    return rest[19]


def _portable_alive(pid: int) -> str | None:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return "?"
    return "?"


def _reap() -> None:
    for pid, proc in list(_CHILDREN.items()):
        if proc.poll() is not None:
            _CHILDREN.pop(pid, None)


class LocalBackend:
    """Runs entrypoints as local process groups; see the module docstring."""

    name = "local"

    def submit(self, spec: LaunchSpec) -> dict[str, Any]:
        run_dir = Path(spec.run_dir)
        run_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        Path(spec.working_dir).mkdir(mode=0o700, parents=True, exist_ok=True)
        log_path = run_dir / CONSOLE_LOG
        env = {**os.environ, **spec.env, "PYTHONUNBUFFERED": "1"}
        # The run uses this interpreter (or its framework's own, backends.job_python) and that
        # environment's tools (trl, accelerate, ...).
        python = spec.python or sys.executable
        bindir = str(Path(python).parent)
        env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
        argv = list(spec.entrypoint)
        if argv[0] in ("python", "python3"):
            argv[0] = python
        cmd = [sys.executable, str(RUNNER), "--status-dir", str(run_dir), "--", *argv]
        log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        with open(log_fd, "ab", buffering=0) as log:
            try:
                proc = subprocess.Popen(cmd, cwd=spec.working_dir, env=env, stdin=subprocess.DEVNULL,
                                        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                        close_fds=True)
            except OSError as exc:
                raise BackendError(f"could not start the local runner: {exc}",
                                   reason="spawn_failed") from None
        _CHILDREN[proc.pid] = proc
        start = _proc_start_time(proc.pid)
        return {"pid": proc.pid, "pgid": proc.pid, "proc_start": start, "host": os.uname().nodename}

    # ------------------------------------------------------------------ observation

    def _alive(self, ids: dict[str, Any]) -> bool:
        pid = ids.get("pid")
        if not pid:
            return False
        _reap()
        start = _proc_start_time(int(pid))
        if start is None:
            return False
        recorded = ids.get("proc_start")
        return recorded in (None, "?") or start == "?" or start == recorded

    def status(self, record: RunRecord) -> RunStatus:
        run_dir = Path(record.run_dir)
        exit_file = run_dir / "exit.json"
        _reap()
        if exit_file.is_file():
            try:
                info = json.loads(exit_file.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                return RunStatus(state=RunState.UNKNOWN, message=f"unreadable exit status: {exc}")
            return self._from_exit(info, record)
        ids = dict(record.backend_ids)
        if not ids.get("pid"):
            # The launcher died between spawning and recording the pid: the runner wrote it.
            try:
                ids["pid"] = json.loads((run_dir / "runner.json").read_text())["runner_pid"]
                record = record.model_copy(update={"backend_ids": ids})
            except (OSError, ValueError, KeyError):
                pass
        if self._alive(record.backend_ids):
            return RunStatus(state=RunState.RUNNING, message=f"pid {record.backend_ids.get('pid')}")
        if not record.backend_ids.get("pid"):
            return RunStatus(state=RunState.PENDING, message="not started")
        # A runner in the middle of writing exit.json has just gone: look once more.
        time.sleep(0.05)
        if exit_file.is_file():
            return self.status(record)
        return RunStatus(state=RunState.FAILED, message=(
            f"the run's process group (pid {record.backend_ids.get('pid')}) is gone without an exit "
            f"status: it was killed with SIGKILL (out of memory, or killed by hand) or the machine "
            f"restarted. Last output: {self._last_line(record)}"))

    def _from_exit(self, info: dict[str, Any], record: RunRecord) -> RunStatus:
        code = info.get("exit_code")
        if code == 0:
            return RunStatus(state=RunState.SUCCEEDED, message="exit code 0", exit_code=0)
        if info.get("error"):
            reason = info["error"]
        elif info.get("signal"):
            sig = info["signal"]
            hint = " (out of memory, or killed by hand)" if sig == "SIGKILL" else ""
            reason = f"killed by {sig}{hint}"
        else:
            reason = f"exit code {code}"
        return RunStatus(state=RunState.FAILED, exit_code=code,
                         message=f"{reason}. Last output: {self._last_line(record)}")

    def _last_line(self, record: RunRecord, limit: int = 300) -> str:
        text = tail_lines(Path(record.run_dir) / CONSOLE_LOG, 40)
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        # Prefer the exception line of a traceback, else the last line.
        for ln in reversed(lines):
            if ("Error" in ln or "Exception" in ln) and not ln.startswith("File "):
                return ln[:limit]
        return lines[-1][:limit] if lines else "(no output)"

    def logs(self, record: RunRecord, tail: int = 200) -> str:
        return tail_lines(record.log_paths.get("console") or Path(record.run_dir) / CONSOLE_LOG, tail)

    def metrics(self, record: RunRecord) -> list[Any]:
        from backends.adapters import read_metrics

        return read_metrics(record)

    # ------------------------------------------------------------------ control

    def stop(self, record: RunRecord, grace_s: float = STOP_GRACE_S) -> RunStatus:
        """SIGTERM the process group, then SIGKILL after ``grace_s``. Idempotent."""
        ids = record.backend_ids
        pgid = ids.get("pgid") or ids.get("pid")
        if not pgid or not self._alive(ids):
            return self.status(record)
        try:
            os.killpg(int(pgid), signal.SIGTERM)
        except ProcessLookupError:
            return self.status(record)
        except PermissionError as exc:
            raise BackendError(f"not allowed to signal process group {pgid}: {exc}",
                               reason="permission") from None
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            if not self._alive(ids) and (Path(record.run_dir) / "exit.json").exists():
                break
            time.sleep(0.1)
        else:
            try:
                os.killpg(int(pgid), signal.SIGKILL)
            except ProcessLookupError:
                pass
            for _ in range(50):
                if not self._alive(ids):
                    break
                time.sleep(0.1)
        _reap()
        observed = self.status(record)
        return RunStatus(state=RunState.STOPPED, exit_code=observed.exit_code,
                         message=f"stopped on request ({observed.message})")
