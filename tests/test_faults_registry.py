"""Registry faults through the tools: the file locked by another process, the disk full (issue 9).

* Locked: a second connection holds ``BEGIN EXCLUSIVE`` (what another rl-advisor process
  mid-write, or a stray ``sqlite3`` shell, does). Reads still work (WAL); writes wait
  ``busy_timeout`` and then fail with a clear error; nothing half-written is left behind and
  the run is followed normally once the lock is gone.
* Disk full: the MCP server runs over stdio in a process whose file-size limit
  (``RLIMIT_FSIZE``) stops any file from growing, which is what a full disk looks like to
  SQLite and to the artifact writer (writes fail with EFBIG instead of ENOSPC, same code paths).
  Tool calls that must write fail with a clear error naming the registry; the existing record
  and the registry file stay intact.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from anyio.from_thread import start_blocking_portal
from mcp import Client, StdioServerParameters

from backends.protocol import RunRecord, RunState, utcnow
from backends.registry import RunRegistry, new_run_id, runs_root
from rl_advisor.mcp_server import build_server
from tests.conftest import example_plan_path

pytestmark = pytest.mark.integration


def finished_run() -> str:
    """A local run recorded RUNNING whose process has ended (exit.json written): the next
    run_status must write SUCCEEDED to the registry."""
    reg = RunRegistry()
    run_id = new_run_id("finished")
    run_dir = runs_root() / run_id
    run_dir.mkdir(parents=True)
    (run_dir / "console.log").write_text("step 1\nstep 2\n")
    (run_dir / "exit.json").write_text(json.dumps({"exit_code": 0, "signal": None}))
    now = utcnow()
    reg.create(RunRecord(run_id=run_id, name="finished", created_at=now, updated_at=now,
                         backend="local", framework="trl", method="grpo", state=RunState.RUNNING,
                         message="started", backend_ids={"pid": 2**22 + 7, "pgid": 2**22 + 7},
                         run_dir=str(run_dir), log_paths={"console": str(run_dir / "console.log")}))
    return run_id


def problems(result: Any) -> list[dict[str, Any]]:
    assert result.is_error, result.structured_content
    text = result.content[0].text
    try:
        return json.loads(text)["problems"]
    except ValueError:
        pytest.fail(f"not a structured error: {text!r}")


def small_plan() -> dict[str, Any]:
    return yaml.safe_load(example_plan_path("dpo-qwen2.5-7b-trl-8xh100.yaml").read_text())


def test_locked_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    run_id = finished_run()
    reg = RunRegistry()
    holder = sqlite3.connect(reg.path, isolation_level=None, timeout=0.1)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with start_blocking_portal() as portal:
            with portal.wrap_async_context_manager(Client(build_server())) as client:
                listed = portal.call(client.call_tool, "list_runs", {})
                assert not listed.is_error, listed.content  # WAL: readers are not blocked
                assert [r["run_id"] for r in listed.structured_content["runs"]] == [run_id]
                status = portal.call(client.call_tool, "run_status", {"run_id": run_id})
                (p,) = problems(status)
                assert p["field"] == "registry" and "locked by another process" in p["message"]
                launch = portal.call(client.call_tool, "launch_run",
                                     {"plan": small_plan(), "backend": "local", "confirm": True})
                (p,) = problems(launch)
                assert p["field"] == "registry" and "locked" in p["message"]
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    # nothing half-written: only the original run, no orphan run folder, no process started
    assert [r.run_id for r in reg.list()] == [run_id]
    assert sorted(p.name for p in runs_root().iterdir()) == [run_id]
    # and the run is followed normally once the lock is gone
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(Client(build_server())) as client:
            status = portal.call(client.call_tool, "run_status", {"run_id": run_id})
    assert status.structured_content["state"] == "succeeded", status.content
    assert [e.state for e in reg.get(run_id).history] == [RunState.RUNNING, RunState.SUCCEEDED]
    assert reg.integrity_check() == "ok"


LIMITED_SERVER = """
import resource, runpy, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
sys.argv = ["rl-advisor-mcp"]
runpy.run_module("rl_advisor.mcp_server", run_name="__main__")
"""


def test_disk_full(tmp_path: Path) -> None:
    home = Path(os.environ["RL_ADVISOR_HOME"])
    run_id = finished_run()
    reg = RunRegistry()
    before = reg.get(run_id)
    reg.close()
    with sqlite3.connect(reg.path) as conn:  # empty WAL: the next write must grow a file
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    env = {**os.environ, "RL_ADVISOR_HOME": str(home), "PYTHONDONTWRITEBYTECODE": "1"}
    params = StdioServerParameters(command=sys.executable, args=["-c", LIMITED_SERVER, "2048"],
                                   env=env, cwd=str(tmp_path))
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(Client(params, read_timeout_seconds=60)) as client:
            status = portal.call(client.call_tool, "run_status", {"run_id": run_id})
            (p,) = problems(status)
            assert p["field"] == "registry" and p["value"] == "registry_disk_full", p
            assert "disk is full" in p["message"]
            launch = portal.call(client.call_tool, "launch_run",
                                 {"plan": small_plan(), "backend": "local", "confirm": True})
            fields = [q["field"] for q in problems(launch)]
            assert fields and fields[0] in ("registry", "artifacts", "run_dir"), fields
            listed = portal.call(client.call_tool, "list_runs", {})  # still serving, still reading
            assert not listed.is_error and len(listed.structured_content["runs"]) == 1
    after = RunRegistry()
    assert after.integrity_check() == "ok"
    kept = after.get(run_id)
    assert kept.state == before.state and kept.history == before.history, "the record was damaged"
    assert [r.run_id for r in after.list()] == [run_id], "a half-written run was left behind"
    assert sorted(p.name for p in runs_root().iterdir()) == [run_id]
    # space is back: the same call now succeeds
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(Client(build_server())) as client:
            status = portal.call(client.call_tool, "run_status", {"run_id": run_id})
    assert status.structured_content["state"] == "succeeded"
