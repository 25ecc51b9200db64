"""Local backend: process groups, exit status files, logs to files, stop, and crashes."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from backends.local import LocalBackend
from backends.protocol import LaunchSpec, RunRecord, RunState, utcnow


def _launch(tmp_path: Path, code: str) -> tuple[LocalBackend, RunRecord]:
    backend = LocalBackend()
    run_dir = tmp_path / "run"
    spec = LaunchSpec(run_id="r1", name="t", framework="trl", run_dir=str(run_dir),
                      working_dir=str(run_dir / "work"), entrypoint=[sys.executable, "-c", code])
    ids = backend.submit(spec)
    now = utcnow()
    rec = RunRecord(run_id="r1", name="t", created_at=now, updated_at=now, backend="local",
                    framework="trl", state=RunState.RUNNING, backend_ids=ids, run_dir=str(run_dir),
                    log_paths={"console": str(run_dir / "console.log")})
    return backend, rec


def _wait(backend: LocalBackend, rec: RunRecord, timeout: float = 30) -> RunState:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = backend.status(rec)
        if st.terminal:
            return st
        time.sleep(0.1)
    raise AssertionError("run did not finish")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


def test_success_logs_go_to_files_not_our_stdout(tmp_path: Path, capfd: pytest.CaptureFixture) -> None:
    backend, rec = _launch(tmp_path, "import sys; print('hello out'); print('hello err', file=sys.stderr)")
    st = _wait(backend, rec)
    assert st.state == RunState.SUCCEEDED and st.exit_code == 0
    logs = backend.logs(rec)
    assert "hello out" in logs and "hello err" in logs
    out, err = capfd.readouterr()
    assert "hello" not in out and "hello" not in err


def test_failure_reports_exit_code_and_the_error_line(tmp_path: Path) -> None:
    backend, rec = _launch(tmp_path, "raise SystemExit('boom: bad config')")
    st = _wait(backend, rec)
    assert st.state == RunState.FAILED and st.exit_code == 1
    assert "exit code 1" in st.message and "boom: bad config" in st.message


def test_stop_kills_the_whole_process_group(tmp_path: Path) -> None:
    code = ("import subprocess, time, pathlib;"
            "p = subprocess.Popen(['sleep', '300']);"
            "pathlib.Path('grandchild.pid').write_text(str(p.pid));"
            "time.sleep(300)")
    backend, rec = _launch(tmp_path, code)
    pidfile = tmp_path / "run" / "work" / "grandchild.pid"
    for _ in range(100):
        if pidfile.exists() and pidfile.read_text():
            break
        time.sleep(0.05)
    grandchild = int(pidfile.read_text())
    assert backend.status(rec).state == RunState.RUNNING
    st = backend.stop(rec, grace_s=5)
    assert st.state == RunState.STOPPED
    time.sleep(0.2)
    assert not _alive(grandchild) and not _alive(rec.backend_ids["pid"])
    assert backend.stop(rec).state != RunState.RUNNING  # idempotent


def test_training_process_killed_mid_run_is_failed_with_its_signal(tmp_path: Path) -> None:
    backend, rec = _launch(tmp_path, "import os, time; open('child.pid','w').write(str(os.getpid())); "
                                     "print('step 1', flush=True); time.sleep(300)")
    pidfile = tmp_path / "run" / "work" / "child.pid"
    for _ in range(100):
        if pidfile.exists() and pidfile.read_text():
            break
        time.sleep(0.05)
    os.kill(int(pidfile.read_text()), signal.SIGKILL)  # what the OOM killer does
    st = _wait(backend, rec)
    assert st.state == RunState.FAILED and "killed by SIGKILL" in st.message


def test_runner_killed_too_is_reported_as_vanished(tmp_path: Path) -> None:
    backend, rec = _launch(tmp_path, "import time; time.sleep(300)")
    time.sleep(0.3)
    os.killpg(rec.backend_ids["pgid"], signal.SIGKILL)
    st = _wait(backend, rec)
    assert st.state == RunState.FAILED and "without an exit status" in st.message


def test_reused_pid_is_not_mistaken_for_the_run(tmp_path: Path) -> None:
    backend, rec = _launch(tmp_path, "import time; time.sleep(300)")
    try:
        forged = rec.model_copy(update={"backend_ids": {**rec.backend_ids, "proc_start": "1"}})
        assert backend.status(forged).state == RunState.FAILED
        assert backend.status(rec).state == RunState.RUNNING
    finally:
        backend.stop(rec, grace_s=2)
