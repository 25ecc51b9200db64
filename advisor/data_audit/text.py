"""Small text helpers of the audit: value shapes, normalisation, hashes, shingles and n-grams.

Hashes are blake2b-64 of the normalised text, so exact duplicates are found with 8 bytes per row.
"""

from __future__ import annotations

import hashlib
import re
import zlib
from typing import Any

_WORD = re.compile(r"\w+", re.UNICODE)
# an answer "ends cleanly" on sentence punctuation, a closing bracket/quote, a code fence or a boxed answer
_CLEAN_END = re.compile(r"""([.!?。！？…:;)\]}>"'`*|$]|\\boxed\{[^}]*\}|</\w+>)\s*$""")


def shape_of(value: Any) -> str:
    """messages | text | json_text | empty | null | bool | number | mapping | list | other."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        s = value.lstrip()
        if s.startswith("[{") and '"role"' in s[:200]:
            return "json_text"  # a message list stored as a JSON string (CSV, hand-made JSONL)
        return "text" if value.strip() else "empty"
    if isinstance(value, dict):
        return "mapping"
    if isinstance(value, (list, tuple)):
        if not value:
            return "empty"
        if all(isinstance(m, dict) and "role" in m and "content" in m for m in value):
            return "messages"
        return "list"
    return "other"


def as_text(value: Any) -> str:
    """The text of a value: a string, or the contents of a message list joined by newlines."""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        parts = []
        for m in value:
            if isinstance(m, dict):
                c = m.get("content")
                if isinstance(c, list):  # multimodal content parts
                    c = " ".join(str(p.get("text", "")) for p in c if isinstance(p, dict))
                parts.append("" if c is None else str(c))
            else:
                parts.append(str(m))
        return "\n".join(parts)
    return "" if value is None else str(value)


def normalise(text: str) -> str:
    return " ".join(text.split()).lower()


def hash64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def shingles(text: str, k: int) -> list[int]:
    """Word k-gram shingles as 32-bit hashes (one for the whole text when it has fewer than k words).

    Words are hashed in C (zlib.crc32 via map) and combined into k-grams with numpy, instead of
    datasketch's default per-shingle SHA-1: about 10x cheaper. datasketch mixes the values (fmix)
    before permuting them, so a simple polynomial combination is enough."""
    import numpy as np

    w = _WORD.findall(text.lower())
    if not w:
        return []
    ids = np.fromiter(map(zlib.crc32, map(str.encode, w)), dtype=np.uint64, count=len(w))
    if len(w) <= k:
        h = ids[:1].copy()
        for j in range(1, len(w)):
            h = h * np.uint64(1_000_003) ^ ids[j:j + 1]
        return (h & np.uint64(0xFFFFFFFF)).tolist()
    n = len(w) - k + 1
    h = ids[:n].copy()
    for j in range(1, k):
        h = h * np.uint64(1_000_003) ^ ids[j:j + n]
    return np.unique(h & np.uint64(0xFFFFFFFF)).tolist()  # 32-bit: datasketch's default scheme


def ngram_hashes(ws: list[str], n: int) -> set[int]:
    if len(ws) < n:
        return {hash(tuple(ws))} if ws else set()
    return {hash(tuple(ws[i:i + n])) for i in range(len(ws) - n + 1)}


def ends_cleanly(text: str) -> bool:
    return bool(_CLEAN_END.search(text[-200:])) if text.strip() else True


def get_path(row: dict[str, Any], dotted: str) -> tuple[bool, Any]:
    """(present, value) of a dotted field such as ``reward_model.ground_truth``."""
    cur: Any = row
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return False, None
        cur = cur[part]
    return True, cur
