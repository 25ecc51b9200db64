"""The words a regex cannot match without: a cheap test before Python's ``re`` runs a pattern.

Signature patterns are case-insensitive searches with word boundaries and ``.{0,60}`` gaps
(``(?i)\\b(?:grpo|rollouts?|vllm)\\b.{0,60}\\bslow``). Python's ``re`` tries such a pattern at every
position of a line, tens of microseconds per line; in the first lines of a log, where every line
meets every prose signature, that was a third of a diagnosis of a million-line log. Most lines hold
none of the words the pattern needs, which ``word in line`` finds in well under a microsecond.

``required_words(pattern)`` reads the pattern's parse tree (the ``re`` module's own parser) and
returns lower-case strings of which every match holds at least one, or ``None`` when it cannot tell.
``may_match(words, low, text)`` is then exact, not a heuristic: it says no only when none of the words
is in the lower-cased line, which no match can avoid. It is applied to ASCII lines only: on ASCII
text an ASCII literal matches, with or without IGNORECASE, exactly where its lower-case form is in
the lower-cased line (Unicode case folding, e.g. the Kelvin sign matching ``k``, needs a non-ASCII
character on one side).
"""

from __future__ import annotations

from re import _constants as C  # noqa: N812  (the parser's op codes)
from re import _parser

_REPEATS = (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", C.MAX_REPEAT))
_ATOMIC = getattr(C, "ATOMIC_GROUP", object())
_MIN_WORD = 3  # shorter literals ('s', 'of') are in nearly every line: no gate


def _required(seq) -> frozenset[str] | None:  # noqa: ANN001  (a re._parser.SubPattern or list)
    """A set of strings one of which every match of ``seq`` holds, or None."""
    best: frozenset[str] | None = None

    def consider(cand: frozenset[str] | None) -> None:
        nonlocal best
        if not cand or any(not w.isascii() or len(w) < _MIN_WORD for w in cand):
            return
        if best is None or (min(map(len, cand)), -len(cand)) > (min(map(len, best)), -len(best)):
            best = cand

    run: list[str] = []
    for op, av in seq:
        if op is C.LITERAL:
            run.append(chr(av).lower())
            continue
        consider(frozenset({"".join(run)}) if run else None)
        run = []
        if op is C.SUBPATTERN:
            consider(_required(av[-1]))
        elif op is _ATOMIC:
            consider(_required(av))
        elif op is C.BRANCH:
            parts = [_required(branch) for branch in av[1]]
            if parts and all(p is not None for p in parts):
                consider(frozenset().union(*parts))  # type: ignore[arg-type]
        elif op in _REPEATS and av[0] >= 1:
            consider(_required(av[2]))
    consider(frozenset({"".join(run)}) if run else None)
    return best


def required_words(pattern: str) -> tuple[str, ...] | None:
    """Lower-case ASCII strings every match of ``pattern`` holds one of (None: no such set known)."""
    try:
        words = _required(_parser.parse(pattern))
    except Exception:  # an unusual construct: no gate, the pattern runs on every line
        return None
    return tuple(sorted(words)) if words else None


def may_match(words: tuple[str, ...] | None, low: str, text: str) -> bool:
    """False only when no match of the pattern is possible in ``text`` (``low`` = ``text.lower()``)."""
    if words is None or not text.isascii():
        return True
    for w in words:
        if w in low:
            return True
    return False


__all__ = ["may_match", "required_words"]
