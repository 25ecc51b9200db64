"""Reading metric files from disk: text logs in bounded chunks, TensorBoard event files.

The parsing is pure and lives in ``advisor.metrics``; this module only does the I/O around it:
bytes are decoded incrementally (a multi-byte character split across chunks is kept whole;
undecodable bytes become U+FFFD instead of an exception), so a log of any size is read in one
pass with memory bounded by the chunk size.

A file that starts with a byte-order mark is read in the encoding the mark names: Windows
PowerShell 5's ``python train.py > log.txt`` writes UTF-16 LE with a BOM, and Notepad saves UTF-8
with one. The readers see UTF-8 text either way (a UTF-16 log is transcoded chunk by chunk).
"""

from __future__ import annotations

import codecs
import itertools
from pathlib import Path
from typing import Iterator

from advisor.metrics import MetricPoint, detect_format, make_point, make_reader
from rl_advisor.safe_paths import check_input_path, open_input

CHUNK_BYTES = 1 << 20
HEAD_BYTES = 64 << 10


def is_tensorboard_path(path: Path) -> bool:
    """An events file, or a directory that holds one (at any depth)."""
    if path.is_file():
        return path.name.startswith("events.out.tfevents")
    if path.is_dir():
        return next(path.rglob("events.out.tfevents*"), None) is not None
    return False


BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
"""Byte-order marks and the codec that reads past them (``utf-16`` reads the mark for the byte order)."""


def encoding_of(head: bytes) -> str:
    """The codec a file's first bytes name by their byte-order mark; UTF-8 without one."""
    return next((codec for bom, codec in BOMS if head.startswith(bom)), "utf-8")


def _sniffed_chunks(path: Path, chunk_bytes: int) -> tuple[str, Iterator[bytes]]:
    """(codec named by the byte-order mark, the file's raw blocks): blocks are joined until the
    mark's three bytes are in view, so a tiny chunk size cannot split it."""
    def blocks() -> Iterator[bytes]:
        with open_input(path) as fh:  # confined to the allowed roots under an MCP call
            while True:
                block = fh.read(chunk_bytes)
                if not block:
                    break
                yield block

    it = blocks()
    head = b""
    while len(head) < len(codecs.BOM_UTF8):
        block = next(it, None)
        if block is None:
            break
        head += block
    return encoding_of(head), itertools.chain((head,) if head else (), it)


def _decoded(codec: str, blocks: Iterator[bytes]) -> Iterator[str]:
    """``blocks`` decoded incrementally with ``codec`` (errors replaced; a character split across
    blocks is kept whole)."""
    decoder = codecs.getincrementaldecoder(codec)(errors="replace")
    for block in blocks:
        text = decoder.decode(block)
        if text:
            yield text
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail


def iter_text_chunks(path: Path, chunk_bytes: int = CHUNK_BYTES) -> Iterator[str]:
    """The file's text, ``chunk_bytes`` at a time, in the encoding its byte-order mark names
    (UTF-8 without one)."""
    yield from _decoded(*_sniffed_chunks(path, chunk_bytes))


def iter_byte_chunks(path: Path, chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    """The file's bytes as UTF-8, ``chunk_bytes`` at a time (confined to the allowed roots).

    A file without a byte-order mark is passed through untouched (the fast path: the readers
    decode only the lines that matter); a UTF-8 mark is dropped and a UTF-16 file transcoded."""
    codec, blocks = _sniffed_chunks(path, chunk_bytes)
    if codec == "utf-8":
        yield from blocks
        return
    for text in _decoded(codec, blocks):
        yield text.encode("utf-8")


def read_head(path: Path, limit: int = HEAD_BYTES) -> str:
    """The file's first ``limit`` bytes as text (in the encoding its byte-order mark names)."""
    with open_input(path) as fh:  # confined to the allowed roots under an MCP call
        head = fh.read(limit)
    return head.decode(encoding_of(head), errors="replace")


def read_text_points(path: Path, fmt: str | None = None) -> Iterator[MetricPoint]:
    """Every metric point of a text log (format detected from its head when not given)."""
    reader = make_reader(fmt or detect_format(read_head(path)))
    for chunk in iter_text_chunks(path):
        yield from reader.feed(chunk)
    yield from reader.finish()


def read_tensorboard(path: Path) -> Iterator[MetricPoint]:
    """Scalar summaries of TensorBoard event files, one MetricPoint per (file, step).

    Uses the ``tensorboard`` package's streaming ``EventFileLoader`` (records are read one at a
    time). Tags are the raw keys (``train/reward``; the vocabulary strips ``train/``).
    """
    try:
        from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
        from tensorboard.util import tensor_util
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise RuntimeError("reading TensorBoard logs needs the 'tensorboard' package "
                           "(pip install 'rl-advisor[tensorboard]')") from exc
    files = [path] if path.is_file() else sorted(path.rglob("events.out.tfevents*"))
    for file in files:
        file = check_input_path(file, want="file")  # a symlink out of the allowed roots: refused
        current: dict[str, float] = {}
        step: int | None = None
        for event in EventFileLoader(str(file)).Load():
            if not event.HasField("summary"):
                continue
            if step is not None and event.step != step and current:
                yield make_point(current, step=step, line=None, source="tensorboard")
                current = {}
            step = int(event.step)
            for value in event.summary.value:
                kind = value.WhichOneof("value")
                if kind == "simple_value":
                    current[value.tag] = float(value.simple_value)
                elif kind == "tensor":
                    try:
                        arr = tensor_util.make_ndarray(value.tensor)
                    except (TypeError, ValueError):
                        continue
                    if arr.size == 1 and arr.dtype.kind in "fiub":
                        num = float(arr.reshape(-1)[0])
                        current[value.tag] = num
        if current:
            yield make_point(current, step=step, line=None, source="tensorboard")


def read_points(path: str | Path, fmt: str | None = None) -> Iterator[MetricPoint]:
    """Metric points of a log file, a TensorBoard file/directory, or a run directory."""
    p = Path(path)
    if fmt == "tensorboard" or (fmt is None and is_tensorboard_path(p)):
        yield from read_tensorboard(p)
        return
    if p.is_dir():
        for file in metric_files_in(p):
            yield from read_text_points(file)
        return
    yield from read_text_points(p, fmt)


_METRIC_NAMES = ("metrics.jsonl", "trainer_state.json")
_LOG_SUFFIXES = (".log", ".txt", ".jsonl", ".out", ".err", ".md", ".json", ".tsv")


def metric_files_in(directory: Path, limit: int = 200) -> list[Path]:
    """The readable log files of a run directory: known metric files first, then logs.

    ``trainer_state.json`` copies inside ``checkpoint-*`` folders repeat one history: only the
    newest checkpoint's copy is kept.
    """
    files = [f for f in sorted(directory.rglob("*")) if f.is_file() and not f.name.startswith(".")
             and (f.name in _METRIC_NAMES or f.suffix in _LOG_SUFFIXES)]
    states = [f for f in files if f.name == "trainer_state.json"]
    if len(states) > 1:
        newest = max(states, key=lambda f: f.stat().st_mtime)
        files = [f for f in files if f.name != "trainer_state.json" or f == newest]
    files.sort(key=lambda f: (f.name not in _METRIC_NAMES, str(f)))
    return files[:limit]
