"""Following a growing metrics file by offset: partial lines, rotation, garbage, bounded reads."""

from __future__ import annotations

import json
from pathlib import Path

from advisor.metrics import make_reader
from backends.follow import FileFollower, tail_lines


def _row(step: int, reward: float) -> bytes:
    return (json.dumps({"step": step, "reward": reward, "loss": 0.1 * step}) + "\n").encode()


def test_follow_growing_file_with_partial_last_line(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    fol = FileFollower(path, lambda: make_reader("trl_jsonl"), chunk_bytes=7)  # tiny chunks
    assert fol.poll() == []  # not there yet
    line = _row(2, 0.5)
    path.write_bytes(_row(1, 0.25) + line[:10])  # second line half written
    got = fol.poll()
    assert [p.step for p in got] == [1]
    with path.open("ab") as fh:
        fh.write(line[10:])
    got = fol.poll()
    assert [p.step for p in got] == [2] and got[0].values["reward_mean"] == 0.5
    assert fol.poll() == []  # nothing new, nothing re-read
    assert fol.offset == path.stat().st_size


def test_truncated_file_restarts_and_garbage_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(_row(1, 0.1) + _row(2, 0.2) + _row(3, 0.3))
    fol = FileFollower(path, lambda: make_reader("trl_jsonl"))
    assert len(fol.poll()) == 3
    path.write_bytes(_row(1, 0.9))  # a restarted run reopened the file with "w"
    got = fol.poll()
    assert [p.values["reward_mean"] for p in got] == [0.9] and list(fol.points) == got
    with path.open("ab") as fh:
        fh.write(b"\xff\xfe\x00garbage\x80\n" + "{\"step\": 5, \"reward\": 0.75, \"note\": \"\u00e9\"}\n".encode())
    got = fol.poll()
    assert [p.step for p in got] == [5]


def test_multibyte_character_split_across_reads(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    data = ("{\"step\": 1, \"reward\": 1.0, \"tag\": \"" + "\u00e9" * 50 + "\"}\n").encode()
    path.write_bytes(data)
    fol = FileFollower(path, lambda: make_reader("trl_jsonl"), chunk_bytes=3)
    got = fol.poll()
    assert [p.step for p in got] == [1]


def test_bounded_read_and_kept_points(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_bytes(b"".join(_row(i, i / 100) for i in range(1, 101)))
    fol = FileFollower(path, lambda: make_reader("trl_jsonl"), max_points=10)
    first = fol.poll(max_bytes=200)  # only part of the file per call
    assert 0 < len(first) < 100
    while fol.offset < path.stat().st_size:
        fol.poll(max_bytes=500)
    assert fol.points_seen == 100 and len(fol.points) == 10 and fol.points[-1].step == 100


def test_final_line_without_newline_is_read_on_flush(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_bytes(_row(1, 0.1) + _row(2, 0.2).rstrip(b"\n"))
    fol = FileFollower(path, lambda: make_reader("trl_jsonl"))
    assert [p.step for p in fol.poll()] == [1]
    assert [p.step for p in fol.flush()] == [2]


def test_tail_lines_collapses_progress_bars(tmp_path: Path) -> None:
    path = tmp_path / "console.log"
    path.write_text("a\n 10%|#\r 20%|##\r{'loss': '1'}\nlast\n")
    assert tail_lines(path, 2) == "{'loss': '1'}\nlast"
