"""The run registry: every launched run, in SQLite (WAL) in the user's data folder.

Why SQLite: the CLI, the MCP server and tests may all touch the registry at once, and any of
them may be killed mid-write. SQLite gives atomic transactions (a run is recorded completely or
not at all), WAL lets readers proceed while one process writes, and the file survives a SIGKILL
of any writer. The status history is append-only (one row per observation) so how a run ended
is never overwritten; ``runs.state`` is the latest row, updated in the same transaction.

Secrets never reach a row: every record and status message passes through
``advisor.secrets.scrub`` on the way in.

Failure modes are reported, not hidden: a registry held locked by another process past
``busy_timeout`` raises ``RegistryLocked``; a full disk raises ``RegistryFull`` and the
transaction is rolled back, so no half-written record is left.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import threading
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from backends.protocol import RunRecord, RunState, StatusEvent, utcnow

SCHEMA_VERSION = 1
DEFAULT_BUSY_TIMEOUT_MS = 5000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    backend TEXT NOT NULL,
    framework TEXT NOT NULL,
    method TEXT NOT NULL DEFAULT '',
    state TEXT NOT NULL,
    message TEXT NOT NULL DEFAULT '',
    exit_code INTEGER,
    backend_ids TEXT NOT NULL DEFAULT '{}',
    plan_yaml TEXT NOT NULL DEFAULT '',
    artifacts TEXT NOT NULL DEFAULT '[]',
    run_dir TEXT NOT NULL DEFAULT '',
    log_paths TEXT NOT NULL DEFAULT '{}',
    metrics_paths TEXT NOT NULL DEFAULT '[]',
    metrics_format TEXT,
    options TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS status_history (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    at TEXT NOT NULL,
    state TEXT NOT NULL,
    message TEXT NOT NULL DEFAULT '',
    source TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS status_history_run ON status_history(run_id, id);
CREATE INDEX IF NOT EXISTS runs_created ON runs(created_at);
CREATE TRIGGER IF NOT EXISTS status_history_no_update BEFORE UPDATE ON status_history
BEGIN SELECT RAISE(ABORT, 'status_history is append-only'); END;
CREATE TRIGGER IF NOT EXISTS status_history_no_delete BEFORE DELETE ON status_history
BEGIN SELECT RAISE(ABORT, 'status_history is append-only'); END;
"""

_JSON_COLUMNS = ("backend_ids", "artifacts", "log_paths", "metrics_paths", "options")


class RegistryError(RuntimeError):
    """The registry could not complete an operation; the message says why and what to do."""

    reason = "registry_error"


class RegistryLocked(RegistryError):
    reason = "registry_locked"


class RegistryFull(RegistryError):
    reason = "registry_disk_full"


class RunNotFound(RegistryError, KeyError):
    reason = "run_not_found"

    def __str__(self) -> str:  # KeyError would quote the message
        return self.args[0] if self.args else "run not found"


