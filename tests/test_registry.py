"""Run registry: transactional, append-only history, concurrent writers, locked and full disks."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
from pathlib import Path

import pytest

from backends.protocol import RunRecord, RunState, utcnow
from backends.registry import (RegistryFull, RegistryLocked, RunNotFound, RunRegistry,
                               new_run_id)


def _record(name: str = "t", **kw) -> RunRecord:
    now = utcnow()
    return RunRecord(run_id=new_run_id(name), name=name, created_at=now, updated_at=now,
                     backend=kw.pop("backend", "local"), framework="trl", method="grpo",
                     state=RunState.PENDING, **kw)


def test_create_get_list_and_history(tmp_path: Path) -> None:
    reg = RunRegistry(tmp_path / "r.db")
    rec = reg.create(_record("demo", plan_yaml="name: x\n", backend_ids={"pid": 1},
                             metrics_paths=["/tmp/m.jsonl"], artifacts=[{"name": "a.yaml"}]))
    assert reg.get(rec.run_id).plan_yaml == "name: x\n"
    assert reg.set_status(rec.run_id, RunState.RUNNING, "pid 1", source="local")
    assert not reg.set_status(rec.run_id, RunState.RUNNING, "pid 1", source="local")  # no change
    reg.update_ids(rec.run_id, {"proc_start": "42"})
    assert reg.set_status(rec.run_id, RunState.FAILED, "exit code 3", exit_code=3)
    got = reg.get(rec.run_id)
    assert got.state == RunState.FAILED and got.exit_code == 3
    assert got.backend_ids == {"pid": 1, "proc_start": "42"}
    assert [e.state for e in got.history] == [RunState.PENDING, RunState.RUNNING, RunState.FAILED]
    assert [r.run_id for r in reg.list()] == [rec.run_id]
    assert reg.list(state=RunState.RUNNING) == []


def test_terminal_state_is_final_unless_forced(tmp_path: Path) -> None:
    reg = RunRegistry(tmp_path / "r.db")
    rec = reg.create(_record())
    reg.set_status(rec.run_id, RunState.STOPPED, "stopped on request")
    assert not reg.set_status(rec.run_id, RunState.FAILED, "killed by SIGTERM")
    assert not reg.set_status(rec.run_id, RunState.RUNNING, "late poll")
    assert reg.get(rec.run_id).state == RunState.STOPPED
    assert reg.set_status(rec.run_id, RunState.FAILED, "operator override", force=True)


def test_history_is_append_only(tmp_path: Path) -> None:
    reg = RunRegistry(tmp_path / "r.db")
    rec = reg.create(_record())
    conn = sqlite3.connect(tmp_path / "r.db")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("UPDATE status_history SET state='succeeded'")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("DELETE FROM status_history")
    conn.close()
    assert len(reg.history(rec.run_id)) == 1


def test_unknown_run_names_the_id(tmp_path: Path) -> None:
    reg = RunRegistry(tmp_path / "r.db")
    with pytest.raises(RunNotFound, match="nope"):
        reg.get("nope")


def _hammer(path: str, run_id: str, n: int) -> None:
    reg = RunRegistry(path)
    for i in range(n):
        reg.set_status(run_id, RunState.RUNNING, f"{mp.current_process().name} {i}")


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    reg = RunRegistry(path)
    rec = reg.create(_record())
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_hammer, args=(str(path), rec.run_id, 40), name=f"w{k}")
             for k in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert len(reg.history(rec.run_id)) == 1 + 3 * 40
    assert reg.integrity_check() == "ok"


def test_locked_registry_gives_a_clear_error_and_no_partial_record(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    reg = RunRegistry(path, busy_timeout_ms=200)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    rec = _record()
    with pytest.raises(RegistryLocked, match="locked by another process"):
        reg.create(rec)
    holder.execute("ROLLBACK")
    holder.close()
    assert not reg.exists(rec.run_id)
    reg.create(rec)  # works once the lock is gone
    assert reg.get(rec.run_id).state == RunState.PENDING


def test_full_disk_rolls_back_and_keeps_existing_records(tmp_path: Path) -> None:
    reg = RunRegistry(tmp_path / "r.db")
    kept = reg.create(_record("kept"))
    conn = reg._connect()
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")  # SQLite's own "disk full" (SQLITE_FULL)
    big = _record("big", plan_yaml="x" * 200_000)
    with pytest.raises(RegistryFull, match="disk is full"):
        reg.create(big)
    conn.execute("PRAGMA max_page_count = 1073741823")
    assert not reg.exists(big.run_id)
    assert reg.get(kept.run_id).name == "kept"
    assert reg.integrity_check() == "ok"


def test_registry_uses_wal_in_the_data_dir(tmp_path: Path) -> None:
    reg = RunRegistry()
    assert reg.path.parent == Path(__import__("os").environ["RL_ADVISOR_HOME"])
    mode = reg._connect().execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_secrets_never_reach_a_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "hf_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7"
    monkeypatch.setenv("HF_TOKEN", secret)
    reg = RunRegistry(tmp_path / "r.db")
    rec = reg.create(_record(plan_yaml=f"env:\n  HF_TOKEN: {secret}\n",
                             artifacts=[{"name": "run.sh", "content": f"export HF_TOKEN={secret}\n"}],
                             options={"WANDB_API_KEY": "0123456789abcdef0123456789abcdef01234567"}))
    reg.set_status(rec.run_id, RunState.FAILED, f"Traceback ... token {secret} rejected")
    raw = (tmp_path / "r.db").read_bytes() + b"".join(
        p.read_bytes() for p in tmp_path.glob("r.db-wal"))
    assert secret.encode() not in raw and b"0123456789abcdef0123456789abcdef01234567" not in raw
    assert "<redacted>" in reg.get(rec.run_id).message
