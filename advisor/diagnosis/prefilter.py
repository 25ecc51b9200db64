"""Which lines of a long log can matter, found with one scan of each chunk.

A training log is mostly lines nothing cares about (progress bars, INFO lines). Handing each of
them to Python costs more than reading the file; the diagnosis must stay within a small factor of a
bare read. So every chunk is scanned once by ONE compiled set of literal alternations, one per
kind of line:

* ``SIGNAL``: a trigger of a log signature or an OOM trigger, or a line starting with ``#``/``>``
  (a description or a quote);
* ``MARKER``: an OOM phase or context marker (frame names; they also occur inside metric keys).
  Markers matter only as context of an error line (the frames before an OOM, weight-sync frames
  next to an NCCL timeout), so they are not part of the scan of every line: a second, small scan
  reads only the lines around each ``SIGNAL`` line (``context_lines()`` before and after it,
  ``marker_ends``). Every line pays for the triggers; only lines near an error pay for the markers;
* ``RECORD``: a one-line metric record (veRL ``step:N``, OpenRLHF ``Global step``, dict/JSON lines);
* ``METRIC``: other metric layouts (NeMo-RL ``•`` items, tqdm postfixes, tab/pipe tables, veRL's
  one-metric-per-line block);
* ``NONFINITE``: a NaN/Inf value (a record that sampling must not skip).

A matching line is reported once per kind, at its newline, however many triggers it holds: the
``TAILED`` alternations end in ``[^\\n]*\\n`` (Hyperscan reports each line once), the others are
bare literals whose line the match callback finds. The scan runs in Hyperscan when the ``hyperscan`` package
is installed (a vectorised multi-pattern matcher); otherwise a Python loop over the lines applies
the same literals (same lines, slower). Literals only: a character class in a many-pattern scan
slows it several fold. The compiled database can be cached between processes (``set_db_cache``).
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from itertools import islice
from operator import ge
from typing import Callable, Iterator

from advisor.diagnosis.tables import load_table, oom_table, signatures

METRIC = 1
SIGNAL = 2
NONFINITE = 4  # the line holds a NaN/Inf value (a metric record that sampling must not skip)
RECORD = 8  # a one-line metric record (veRL step line, OpenRLHF global step, dict/JSON line)
MARKER = 16  # an OOM phase or context marker (frame names; also found inside metric keys)
TAILED = RECORD | NONFINITE | MARKER
"""Kinds whose Hyperscan expression runs on to the line's newline (``[^\\n]*\\n``), reported once per
line: the anchors that occur several times on each of many lines (``step:``, ``global_step:`` and
``timing_s/step:`` on every veRL step line; a NaN in every value of a diverged run's records; frame
names in metric keys). The other kinds are bare literals, their line's newline found by
``bytes.find`` in the match callback: the tail made Hyperscan scan the 1M-line benchmark log 2-3x
slower (0.39 s against 0.12 s CPU for the whole database, the ~300 trigger literals most), while
their lines are rare and, when they occur, read in full anyway (so a callback per occurrence costs
little beside reading the line). NONFINITE is tailed though cheap as literals: a log whose records
hold twenty NaNs each took 20% longer with a callback per NaN (benchmarks/diagnose_scale.py's log:
about 0.01 s more with the tail)."""

_RECORD_ANCHORS = (
    b"step:",         # veRL console
    b"global step",   # OpenRLHF
    b"\n{'", b'\n{"', b"\n {'", b'\n {"', b"\n> {'", b'\n> {"',  # Python-dict (TRL) and JSON records
    b"]{'", b']{"', b"] {'", b'] {"', b"\r{'", b'\r{"',  # the same after a tqdm bar or a carriage return
    # the same behind a runner prefix (advisor/metrics/line_prefix.py): Ray '(TaskRunner pid=N) ', torchrun
    # '[rank0]: ', kubectl's '...Z ', Python logging's '- INFO - '
    b") {'", b') {"', b"]: {'", b']: {"', b"z {'", b'z {"', b"- {'", b'- {"',
)
_METRIC_ANCHORS = (
    "•".encode(), "◦".encode(), "▪".encode(),  # NeMo-RL items
    b"it/s,", b"s/it,",  # tqdm postfix (OpenRLHF)
    b"\t",            # tab-separated tables
    b"\n|", b"\n> |",  # markdown / plain pipe tables (at a line start)
    b"\n- ", b"\n> - ",  # veRL's one-metric-per-line block
    b"= step ", b"training results",  # NeMo-RL's '===== Step N/M =====' header and its results section
)
"""Literals only: a character class in a many-pattern scan slows it several fold. Formats without a
cheap anchor (``key: value`` runs without a ``step:``, whitespace tables, tables behind a runner
prefix) are read in the prose zone (the first ``prose_scan_lines`` lines), where every line goes to
every reader (tests/test_diagnosis_format_invariance.py checks which formats are read past it)."""
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
    words.update(t.lower() for t in oom["prose_triggers"])
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


def context_lines() -> tuple[int, int]:
    """(before, after): how many lines around an error line can hold its context markers — the
    OOM look-back and the widest context-upgrade window of the signature table."""
    windows = [int(row["context_upgrade"].get("window", 40)) for row in signatures() if row.get("context_upgrade")]
    before = max([int(oom_table().get("lookback_lines", 80))] + windows)
    return before, max(windows or [0])


def prose_scan_lines() -> int:
    return int(load_table("diagnosis_signatures.yaml").get("prose_scan_lines", 2000))


def prose_scan_chars() -> int:
    """The prose zone's other bound, in characters (diagnosis_signatures.yaml prose_scan_chars)."""
    return int(load_table("diagnosis_signatures.yaml").get("prose_scan_chars", 65536))


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
        ]
        self.marker_groups = [(MARKER, [_literal(w) for w in marker_words()])]
        self.kind = "python"
        self._hs = self._hs_markers = None
        try:
            import hyperscan  # optional: vectorised scan

            self._hs = _hs_database(hyperscan, self.groups)
            self._hs_markers = _hs_database(hyperscan, self.marker_groups)
            self.kind = "hyperscan"
        except Exception:  # not installed or not buildable here: the same test, line by line
            self._hs = self._hs_markers = None
            self._res = [(kind, re.compile(b"|".join(words).replace(b"\\\n", b"^")).search)
                         for kind, words in self.groups]
            self._res_markers = [(kind, re.compile(b"|".join(words)).search) for kind, words in self.marker_groups]

    def scan(self, buf: bytes | bytearray, lo: int, hi: int, markers: bool = False,
             records: list[int] | None = None) -> dict[int, int]:
        """{offset: kinds} of every matching line of ``buf[lo:hi]`` (``lo`` a line start with a
        newline before it, or 0; ``hi`` after a newline), in increasing order; ``offset`` is where
        the line's newline is in ``buf``. A last line without a newline is not reported.
        ``markers``: scan for the context markers instead of the line kinds. ``records``: a list
        that receives (in order) the lines of kind RECORD alone, left out of the dict (most lines a
        long log's scan reports: a list append each instead of a dict update)."""
        hits: dict[int, int] = {}
        db = self._hs_markers if markers else self._hs
        # the range behind a newline, so "at a line start" matches its first line: read in place
        data = memoryview(buf)[lo - 1:hi] if lo > 0 else b"\n" + buf[:hi]
        shift = lo - 1  # buf offset of data[0]
        if db is None:
            hits = self._scan_python(data, shift, markers)
            if records is not None:
                records.extend(end for end, kinds in hits.items() if kinds == RECORD)
                hits = {end: kinds for end, kinds in hits.items() if kinds != RECORD}
            return hits
        get, find = hits.get, buf.find
        tailed = TAILED
        rec = RECORD if records is not None else -1
        rec_append = records.append if records is not None else None
        cur_from, cur = 0, -1  # the newline found for the last literal match, from where

        def on_match(kind: int, start: int, end: int, flags: int, ctx: object) -> None:
            nonlocal cur_from, cur
            e = end + shift
            if kind == rec:
                rec_append(e - 1)  # type: ignore[misc]  # a tailed match ends with the line's newline
                return
            if kind & tailed:
                at = e - 1
            elif cur_from <= e <= cur:
                at = cur  # another literal on the line found last: no newline in between
            else:
                at = find(b"\n", e, hi)  # the line's newline, as the tailed form would report
                if at < 0:
                    return
                cur_from, cur = e, at
            hits[at] = get(at, 0) | kind

        db.scan(data, match_event_handler=on_match)
        keys = list(hits)
        if any(map(ge, keys, islice(keys, 1, None))):  # Hyperscan reports by end offset; if not, sort
            hits = dict(sorted(hits.items()))
        if records:
            if any(map(ge, records, islice(records, 1, None))):
                records.sort()
            both = hits.keys() & set(records) if hits else ()
            if both:  # a record line that is also of another kind: in the dict, with both kinds
                records[:] = [end for end in records if end not in both]
                for end in both:
                    hits[end] |= RECORD
        return hits

    def _scan_python(self, data: bytes | memoryview, shift: int, markers: bool) -> dict[int, int]:
        """``scan`` without Hyperscan: the same literals, line by line."""
        hits: dict[int, int] = {}
        pos = shift + 1
        res = self._res_markers if markers else self._res
        for line in bytes(data[1:]).split(b"\n")[:-1]:
            pos += len(line) + 1
            low = line.lower()
            kinds = 0
            for kind, search in res:
                if search(low):
                    kinds |= kind
            if kinds:
                hits[pos - 1] = kinds
        return hits


