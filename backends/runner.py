"""The supervisor process that the local backend puts in front of every run's entrypoint.

Run as a script (``python backends/runner.py --status-dir DIR -- ARGV...``) in a new session,
so it leads the run's process group. It starts the entrypoint, forwards SIGTERM/SIGINT to it,
and when it ends writes ``exit.json`` (exit code or signal, times) atomically. Because the
runner is a separate session, the exit status is recorded even if the CLI or MCP server that
launched the run has died; only a SIGKILL of the runner itself leaves no ``exit.json``, and the
local backend reports that case explicitly.

The entrypoint's stdout and stderr pass through the runner on their way to ``console.log``:
each line (``\n`` or ``\r``, so tqdm bars too) goes through rl-advisor's one secret scrubber
(``advisor/secrets.py``, standard library only, loaded from beside this file), so a token the
trainer prints never lands in the run folder.

Standard library only otherwise: it must start fast and work from any cwd.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
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


MAX_SEGMENT = 1 << 16  # a line longer than this is scrubbed and written in pieces


def _scrubber():
    """advisor.secrets.scrub_text, imported from the package root beside backends/."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if root not in sys.path:
        sys.path.insert(0, root)
    from advisor.secrets import scrub_text

    return scrub_text


def _copy_scrubbed(src: int, dst, scrub) -> None:
    """Copy the child's output to ``dst`` line by line (``\n`` or ``\r``), each line scrubbed."""
    pending = b""
    while True:
        try:
            chunk = os.read(src, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            break
        pending += chunk
        cut = max(pending.rfind(b"\n"), pending.rfind(b"\r"))
        if cut < 0 and len(pending) < MAX_SEGMENT:
            continue
        head, pending = (pending[:cut + 1], pending[cut + 1:]) if cut >= 0 else (pending, b"")
        _write(dst, head, scrub)
    if pending:
        _write(dst, pending, scrub)
    os.close(src)


def _write(dst, data: bytes, scrub) -> None:
    text = data.decode("utf-8", errors="replace")
    try:
        dst.write(scrub(text).encode("utf-8"))
        dst.flush()
    except OSError:
        pass


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
        scrub = _scrubber()
    except Exception as exc:  # pragma: no cover - advisor/ always ships beside backends/
        print(f"rl-advisor runner: secret scrubber unavailable ({exc}); output is not scrubbed",
              file=sys.stderr, flush=True)
        scrub = str
    read_fd, write_fd = os.pipe()
    try:
        child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=write_fd,
                                 stderr=subprocess.STDOUT)
    except OSError as exc:
        os.close(read_fd)
        os.close(write_fd)
        write_json_atomic(os.path.join(args.status_dir, "exit.json"), {
            "exit_code": 127, "signal": None, "error": f"could not start {command[0]!r}: {exc}",
            "started_at": started, "ended_at": _now()})
        print(f"rl-advisor runner: could not start {command[0]!r}: {exc}", file=sys.stderr)
        return 127
    os.close(write_fd)  # the child (and what it starts) holds the only write end now
    copier = threading.Thread(target=_copy_scrubbed, args=(read_fd, sys.stdout.buffer, scrub),
                              daemon=True)
    copier.start()
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
    copier.join(10)  # the last lines reach console.log before exit.json says the run ended
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
