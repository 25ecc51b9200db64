"""Which lines of a long log can matter, found with one scan of each chunk.

A training log is mostly lines nothing cares about (progress bars, INFO lines). Handing each of
them to Python costs more than reading the file; the diagnosis must stay within a small factor of a
bare read. So every chunk is scanned once by ONE compiled set of literal alternations, one per
kind of line:

* ``SIGNAL``: a trigger of a log signature or an OOM trigger, or a line starting with ``#``/``>``
  (a description or a quote);
* ``MARKER``: an OOM phase or context marker (frame names; they also occur inside metric keys);
* ``RECORD``: a one-line metric record (veRL ``step:N``, OpenRLHF ``Global step``, dict/JSON lines);
* ``METRIC``: other metric layouts (NeMo-RL ``•`` items, tqdm postfixes, tab/pipe tables, veRL's
  one-metric-per-line block);
* ``NONFINITE``: a NaN/Inf value (a record that sampling must not skip).

Each alternation ends in ``[^\\n]*\\n``, so a matching line is reported once per kind (at its
newline) however many triggers it holds. The scan runs in Hyperscan when the ``hyperscan`` package
is installed (a vectorised multi-pattern matcher); otherwise a Python loop over the lines applies
the same literals (same lines, slower). Literals only: a character class in a many-pattern scan
slows it several fold. The compiled database can be cached between processes (``set_db_cache``).
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from typing import Callable, Iterator

from advisor.diagnosis.tables import load_table, oom_table, signatures

METRIC = 1
SIGNAL = 2
NONFINITE = 4  # the line holds a NaN/Inf value (a metric record that sampling must not skip)
RECORD = 8  # a one-line metric record (veRL step line, OpenRLHF global step, dict/JSON line)
MARKER = 16  # an OOM phase or context marker (frame names; also found inside metric keys)

_RECORD_ANCHORS = (
    b"step:",         # veRL console
    b"global step",   # OpenRLHF
    b"\n{'", b'\n{"', b"\n {'", b'\n {"', b"\n> {'", b'\n> {"',  # Python-dict (TRL) and JSON records
)
_METRIC_ANCHORS = (
    "•".encode(), "◦".encode(), "▪".encode(),  # NeMo-RL items
    b"it/s,", b"s/it,",  # tqdm postfix (OpenRLHF)
    b"\t",            # tab-separated tables
    b"\n|", b"\n> |",  # markdown / plain pipe tables (at a line start)
    b"\n- ", b"\n> - ",  # veRL's one-metric-per-line block
)
"""Literals only: a character class in a many-pattern scan slows it several fold. Formats without a
cheap anchor (NeMo-RL ``Step N/M`` headers, ``key: value`` runs) are read in the prose zone (the
first ``prose_scan_lines`` lines), where every line goes to every reader."""
_PROSE_START = (b"\n#", b"\n>", b"\n #", b"\n\t#")
_NONFINITE_VALUES = tuple(f"{sep}{sign}{val}".encode() for sep in (":", ": ", "=", "(", "'", '"')
                          for sign in ("", "-") for val in ("nan", "inf")) + (b"non-finite",)

def _literal(word: str) -> bytes:
    return re.escape(word.lower().encode())


@lru_cache(maxsize=1)
def signal_words() -> tuple[str, ...]:
    """Lower-case literals that make a line worth the signature scanner, outside prose."""
    words: set[str] = set()
    for row in signatures():
        if row.get("scope") == "prose":
            continue
        words.update(t.lower() for t in row.get("triggers", []))
        words.update(t.lower() for t in row.get("requires_triggers", []))
    oom = oom_table()
    words.update(t.lower() for t in oom["gpu_triggers"])
    words.update({"oom", "out of memory"})
    return tuple(sorted(w for w in words if w))


@lru_cache(maxsize=1)
def marker_words() -> tuple[str, ...]:
    """OOM phase and context markers: frame names read from the lines before an error (a
    separate group because they also occur inside metric keys, e.g. ``timing_s/update_actor``)."""
    words: set[str] = set()
    for row in signatures():
        up = row.get("context_upgrade")
        if up:
            words.update(m.lower() for m in up["markers"])
    for ph in oom_table()["phases"]:
        words.update(m.lower() for m in ph["markers"])
    return tuple(sorted(w for w in words if w))


def prose_scan_lines() -> int:
    return int(load_table("diagnosis_signatures.yaml").get("prose_scan_lines", 2000))


_db_cache: tuple[Callable[[str], bytes | None], Callable[[str, bytes], None]] | None = None


def set_db_cache(load: Callable[[str], bytes | None], save: Callable[[str, bytes], None]) -> None:
    """Let the caller keep the compiled scan between processes (compiling it takes about half a
    second; loading it a few milliseconds). The I/O belongs to the caller: this module stays pure."""
    global _db_cache
    _db_cache = (load, save)


class _Engine:
    """The compiled scan and ``scan(data) -> [(kind, end)]`` over ``b"\\n" + chunk``."""

    def __init__(self) -> None:
        self.groups = [
            (SIGNAL, [_literal(w) for w in signal_words()] + [re.escape(p) for p in _PROSE_START]),
            (METRIC, [re.escape(p) for p in _METRIC_ANCHORS]),
            (NONFINITE, [re.escape(p) for p in _NONFINITE_VALUES]),
            (RECORD, [re.escape(p) for p in _RECORD_ANCHORS]),
            (MARKER, [_literal(w) for w in marker_words()]),
        ]
        self.kind = "python"
        self._hs = None
        try:
            import hyperscan  # optional: vectorised scan

            exprs = [b"(?:" + b"|".join(words) + b")[^\n]*\n" for _, words in self.groups]
            key = hashlib.sha256(b"\0".join(exprs) + str(hyperscan.__version__).encode()).hexdigest()[:24]
            db = None
            if _db_cache is not None:
                try:
                    blob = _db_cache[0](key)
                    db = hyperscan.loadb(blob, hyperscan.HS_MODE_BLOCK) if blob else None
                    if db is not None:
                        db.scratch = hyperscan.Scratch(db)  # a loaded database has none
                except Exception:  # a stale or foreign file: compile afresh
                    db = None
            if db is None:
                db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
                db.compile(expressions=exprs, ids=[kind for kind, _ in self.groups], elements=len(exprs),
                           flags=[hyperscan.HS_FLAG_CASELESS] * len(exprs))
                if _db_cache is not None:
                    try:
                        _db_cache[1](key, hyperscan.dumpb(db))
                    except Exception:  # a read-only cache: keep going without it
                        pass
            self._hs = db
            self.kind = "hyperscan"
        except Exception:  # not installed or not buildable here: the same test, line by line
            self._res = [(kind, re.compile(b"|".join(words).replace(b"\\\n", b"^")).search)
                         for kind, words in self.groups]

    def scan(self, data: bytes) -> dict[int, int]:
        """{end: kinds} of every matching line of ``data`` (which starts with a newline and ends
        with one); ``end`` is the offset just past the line's newline."""
        hits: dict[int, int] = {}
        if self._hs is not None:
            get = hits.get

            def on_match(kind: int, start: int, end: int, flags: int, ctx: object) -> None:
                hits[end] = get(end, 0) | kind

            self._hs.scan(data, match_event_handler=on_match)
            return hits
        pos = 1
        res = self._res
        for line in data[1:].split(b"\n")[:-1]:
            pos += len(line) + 1
            low = line.lower()
            kinds = 0
            for kind, search in res:
                if search(low):
                    kinds |= kind
            if kinds:
                hits[pos] = kinds
        return hits


@lru_cache(maxsize=1)
def engine() -> _Engine:
    return _Engine()


def line_ends(data: bytes) -> list[tuple[int, int]]:
    """(end, kinds) of the lines of ``data`` (which ends with a newline) that can matter, in
    order: ``end`` is the offset of the line's newline; ``kinds`` a METRIC|SIGNAL|NONFINITE set.
    The line starts after the previous newline (``data.rfind(b"\\n", 0, end) + 1``)."""
    hits = engine().scan(b"\n" + data)  # the newline lets "at a line start" match line 1
    return sorted((end - 2, kinds) for end, kinds in hits.items() if end >= 2 and kinds != NONFINITE)


def interesting_lines(data: bytes) -> Iterator[tuple[int, int, int]]:
    """(start, end, kinds) per line of ``line_ends``; ``end`` excludes the newline."""
    rfind = data.rfind
    for end, kinds in line_ends(data):
        yield rfind(b"\n", 0, end) + 1, end, kinds


__all__ = ["MARKER", "METRIC", "NONFINITE", "RECORD", "SIGNAL", "marker_words", "engine", "set_db_cache", "interesting_lines", "line_ends", "prose_scan_lines",
           "signal_words"]
