"""Ray token authentication (issue 14): the backend finds the token where Ray does, sends it only
where it may, and the throw-away head never depends on the user's home folder.

The integration tests start real Ray heads on 127.0.0.1 (each stopped by its own PID): one with
token authentication on (submit, logs, status, stop must work with the token and fail clearly
without it), and one started while the home folder holds a token file and RAY_AUTH_MODE=token is
exported, which is what made every Ray test fail before.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from backends.protocol import BackendError, LaunchSpec, Resources, RunRecord, RunState, utcnow
from backends.ray import RayBackend
from backends.ray_auth import auth_headers, find_token, may_send_token

JOB = "import time\nfor i in range(600):\n    print('tick', i, flush=True)\n    time.sleep(0.2)\n"


# --------------------------------------------------------------------------- pure


def test_token_sources_in_rays_order(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ray").mkdir(parents=True)
    (home / ".ray" / "auth_token").write_text("from-home\n")
    path = tmp_path / "tok"
    path.write_text("from-path")
    assert find_token({"HOME": str(home)}) == "from-home"
    assert find_token({"HOME": str(home), "RAY_AUTH_TOKEN_PATH": str(path)}) == "from-path"
    assert find_token({"HOME": str(home), "RAY_AUTH_TOKEN_PATH": str(path),
                       "RAY_AUTH_TOKEN": "from-env"}) == "from-env"
    assert find_token({"HOME": str(home), "RAY_AUTH_MODE": "disabled"}) is None
    assert find_token({"HOME": str(tmp_path / "nowhere")}) is None


def test_token_goes_only_to_loopback_or_the_configured_head(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAY_AUTH_TOKEN", "sekrit-token-value")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delenv("RAY_API_SERVER_ADDRESS", raising=False)
    assert auth_headers("http://127.0.0.1:8265") == {"Authorization": "Bearer sekrit-token-value"}
    assert may_send_token("http://[::1]:8265")
    assert auth_headers("http://attacker.example:8265") == {}
    monkeypatch.setenv("RAY_ADDRESS", "http://head.internal:8265")
    assert auth_headers("http://head.internal:8265") == {"Authorization": "Bearer sekrit-token-value"}
    assert auth_headers("http://attacker.example:8265") == {}


# --------------------------------------------------------------------------- real heads


def _spec(tmp_path: Path, run_id: str) -> LaunchSpec:
    work = tmp_path / "work"
    work.mkdir(parents=True, exist_ok=True)
    (work / "job.py").write_text(JOB)
    return LaunchSpec(run_id=run_id, name="t", framework="trl", run_dir=str(tmp_path),
                      working_dir=str(work), entrypoint=[sys.executable, "job.py"],
                      resources=Resources(num_cpus=0.1))


def _record(spec: LaunchSpec, ids: dict) -> RunRecord:
    now = utcnow()
    return RunRecord(run_id=spec.run_id, name="t", created_at=now, updated_at=now, backend="ray",
                     framework="trl", state=RunState.PENDING, backend_ids=ids, run_dir=spec.run_dir)


def _submit_logs_status_stop(be: RayBackend, tmp_path: Path, run_id: str) -> None:
    spec = _spec(tmp_path, run_id)
    be.preflight(spec)
    rec = _record(spec, be.submit(spec))
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and "tick 2" not in be.logs(rec):
        time.sleep(0.3)
    assert "tick 2" in be.logs(rec)
    assert be.status(rec).state == RunState.RUNNING
    assert be.stop(rec).state == RunState.STOPPED


@pytest.mark.integration
def test_token_authenticated_head_submit_logs_status_stop(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ray")
    from backends.ray_head import LocalRayHead

    monkeypatch.setenv("HOME", str(tmp_path / "empty-home"))  # no token there
    for key in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_MODE"):
        monkeypatch.delenv(key, raising=False)
    with LocalRayHead(num_cpus=2, auth="token") as head:
        with pytest.raises(BackendError) as err:  # no token anywhere: a clear refusal
            RayBackend(head.address).version()
        assert err.value.reason == "unauthorized" and "RAY_AUTH_TOKEN" in str(err.value)
        with pytest.raises(BackendError) as wrong:
            RayBackend(head.address, token="0" * 64).version()
        assert wrong.value.reason == "unauthorized"
        for key, value in head.client_env().items():  # the token from Ray's own source: a file
            monkeypatch.setenv(key, value)
        _submit_logs_status_stop(RayBackend(head.address), tmp_path, f"auth-{os.getpid()}")


@pytest.mark.integration
def test_throwaway_head_ignores_a_token_in_home_and_auth_mode_env(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ray")
    from backends.ray_head import LocalRayHead

    home = tmp_path / "home"
    (home / ".ray").mkdir(parents=True)
    (home / ".ray" / "auth_token").write_text("a" * 32)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    with LocalRayHead(num_cpus=2) as head:
        _submit_logs_status_stop(RayBackend(head.address), tmp_path, f"home-{os.getpid()}")


@pytest.mark.integration
def test_token_head_retried_after_an_early_exit_keeps_its_token() -> None:
    """A head whose first ``ray start`` dies early (its GCS port taken between choosing and binding
    it) is retried with fresh ports; the retry must find the token file that the failed attempt's
    clean-up removed (CI, session 4: 'RAY_AUTH_TOKEN_PATH is set but file cannot be opened')."""
    import socket

    from backends.ray_head import LocalRayHead

    head = LocalRayHead(num_cpus=1, auth="token")
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", head.gcs_port))
    blocker.listen(1)
    taken = head.gcs_port
    try:
        head.start()
        assert head.gcs_port != taken, "the first attempt should have failed on the taken port"
        assert head.token_path.read_text(encoding="utf-8") == head.token
        assert oct(head.token_path.stat().st_mode & 0o777) == "0o600"
    finally:
        blocker.close()
        head.stop()
