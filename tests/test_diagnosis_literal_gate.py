"""The literal gate before signature regexes (advisor/diagnosis/literal_gate.py) must never skip a
line a pattern matches: checked on every signature pattern against every line of the real case
corpus, on lines built from each pattern's own words, and on hand-written constructs."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from advisor.diagnosis.literal_gate import may_match, required_words
from advisor.diagnosis.tables import oom_table, signatures

CASES = Path(__file__).resolve().parent / "cases" / "diagnosis"


def _patterns() -> list[str]:
    pats = [p for row in signatures() for p in row.get("patterns", [])]
    return pats + list(oom_table()["gpu_patterns"]) + list(oom_table()["prose_patterns"])


def _corpus_lines() -> list[str]:
    lines: list[str] = []
    for f in sorted(CASES.rglob("*")):
        if f.is_file() and f.suffix not in (".yaml", ".json") and f.stat().st_size < 2_000_000:
            lines.extend(f.read_text(encoding="utf-8", errors="replace").splitlines())
    return lines


@pytest.mark.parametrize("pattern, text, words", [
    (r"(?i)\b(?:grpo|vllm)\b.{0,60}\bslow(?:er)?", "vLLM generation is SLOWER than expected", ("slow",)),
    (r"(?i)takes? too long", "it TAKES TOO LONG", (" too long",)),
    (r"CUDA out of memory", "torch.OutOfMemoryError: CUDA out of memory.", ("cuda out of memory",)),
    (r"(?:abc|xy)z+def", "xyzzzdef", ("def",)),
])
def test_required_words_hold_in_a_match(pattern: str, text: str, words: tuple[str, ...]) -> None:
    got = required_words(pattern)
    assert got == words
    assert re.search(pattern, text)
    assert may_match(got, text.lower(), text)
    assert not may_match(got, "nothing here at all", "nothing here at all")


@pytest.mark.parametrize("pattern", [r"(?i)\bx?\b", r"(?:foo|)bar?", r"a|b", r"(?i)\d+\s*%", r".*"])
def test_no_gate_where_no_word_is_required(pattern: str) -> None:
    words = required_words(pattern)
    if words is not None:  # any gate given must hold on every match
        for text in ("foo", "bar", "ba", "a", "b", "12 %", "x", ""):
            if re.search(pattern, text):
                assert may_match(words, text.lower(), text), (pattern, text)


def test_non_ascii_lines_are_never_gated() -> None:
    words = required_words(r"(?i)kelvin")
    assert words == ("kelvin",)
    text = "\u212aELVIN"  # the Kelvin sign folds to 'k' under IGNORECASE
    assert re.search(r"(?i)kelvin", text) and may_match(words, text.lower(), text)


def test_gate_never_skips_a_match_on_the_corpus_and_built_lines() -> None:
    lines = _corpus_lines()
    assert len(lines) > 1000
    rng = random.Random(19)
    skipped = checked = 0
    for pattern in _patterns():
        words = required_words(pattern)
        if words is None:
            continue
        rx = re.compile(pattern)
        # lines that carry the pattern's own words in other cases and surroundings
        built = [f"{pre}{w.upper() if rng.random() < .5 else w.title()}{post}" for w in words
                 for pre, post in (("", ""), ("x ", " y"), ("(", ")"))]
        for text in lines + built:
            t = text.strip()
            low = t.lower()
            if not may_match(words, low, t):
                skipped += 1
                assert rx.search(t) is None, (pattern, t)
            checked += 1
    assert skipped > checked // 2  # the gate does prune most lines


def test_words_in_finds_every_word_a_line_holds() -> None:
    """SignatureScanner._words_in (a few trie searches) equals a substring test per trigger,
    marker and required word, also for overlapping words and words inside longer ones."""
    from advisor.diagnosis.signatures import SignatureScanner

    scanner = SignatureScanner()
    words = sorted(scanner._prefixes)
    assert set(scanner._trigger_list) <= set(words) and scanner._markers <= set(words)
    rng = random.Random(7)
    lines = _corpus_lines()
    for _ in range(3000):
        lines.append(" ".join(rng.choice(words) if rng.random() < .5 else rng.choice(words)[1:]
                              for _ in range(rng.randint(1, 6))))
        lines.append("".join(rng.choice(words) for _ in range(rng.randint(1, 4))))
    for line in lines:
        low = line.lower()
        assert scanner._words_in(low) == {w for w in words if w in low}, line
