"""Reading metric files from disk: text logs in bounded chunks, TensorBoard event files.

The parsing is pure and lives in ``advisor.metrics``; this module only does the I/O around it:
bytes are decoded incrementally (a multi-byte character split across chunks is kept whole;
undecodable bytes become U+FFFD instead of an exception), so a log of any size is read in one
pass with memory bounded by the chunk size.
"""

from __future__ import annotations

import codecs
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


def read_head(path: Path, limit: int = HEAD_BYTES) -> str:
    with open_input(path) as fh:  # confined to the allowed roots under an MCP call
        return fh.read(limit).decode("utf-8", errors="replace")


def iter_byte_chunks(path: Path, chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    """The file's raw bytes, ``chunk_bytes`` at a time (confined to the allowed roots)."""
    with open_input(path) as fh:
        while True:
            block = fh.read(chunk_bytes)
            if not block:
                break
            yield block


def iter_text_chunks(path: Path, chunk_bytes: int = CHUNK_BYTES) -> Iterator[str]:
    """The file's text, decoded incrementally (errors replaced), ``chunk_bytes`` at a time."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    with open_input(path) as fh:  # confined to the allowed roots under an MCP call
        while True:
            block = fh.read(chunk_bytes)
            if not block:
                break
            yield decoder.decode(block)
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail


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