def _hs_database(hyperscan, groups: list[tuple[int, list[bytes]]]):  # noqa: ANN001, ANN202
    """One compiled Hyperscan database of ``groups`` (one expression per kind), from the cache
    when a caller set one (``set_db_cache``). The kinds in ``TAILED`` end in ``[^\\n]*\\n`` (one
    report per line, at its newline); the others are bare literals (one report per occurrence)."""
    exprs = [b"(?:" + b"|".join(words) + b")" + (b"[^\n]*\n" if kind & TAILED else b"") for kind, words in groups]
    return _hs_compile(hyperscan, exprs, [kind for kind, _ in groups], [hyperscan.HS_FLAG_CASELESS] * len(exprs))


def _hs_compile(hyperscan, exprs: list[bytes], ids: list[int], flags: list[int]):  # noqa: ANN001, ANN202
    """A compiled block-mode database, from the cache when a caller set one (``set_db_cache``)."""
    key = hashlib.sha256(b"\0".join(exprs) + repr((ids, flags)).encode()
                         + str(hyperscan.__version__).encode()).hexdigest()[:24]
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
        db.compile(expressions=exprs, ids=ids, elements=len(exprs), flags=flags)
        if _db_cache is not None:
            try:
                _db_cache[1](key, hyperscan.dumpb(db))
            except Exception:  # a read-only cache: keep going without it
                pass
    return db


