"""A log saved with a byte-order mark reads the same as the plain UTF-8 file.

Windows PowerShell 5 writes ``python train.py > log.txt`` as UTF-16 LE with a BOM, and Notepad
saves UTF-8 with one; a user pastes what their shell wrote. Before, a UTF-16 log gave
``no_data`` (every other byte NUL) and a UTF-8 mark hid the first line's key."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from rl_advisor.diagnose_tool import diagnose_path
from rl_advisor.metric_files import encoding_of, iter_byte_chunks, iter_text_chunks, read_points

CASES = Path(__file__).resolve().parent / "cases" / "diagnosis"

VERL = "".join(f"step:{i} - actor/entropy:{0.6 - 0.05 * i:.3f} - actor/grad_norm:{'nan' if i == 6 else 0.4} - "
               f"critic/score/mean:{0.1 + 0.01 * i:.3f} - response_length/mean:{900 + i}\n" for i in range(1, 9))


def _encodings(text: str) -> dict[str, bytes]:
    return {"utf-8": text.encode("utf-8"), "utf-8-sig": codecs.BOM_UTF8 + text.encode("utf-8"),
            "utf-16-le": codecs.BOM_UTF16_LE + text.encode("utf-16-le"),
            "utf-16-be": codecs.BOM_UTF16_BE + text.encode("utf-16-be")}


def _shape(diag) -> list[tuple]:
    return [(f.category, f.severity, [e.model_dump(exclude={"note"}) for e in f.evidence]) for f in diag.findings]


def test_encoding_of_reads_the_mark() -> None:
    assert encoding_of(b"step:1") == "utf-8"
    assert encoding_of(codecs.BOM_UTF8 + b"x") == "utf-8-sig"
    assert encoding_of(codecs.BOM_UTF16_LE + b"x\x00") == "utf-16"
    assert encoding_of(codecs.BOM_UTF16_BE + b"\x00x") == "utf-16"


@pytest.mark.parametrize("chunk", [1, 3, 7, 1 << 20])
def test_chunks_transcode_whatever_the_chunk_size(tmp_path: Path, chunk: int) -> None:
    text = "step:1 - reward:0.5 - note:ünïcödé ✓\n" * 3
    for name, data in _encodings(text).items():
        p = tmp_path / f"{name}.log"
        p.write_bytes(data)
        assert b"".join(iter_byte_chunks(p, chunk)).decode("utf-8") == text, name
        assert "".join(iter_text_chunks(p, chunk)) == text, name


def test_metric_points_are_the_same_in_every_encoding(tmp_path: Path) -> None:
    got = {}
    for name, data in _encodings(VERL).items():
        p = tmp_path / f"{name}.log"
        p.write_bytes(data)
        got[name] = [(pt.step, sorted(pt.values)) for pt in read_points(p)]
    assert len(got["utf-8"]) == 8
    assert all(v == got["utf-8"] for v in got.values()), got


def _case_logs(n: int) -> list[Path]:
    """The first n corpus cases whose raw.txt is a console log (a traceback or metric lines)."""
    out = []
    for d in sorted(CASES.iterdir()):
        y = d / "case.yaml"
        if y.is_file() and "input_kind: log" in y.read_text(encoding="utf-8") and (d / "raw.txt").is_file():
            out.append(d / "raw.txt")
        if len(out) == n:
            break
    return out


def test_diagnosis_is_the_same_in_every_encoding(tmp_path: Path) -> None:
    """Real case logs and a metric log: the same findings, on the same lines, whatever the mark."""
    texts = {"verl-metrics": VERL} | {p.parent.name: p.read_text(encoding="utf-8") for p in _case_logs(6)}
    assert len(texts) == 7
    fired = 0
    for case, text in texts.items():
        shapes = {}
        for name, data in _encodings(text).items():
            p = tmp_path / f"{case}.{name}.log"
            p.write_bytes(data)
            shapes[name] = _shape(diagnose_path(p))
        assert all(s == shapes["utf-8"] for s in shapes.values()), (case, shapes)
        fired += bool(shapes["utf-8"])
    assert fired >= 5  # the comparison is between real findings, not empty lists