def new_run_id(name: str = "run") -> str:
    """Sortable, unique, readable: ``20261130-095501-grpo-demo-3f9a1c``."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    slug = "".join(c if c.isascii() and c.isalnum() else "-" for c in name.lower()).strip("-")[:32] or "run"
    while "--" in slug:
        slug = slug.replace("--", "-")
    return f"{stamp}-{slug}-{secrets.token_hex(3)}"


def default_path() -> Path:
    from backends.data_folder import data_dir

    return data_dir() / "registry.sqlite3"


def runs_root() -> Path:
    """Where local run folders live (``<data_dir>/runs/<run_id>``)."""
    from backends.data_folder import data_dir

    root = data_dir() / "runs"
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(root, 0o700)  # run folders hold logs and configs: private to the user
    return root


class RunRegistry:
    """Transactional store of runs. Safe to use from several processes and threads.

    Each thread gets its own connection (sqlite3 connections must not be shared across threads
    without care); every write is one ``BEGIN IMMEDIATE`` transaction.
    """

    def __init__(self, path: str | Path | None = None, *, busy_timeout_ms: int | None = None):
        self.path = Path(path) if path is not None else default_path()
        if busy_timeout_ms is None:  # RL_ADVISOR_REGISTRY_BUSY_MS overrides the 5 s default
            try:
                busy_timeout_ms = int(os.environ.get("RL_ADVISOR_REGISTRY_BUSY_MS", DEFAULT_BUSY_TIMEOUT_MS))
            except ValueError:
                busy_timeout_ms = DEFAULT_BUSY_TIMEOUT_MS
        self.busy_timeout_ms = max(0, busy_timeout_ms)
        self._local = threading.local()
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._ensure_schema()
        self._make_private()

    def _make_private(self) -> None:
        """The registry (and SQLite's -wal/-shm files, which copy its mode) is 0600."""
        for suffix in ("", "-wal", "-shm"):
            try:
                os.chmod(f"{self.path}{suffix}", 0o600)
            except OSError:
                pass

    # ------------------------------------------------------------------ connections

    def _connect(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(str(self.path), timeout=self.busy_timeout_ms / 1000,
                                       isolation_level=None, check_same_thread=True)
                conn.row_factory = sqlite3.Row
                conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
                self._set_wal(conn)
                conn.execute("PRAGMA synchronous = NORMAL")
                conn.execute("PRAGMA foreign_keys = ON")
            except sqlite3.Error as exc:
                raise self._translate(exc, "open") from None
            self._local.conn = conn
        return conn

    def _set_wal(self, conn: sqlite3.Connection) -> None:
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise RegistryError(f"the run registry {self.path} could not switch to WAL mode "
                                f"(got {mode!r}); is it on a network file system?")

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _translate(self, exc: sqlite3.Error, action: str) -> RegistryError:
        text = str(exc).lower()
        if "locked" in text or "busy" in text:
            return RegistryLocked(
                f"the run registry {self.path} is locked by another process (waited "
                f"{self.busy_timeout_ms} ms to {action}); retry, or find the process holding it "
                f"(e.g. `fuser {self.path}`)")
        if "full" in text or "no space" in text or isinstance(exc, sqlite3.OperationalError) and \
                "disk i/o" in text:
            return RegistryFull(
                f"the run registry {self.path} could not {action}: the disk is full or the file "
                f"system refused the write ({exc}); nothing was recorded, free space and retry")
        return RegistryError(f"the run registry {self.path} could not {action}: {exc}")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; rolled back on any error (no partial record)."""
        conn = self._connect()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise self._translate(exc, "start a write") from None
        try:
            yield conn
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            _rollback(conn)
            raise self._translate(exc, "write") from None
        except BaseException:
            _rollback(conn)
            raise

    def _read(self, sql: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        try:
            return self._connect().execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise self._translate(exc, "read") from None

    def _ensure_schema(self) -> None:
        try:  # the common case: the schema exists; a read needs no write lock
            row = self._connect().execute(
                "SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is not None and int(row[0]) == SCHEMA_VERSION:
                return
        except sqlite3.OperationalError as exc:
            if "no such table" not in str(exc).lower():
                raise self._translate(exc, "open") from None
        with self._write() as conn:
            for statement in _split_sql(_SCHEMA):
                conn.execute(statement)
            row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is None:
                conn.execute("INSERT INTO meta(key, value) VALUES('schema_version', ?)",
                             (str(SCHEMA_VERSION),))
            elif int(row[0]) > SCHEMA_VERSION:
                raise RegistryError(f"the run registry {self.path} was written by a newer "
                                    f"rl-advisor (schema {row[0]} > {SCHEMA_VERSION}); upgrade")

    # ------------------------------------------------------------------ writes

    def create(self, record: RunRecord, *, source: str = "launch") -> RunRecord:
        """Insert a run and its first status row in one transaction."""
        data = _scrub(record.model_dump(mode="json", exclude={"history"}))
        cols = list(data)
        values = [json.dumps(data[c], sort_keys=True) if c in _JSON_COLUMNS else data[c] for c in cols]
        with self._write() as conn:
            conn.execute(f"INSERT INTO runs({', '.join(cols)}) VALUES({', '.join('?' * len(cols))})",
                         values)
            conn.execute("INSERT INTO status_history(run_id, at, state, message, source) "
                         "VALUES(?, ?, ?, ?, ?)",
                         (record.run_id, record.updated_at, record.state.value, data["message"], source))
        return self.get(record.run_id)

    def update_ids(self, run_id: str, backend_ids: dict[str, Any]) -> None:
        """Merge backend ids learned after submission (pid, submission id, object names)."""
        with self._write() as conn:
            row = conn.execute("SELECT backend_ids FROM runs WHERE run_id=?", (run_id,)).fetchone()
            if row is None:
                raise RunNotFound(f"no run with id {run_id!r}")
            merged = {**json.loads(row[0]), **backend_ids}
            conn.execute("UPDATE runs SET backend_ids=?, updated_at=? WHERE run_id=?",
                         (json.dumps(merged, sort_keys=True), utcnow(), run_id))

    def set_status(self, run_id: str, state: RunState, message: str = "", *,
                   exit_code: int | None = None, source: str = "", force: bool = False) -> bool:
        """Record an observed state. A history row is appended only when state or message
        changed; a terminal state is final (a late poll cannot resurrect a finished run, and a
        user's stop is not relabelled as a failure when the killed process exits) unless ``force``. Returns whether anything was written."""
        with self._write() as conn:
            row = conn.execute("SELECT state, message, exit_code FROM runs WHERE run_id=?",
                               (run_id,)).fetchone()
            if row is None:
                raise RunNotFound(f"no run with id {run_id!r}")
            message = _scrub(message)
            current = RunState(row["state"])
            if current.terminal and not force:
                return False
            if current == state and row["message"] == message and \
                    (exit_code is None or exit_code == row["exit_code"]):
                return False
            now = utcnow()
            conn.execute("UPDATE runs SET state=?, message=?, exit_code=COALESCE(?, exit_code), "
                         "updated_at=? WHERE run_id=?",
                         (state.value, message, exit_code, now, run_id))
            conn.execute("INSERT INTO status_history(run_id, at, state, message, source) "
                         "VALUES(?, ?, ?, ?, ?)", (run_id, now, state.value, message, source))
        return True

    # ------------------------------------------------------------------ reads

    def get(self, run_id: str) -> RunRecord:
        rows = self._read("SELECT * FROM runs WHERE run_id=?", (run_id,))
        if not rows:
            raise RunNotFound(f"no run with id {run_id!r} in the registry {self.path}; "
                              f"list_runs shows the known ids")
        return self._record(rows[0], with_history=True)

    def exists(self, run_id: str) -> bool:
        return bool(self._read("SELECT 1 FROM runs WHERE run_id=?", (run_id,)))

    def history(self, run_id: str) -> list[StatusEvent]:
        rows = self._read("SELECT at, state, message, source FROM status_history WHERE run_id=? "
                          "ORDER BY id", (run_id,))
        return [StatusEvent(at=r["at"], state=RunState(r["state"]), message=r["message"],
                            source=r["source"]) for r in rows]

    def list(self, *, limit: int = 50, state: RunState | None = None,
             backend: str | None = None) -> list[RunRecord]:
        sql, args = "SELECT * FROM runs", []
        where = []
        if state is not None:
            where.append("state=?")
            args.append(state.value)
        if backend is not None:
            where.append("backend=?")
            args.append(backend)
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created_at DESC, run_id DESC LIMIT ?"
        args.append(int(limit))
        return [self._record(r, with_history=False) for r in self._read(sql, tuple(args))]

    def integrity_check(self) -> str:
        """``ok`` when SQLite finds the file intact (used by the fault tests)."""
        return str(self._read("PRAGMA integrity_check")[0][0])

    def _record(self, row: sqlite3.Row, *, with_history: bool) -> RunRecord:
        data = dict(row)
        for col in _JSON_COLUMNS:
            data[col] = json.loads(data[col]) if data.get(col) else ({} if col in
                                                                      ("backend_ids", "log_paths", "options") else [])
        if with_history:
            data["history"] = self.history(data["run_id"])
        return RunRecord.model_validate(data)


def _scrub(obj: Any) -> Any:
    """Secrets (token values, secret-named env entries) never reach a registry row."""
    from advisor.secrets import scrub

    return scrub(obj)


def _rollback(conn: sqlite3.Connection) -> None:
    try:
        conn.execute("ROLLBACK")
    except sqlite3.Error:
        pass


def _split_sql(script: str) -> list[str]:
    """Split the schema into statements (triggers contain ';' inside BEGIN...END)."""
    out, buf = [], []
    for line in script.strip().splitlines():
        buf.append(line)
        text = "\n".join(buf).strip()
        if text.endswith(";") and (not text.upper().startswith("CREATE TRIGGER") or text.upper().endswith("END;")):
            out.append(text)
            buf = []
    if buf and "\n".join(buf).strip():
        out.append("\n".join(buf).strip())
    return out
