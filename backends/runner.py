"""The supervisor process that the local backend puts in front of every run's entrypoint.

Run as a script (``python backends/runner.py --status-dir DIR -- ARGV...``) in a new session,
so it leads the run's process group. It starts the entrypoint, forwards SIGTERM/SIGINT to it,
and when it ends writes ``exit.json`` (exit code or signal, times) atomically. Because the
runner is a separate session, the exit status is recorded even if the CLI or MCP server that
launched the run has died; only a SIGKILL of the runner itself leaves no ``exit.json``, and the
local backend reports that case explicitly.

Standard library only, no rl-advisor imports: it must start fast and work from any cwd.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def write_json_atomic(path: str, data: dict) -> None:
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _group_members() -> list[int]:
    """Other live processes of our process group (Linux /proc; empty elsewhere)."""
    me, pgid = os.getpid(), os.getpgrp()
    out = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for name in entries:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                fields = fh.read().decode("ascii", "replace").rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(name))
    return out


def _reap_group(grace_s: float = 3.0) -> int:
    """The entrypoint has exited: end whatever it left behind in the run's process group
    (e.g. the trainer under a launcher that was killed), so no orphan keeps training or
    writing metrics after the run is reported finished. SIGTERM, then SIGKILL."""
    if os.getpgrp() != os.getpid():
        return 0  # not the group leader (not started by the local backend): leave others alone
    members = _group_members()
    found = len(members)
    if not members:
        return 0
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in members:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            members = _group_members()
            if not members:
                return found
            time.sleep(0.1)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--status-dir", required=True)
    parser.add_argument("argv", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.argv[1:] if args.argv and args.argv[0] == "--" else args.argv
    if not command:
        parser.error("no command after --")
    os.umask(0o077)  # the run's files (status, outputs, checkpoints) are private to the user
    started = _now()
    try:
        child = subprocess.Popen(command, stdin=subprocess.DEVNULL)
    except OSError as exc:
        write_json_atomic(os.path.join(args.status_dir, "exit.json"), {
            "exit_code": 127, "signal": None, "error": f"could not start {command[0]!r}: {exc}",
            "started_at": started, "ended_at": _now()})
        print(f"rl-advisor runner: could not start {command[0]!r}: {exc}", file=sys.stderr)
        return 127
    write_json_atomic(os.path.join(args.status_dir, "runner.json"), {
        "runner_pid": os.getpid(), "child_pid": child.pid, "started_at": started})

    received: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        received.append(signum)
        try:
            child.send_signal(signum)
        except ProcessLookupError:
            pass

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)

    while True:
        try:
            rc = child.wait()
            break
        except InterruptedError:  # pragma: no cover - PEP 475 retries, kept for clarity
            time.sleep(0.05)
    leftovers = _reap_group()
    sig_name = None
    if rc < 0:
        try:
            sig_name = signal.Signals(-rc).name
        except ValueError:
            sig_name = f"signal {-rc}"
    write_json_atomic(os.path.join(args.status_dir, "exit.json"), {
        "exit_code": rc, "signal": sig_name, "started_at": started, "ended_at": _now(),
        "signals_received": [signal.Signals(s).name for s in received],
        "leftover_processes_killed": leftovers})
    return rc if rc >= 0 else 128 - rc


if __name__ == "__main__":
    raise SystemExit(main())