@lru_cache(maxsize=16)
def word_finder(words: tuple[str, ...]) -> Callable[[str], list[int]] | None:
    """``find(text) -> indices of the words of ``words`` that occur in text`` (case-sensitive
    substrings, each index once), by one Hyperscan scan of the line; ``None`` without Hyperscan
    (the caller keeps its regex). Why: the signature scanner asks this for every line of the prose
    zone, and a trie regex searched again after each occurrence cost about 20 us a line (a third
    of the prose zone); one vectorised scan of the line's bytes costs about 3. Each word is written
    byte by byte as ``\\xHH`` (no metacharacter to escape); text and words are compared as UTF-8,
    where a substring of the bytes is a substring of the characters."""
    if not words or any(not w for w in words):
        return None
    try:
        import hyperscan

        exprs = [b"".join(b"\\x%02x" % c for c in w.encode("utf-8", "surrogatepass")) for w in words]
        db = _hs_compile(hyperscan, exprs, list(range(len(words))), [hyperscan.HS_FLAG_SINGLEMATCH] * len(words))
    except Exception:  # not installed or not buildable here
        return None
    scan = db.scan

    def find(text: str) -> list[int]:
        found: list[int] = []
        scan(text.encode("utf-8", "surrogatepass"), match_event_handler=lambda i, s, e, f, c: found.append(i))
        return found

    return find


@lru_cache(maxsize=1)
def engine() -> _Engine:
    return _Engine()


def line_ends(data: bytes, lo: int = 0, hi: int | None = None) -> list[tuple[int, int]]:
    """(end, kinds) of the lines of ``data[lo:hi]`` (which starts at a line start and ends with a
    newline) that can matter, in order: ``end`` is the offset in ``data`` of the line's newline;
    ``kinds`` a METRIC|SIGNAL|NONFINITE|RECORD set. The line starts after the previous newline
    (``data.rfind(b"\\n", 0, end) + 1``). With ``lo > 0`` the byte before ``lo`` is that newline and
    the scan reads the range in place (no copy of the chunk)."""
    return _read_ends(engine().scan(data, lo, len(data) if hi is None else hi))


def _read_ends(hits: dict[int, int]) -> list[tuple[int, int]]:
    """The (end, kinds) of ``hits`` without the lines of kind NONFINITE alone (a NaN on a line of no
    other kind: nothing reads it)."""
    if NONFINITE in hits.values():
        return [(end, kinds) for end, kinds in hits.items() if kinds != NONFINITE]
    return list(hits.items())


def record_and_line_ends(data: bytes, lo: int, hi: int) -> tuple[list[int], list[tuple[int, int]]]:
    """``line_ends`` in two parts: the ends of the lines of kind RECORD alone (a long log's metric
    records, most of which sampling skips) and the (end, kinds) of the others, each in order."""
    records: list[int] = []
    hits = engine().scan(data, lo, hi, records=records)
    return records, _read_ends(hits)


def marker_ends(data: bytes, lo: int, hi: int) -> list[int]:
    """Offsets of the newlines ending the lines of ``data[lo:hi]`` that hold a context marker
    (``lo`` is a line start with a newline before it, or 0)."""
    return list(engine().scan(data, lo, hi, markers=True))


def interesting_lines(data: bytes) -> Iterator[tuple[int, int, int]]:
    """(start, end, kinds) per line of ``line_ends``; ``end`` excludes the newline."""
    rfind = data.rfind
    for end, kinds in line_ends(data):
        yield rfind(b"\n", 0, end) + 1, end, kinds


__all__ = ["MARKER", "METRIC", "NONFINITE", "RECORD", "SIGNAL", "context_lines", "engine", "interesting_lines",
           "line_ends", "marker_ends", "marker_words", "prose_scan_chars", "prose_scan_lines", "record_and_line_ends",
           "set_db_cache", "signal_words", "word_finder"]
