"""Truncated and corrupt metric files through diagnose_run and run_metrics (issue 9).

A clean TRL ``metrics.jsonl`` (30 steps) is damaged the ways real files get damaged: a partial
last line (the trainer was killed mid-write), a cut in the middle, bytes in the wrong encoding,
binary garbage and NUL runs (a crashed file system, a log rotated under the reader), a huge line
without a newline, a TensorBoard event file cut short. Through the MCP tools every call must
answer (no crash), keep every complete point that is still there, and say clearly when nothing
could be read; the run's registry record is never touched by reading.
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path
from typing import Any, Callable

import pytest
from anyio.from_thread import start_blocking_portal
from mcp import Client

from backends.protocol import RunRecord, RunState, utcnow
from backends.registry import RunRegistry, new_run_id, runs_root
from rl_advisor.mcp_server import build_server

STEPS = 30


def line(step: int) -> str:
    return json.dumps({"step": step, "reward": 0.1 + 0.02 * step, "kl": 0.001 * step,
                       "entropy": 1.0 - 0.01 * step, "completions/mean_length": 200 + step,
                       "loss": 0.5, "grad_norm": 1.0, "run": "café"})


CLEAN = "".join(line(i) + "\n" for i in range(1, STEPS + 1)).encode()


def garbage_between(data: bytes) -> bytes:
    lines = data.split(b"\n")
    junk = [b"\x00" * 64, random.Random(7).randbytes(256).replace(b"\n", b""), b"\xff\xfe\xfa\xfb",
            b'{"step": "not a number", "reward": [1, 2', b"\x1b[31mTraceback? no\x1b[0m"]
    out = []
    for i, ln in enumerate(lines):
        out.append(ln)
        out.append(junk[i % len(junk)])
    return b"\n".join(out)


CORRUPTIONS: dict[str, tuple[Callable[[bytes], bytes], int]] = {
    # name: (damage, complete points that must survive)
    "partial_last_line": (lambda d: d + line(STEPS + 1).encode()[:25], STEPS),
    "cut_mid_file": (lambda d: d[: d.index(line(21).encode()) + 17], 20),
    "latin1_bytes": (lambda d: d.replace("café".encode(), "café".encode("latin-1")), STEPS),
    "garbage_and_nuls": (garbage_between, STEPS),
    "nul_tail": (lambda d: d + b"\x00" * 100_000, STEPS),
    "huge_line_no_newline": (lambda d: d + b"x" * 8_000_000, STEPS),
    "crlf": (lambda d: d.replace(b"\n", b"\r\n"), STEPS),
}


@pytest.fixture
def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(Client(build_server())) as client:
            yield lambda tool, args: portal.call(client.call_tool, tool, args)


def reward_steps(diagnosis: dict[str, Any]) -> list[int]:
    series = {s["name"]: s for s in diagnosis["series"]}
    return [int(s) for s in series["reward_mean"]["steps"]] if "reward_mean" in series else []


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_diagnose_run_keeps_every_complete_point(session: Any, name: str) -> None:
    damage, survivors = CORRUPTIONS[name]
    Path("metrics.jsonl").write_bytes(damage(CLEAN))
    t0 = time.monotonic()
    result = session("diagnose_run", {"path": "metrics.jsonl", "detail": True})
    assert time.monotonic() - t0 < 60, "a damaged file must not stall the server"
    assert not result.is_error, result.content
    diag = result.structured_content
    assert diag["points_read"] == survivors, (name, diag["points_read"], diag["formats"])
    assert reward_steps(diag) == list(range(1, survivors + 1))


# seeds 1, 5, 30 and 219 once read 'OOM' and 'BAD=' out of random bytes (CI, session 3)
@pytest.mark.parametrize("content", [b"", b"\x00" * 4096, os.urandom(65536),
                                     *(random.Random(seed).randbytes(65536) for seed in (1, 5, 30, 219)),
                                     "reward 0.5 kl 0.1".encode("utf-16")])
def test_unreadable_files_get_a_clear_answer(session: Any, content: bytes) -> None:
    Path("metrics.jsonl").write_bytes(content)
    result = session("diagnose_run", {"path": "metrics.jsonl"})
    if result.is_error:  # a refusal must name the field
        assert json.loads(result.content[0].text)["problems"][0]["field"] == "path"
        return
    diag = result.structured_content
    assert diag["points_read"] == 0
    assert diag["status"] != "problems", "garbage must not invent a diagnosis"
    # the answer says that no metric was read (status itself stays "healthy" when some lines
    # were scanned for log signatures; see the report to H6)
    assert diag["status"] == "no_data" or any("no metric points" in n for n in diag["notes"]), diag


def test_truncated_tensorboard_file(session: Any, tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    logdir = tmp_path / "tb"
    writer = EventFileWriter(str(logdir))
    for step in range(1, 11):
        writer.add_event(Event(wall_time=time.time(), step=step, summary=Summary(value=[
            Summary.Value(tag="train/reward", simple_value=0.1 * step)])))
    writer.close()
    (event_file,) = logdir.glob("events.out.tfevents*")
    data = event_file.read_bytes()
    event_file.write_bytes(data[: len(data) - 7])  # the last record is cut short
    result = session("diagnose_run", {"path": "tb", "detail": True})
    assert not result.is_error, result.content
    steps = reward_steps(result.structured_content)
    assert steps == list(range(1, len(steps) + 1)) and len(steps) >= 9


def test_run_metrics_on_a_damaged_file_leaves_the_record_alone(session: Any) -> None:
    reg = RunRegistry()
    run_id = new_run_id("damaged")
    run_dir = runs_root() / run_id
    run_dir.mkdir(parents=True)
    metrics = run_dir / "metrics.jsonl"
    metrics.write_bytes(garbage_between(CLEAN[: CLEAN.index(line(11).encode())]) + line(11).encode()[:20])
    (run_dir / "exit.json").write_text(json.dumps({"exit_code": None, "signal": "SIGKILL"}))
    now = utcnow()
    reg.create(RunRecord(run_id=run_id, name="damaged", created_at=now, updated_at=now,
                         backend="local", framework="trl", method="grpo", state=RunState.FAILED,
                         message="killed by SIGKILL", backend_ids={"pid": 2**22 + 9},
                         run_dir=str(run_dir), metrics_paths=[str(metrics)],
                         metrics_format="trl_jsonl"))
    before = reg.get(run_id)
    result = session("run_metrics", {"run_id": run_id})
    assert not result.is_error, result.content
    assert result.structured_content["points"] == 10
    assert result.structured_content["last_step"] == 10
    # the writer comes back and finishes the line: the next read picks it up
    with open(metrics, "ab") as fh:
        fh.write(line(11).encode()[20:] + b"\n" + line(12).encode() + b"\n")
    again = session("run_metrics", {"run_id": run_id})
    assert again.structured_content["last_step"] == 12
    diag = session("diagnose_run", {"run_id": run_id})
    assert not diag.is_error and diag.structured_content["points_read"] == 12
    after = reg.get(run_id)
    assert after == before, "reading metrics must not change the run's record"
    assert reg.integrity_check() == "ok"
