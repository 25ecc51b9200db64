"""Follow a growing file by offset, in bounded chunks, and feed it to an incremental reader.

Metric files grow while a run trains; a tool call must not re-read gigabytes each time nor hold a
whole log in memory. ``FileFollower`` remembers the byte offset it has consumed, reads at most
``chunk_bytes`` at a time, decodes UTF-8 incrementally (a multi-byte character split across two
reads is kept whole; invalid bytes become U+FFFD instead of an exception), and notices when the
file was truncated or replaced (size below the offset, or a new inode) and starts over. Partial
last lines are the reader's business: the readers in ``advisor.metrics`` buffer them until the
newline arrives.
"""

from __future__ import annotations

import codecs
import os
from collections import deque
from pathlib import Path
from typing import Any, Callable, Iterable

DEFAULT_CHUNK = 64 * 1024


class FileFollower:
    """Incrementally read ``path`` and pass text to ``make_reader()``'s ``feed``.

    ``max_points`` bounds the points kept (oldest dropped first); ``points_seen`` counts all.
    """

    def __init__(self, path: str | Path, make_reader: Callable[[], Any], *,
                 chunk_bytes: int = DEFAULT_CHUNK, max_points: int = 100_000):
        self.path = Path(path)
        self._make_reader = make_reader
        self.chunk_bytes = chunk_bytes
        self.points: deque[Any] = deque(maxlen=max_points)
        self.points_seen = 0
        self._reset()

    def _reset(self) -> None:
        self.offset = 0
        self._inode: int | None = None
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.reader = self._make_reader()
        self.points.clear()
        self.points_seen = 0
        self.restarts = getattr(self, "restarts", -1) + 1

    def poll(self, max_bytes: int | None = None) -> list[Any]:
        """Read what was appended since the last call (up to ``max_bytes``); return new points."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return []
        if self._inode is not None and (st.st_ino != self._inode or st.st_size < self.offset):
            self._reset()  # truncated or replaced (e.g. a restarted run reopened it with "w")
        self._inode = st.st_ino
        new: list[Any] = []
        budget = max_bytes if max_bytes is not None else st.st_size - self.offset
        with open(self.path, "rb") as fh:
            fh.seek(self.offset)
            while budget > 0:
                data = fh.read(min(self.chunk_bytes, budget))
                if not data:
                    break
                self.offset += len(data)
                budget -= len(data)
                text = self._decoder.decode(data)
                if text:
                    new.extend(self._feed(text))
        self.points.extend(new)
        self.points_seen += len(new)
        return new

    def _feed(self, text: str) -> Iterable[Any]:
        return self.reader.feed(text) or []

    def flush(self) -> list[Any]:
        """Once the run has ended: let the reader finish, so a last line without its newline
        (a run killed mid-write) is parsed if it is complete, and ignored otherwise."""
        tail = self._decoder.decode(b"", final=True)
        new = list(self._feed(tail)) if tail else []
        finish = getattr(self.reader, "finish", None)
        new += list(finish() or []) if finish else list(self._feed("\n"))
        self.points.extend(new)
        self.points_seen += len(new)
        return new


def tail_lines(path: str | Path, n: int = 200, *, max_bytes: int = 1 << 20) -> str:
    """The last ``n`` lines of a file, reading at most ``max_bytes`` from its end.

    Carriage-return progress bars (tqdm) are collapsed to their last state per line.
    """
    path = Path(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return ""
    with open(path, "rb") as fh:
        start = max(0, size - max_bytes)
        fh.seek(start)
        data = fh.read()
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    if start > 0:
        lines = lines[1:]  # first line is probably cut
    lines = [ln.rsplit("\r", 1)[-1] if "\r" in ln.rstrip("\r") else ln.rstrip("\r") for ln in lines]
    if lines and lines[-1] == "":
        lines = lines[:-1]
    return "\n".join(lines[-n:]) if n > 0 else ""
