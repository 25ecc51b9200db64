"""Similar known cases: when the text of a run reads like a real case of the corpus, say so, with
the link to that thread and what resolved it.

Rules name a problem from a framework string or a metric; a description in a user's own words
("the rollouts turn to gibberish after the first weight update") often has neither. The corpus of
real cases (tests/cases/diagnosis, development part only) is packaged as
``advisor/data/diagnosis_known_cases.yaml`` by ``benchmarks/known_cases.py``: per case its thread,
category, one-line resolution and term counts. A query is compared with every known case by
TF-IDF cosine similarity (Salton & Buckley 1988, "Term-weighting approaches in automatic text
retrieval"; sublinear tf ``1 + ln tf`` and smoothed idf ``ln((1 + N) / (1 + df)) + 1``, the
formulas of scikit-learn's ``TfidfVectorizer(sublinear_tf=True)``), the k nearest cases above a
similarity threshold vote for their category (weighted by similarity), and at most
``max_findings`` categories become findings: severity warning, never error (retrieval is not
proof), low confidence, ranked after every rule finding. k and the threshold are chosen by
leave-one-batch-out cross-validation on the development batches (``params`` of the table,
benchmarks/known_cases.py --fit); the validation batch is never in the table.

Bounded: the query is the text the engine already keeps (lines handed to the scanner, minus the
lines read as metric records), the first ``HEAD_CHARS`` and last ``TAIL_CHARS`` of it; one
retrieval per run, never per line. Pure: reads only its packaged table, lazily, on first use.
"""

from __future__ import annotations

import math
import re
from collections import Counter, deque
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain
from typing import Any, Iterable

HEAD_CHARS = 8192
"""Characters of kept text read from the start of a run (a pasted description, a launch command,
the first error)."""
TAIL_CHARS = 8192
"""Characters of kept text read from its end (the last traceback)."""
LINE_CHARS = 400
"""A single line contributes at most this many characters (a megabyte-long line is one line)."""

RULE_ID = "similar_case"
CLASS_RULE_ID = "similar_wording"
CLASS_TOP = 3
"""When nothing else was found, at most this many categories are offered as hypotheses: a shortlist
of three, the length diagnose_accuracy reads for a description (the expected category in the top 3)."""
CLASS_MIN_TERMS = 25
"""Distinct known terms a text needs before it gets hypotheses: a remark of a line or two names a topic
("the reward manager reads them fine"), not a problem. Set on development data: 25 is the smallest
count at which none of the 457 healthy wordings of tests/test_diagnosis_wording_classes.py gets a
hypothesis (12, the retrieval's ``min_terms``, gave 10), while the held-out figure of
benchmarks/class_fallback_retro.py is the same from 12 to 30 (its texts are longer)."""
TABLE = "diagnosis_known_cases.yaml"
HEALTHY = frozenset({"healthy", "healthy_false_alarm"})


_METRIC_PAIR = re.compile(r"""['"]?[A-Za-z_\u0130\u0131\u017f\u212a][\w./@()-]*+['"]?\s?:\s?[-+]?"""
                          r"""(?:\d[\d.]*(?:[eE][-+]?\d+)?|[nN][aA][nN]|[iI\u0130\u0131][nN][fF])\b""")
r"""A ``key: value`` pair. Written out case by case rather than with IGNORECASE (which makes every
character test fold case: four times slower), with the non-ASCII letters IGNORECASE folds onto
these (dotted/dotless i, long s, Kelvin sign), and the key's run possessive (``*+``: a shorter key
is followed by a key character, never by the quote, space or colon that must come next), so it
matches exactly what ``(?i)['"]?[A-Za-z_][\w./@()-]*['"]?\s?:\s?[-+]?(?:\d[\d.]*(?:e[-+]?\d+)?|nan|inf)\b``
matches; it runs on every line the engine keeps."""


def _is_metric_line(text: str) -> bool:
    """Mostly ``key:value`` pairs (a metric record the readers did not take as one: a wrapped step
    line, veRL's one-metric-per-line block, a pasted table). Metric names say which framework logged
    the run, not what went wrong with it; their values are the rules' business."""
    # the matched texts' lengths summed in C (``findall``: the pattern has no group), not a Python
    # generator over match objects: this runs on every kept line of the prose zone
    covered = sum(map(len, _METRIC_PAIR.findall(text)))
    return covered * 2 > len(text.strip())


class TextSample:
    """The first ``HEAD_CHARS`` and last ``TAIL_CHARS`` of the lines added: memory is bounded
    whatever the log's size, and each line costs an append."""

    __slots__ = ("head", "head_n", "tail", "tail_n")

    def __init__(self) -> None:
        self.head: list[str] = []
        self.head_n = 0
        self.tail: deque[str] = deque()
        self.tail_n = 0

    def add(self, text: str) -> None:
        text = text[:LINE_CHARS]
        if _is_metric_line(text):
            return
        if self.head_n < HEAD_CHARS:
            self.head.append(text)
            self.head_n += len(text) + 1
            return
        self.tail.append(text)
        self.tail_n += len(text) + 1
        while self.tail_n > TAIL_CHARS:
            self.tail_n -= len(self.tail.popleft()) + 1

    def text(self) -> str:
        return "\n".join(chain(self.head, self.tail))


# ---------------------------------------------------------------------------------------- tokens

_DROP = re.compile(r"https?://\S+|(?<![\w.~])[~.]{0,2}/[^\s'\"),;:]+|\b0x[0-9a-fA-F]+\b")
"""URLs, absolute and relative paths, hex addresses: they name a machine, not a problem."""
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[./][A-Za-z_][A-Za-z0-9_]*)*|[\u3400-\u9fff]+")
"""Identifiers keep their dots, slashes and underscores (``actor_rollout_ref.rollout.n``,
``actor/entropy``, ``CUDA_VISIBLE_DEVICES``); a token never starts with a digit (numbers drop out).
CJK runs are kept whole and cut into bigrams below."""
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_HEXISH = re.compile(r"^[0-9a-f]{6,}$")
_STOP = frozenset("""
a about above after again all also am an and any are as at be because been before being below between both
but by can could did do does doing done down during each few for from further get got had has have having
he her here hers him his how i if in into is it its itself just me more most my no nor not now of off on
once only or other our out over own same she should so some such than that the their them then there these
they this those through to too under until up us very was we were what when where which while who whom why
will with would you your yours yes use used using one two also however still even like try tried trying
""".split())


def _stem(word: str) -> str:
    """Plural -s only (``rewards`` -> ``reward``): enough for the vocabulary of training logs."""
    if len(word) > 4 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def tokens(text: str) -> list[str]:
    """Terms of a text: lower-cased words and framework identifiers; an identifier also gives its
    parts (``max_response_length`` -> ``max_response_length``, ``response``, ``length``;
    ``OutOfMemoryError`` -> ``outofmemoryerror``, ``memory``, ``error``) so a paraphrase in words
    meets the key. Numbers, paths, URLs and hex ids are dropped."""
    out: list[str] = []
    for m in _WORD.finditer(_DROP.sub(" ", text)):
        word = m.group()
        if word[0] >= "\u3400":
            out.extend(word[i:i + 2] for i in range(max(1, len(word) - 1)))
            continue
        low = word.lower()
        if _HEXISH.match(low) and any(ch.isdigit() for ch in low):
            continue
        parts = [p for chunk in re.split(r"[./_]+", word) for p in _CAMEL.findall(chunk)]
        if len(parts) > 1:
            out.append(low)
        for p in parts:
            p = p.lower()
            if len(p) > 1 and not p.isdigit() and p not in _STOP:
                out.append(_stem(p))
    return out


_PLAIN_WORD = re.compile(r"[A-Za-z][a-z']*[,.;:!?)]?")
_CJK_RUN = re.compile(r"[\u3400-\u9fff]{6,}")
SENTENCE_WORDS = 6
"""A line is a sentence when at least this many of its words, and most of them, are plain words."""


def has_sentence(text: str) -> bool:
    """Whether the text describes something in words: a line of at least ``SENTENCE_WORDS`` plain
    words that make up most of it (or a run of CJK characters). Known cases are matched on what
    people write about a run; a log with no sentence at all (progress lines, weight-update lines,
    a bare traceback) shares its wording with the failing runs of the same framework whether it
    failed or not, so it is left to the rules."""
    for line in text.splitlines():
        words = line.strip(" \t#>-*").split()
        if len(words) >= SENTENCE_WORDS:
            plain = sum(1 for w in words if _PLAIN_WORD.fullmatch(w))
            if plain >= SENTENCE_WORDS and plain * 3 >= len(words) * 2:
                return True
        elif _CJK_RUN.search(line):
            return True
    return False


def term_counts(text: str) -> Counter[str]:
    return Counter(tokens(text))


def encode_terms(counts: dict[str, int]) -> str:
    """``term:count`` pairs in one string (``count`` omitted when 1): one YAML scalar per case
    parses far faster than a mapping."""
    return " ".join(t if n == 1 else f"{t}:{n}" for t, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def decode_terms(text: str) -> dict[str, int]:
    out = {}
    for item in text.split():
        term, _, n = item.rpartition(":")
        if term and n.isdigit():
            out[term] = int(n)
        else:
            out[item] = 1
    return out


# ---------------------------------------------------------------------------------------- index


@dataclass(frozen=True)
class Neighbour:
    case: dict[str, Any]
    similarity: float


class KnownCaseIndex:
    """TF-IDF vectors of known cases, and the cosine similarity of a query to each."""

    def __init__(self, cases: Iterable[dict[str, Any]]):
        self.cases = [c for c in cases]
        counts = [c["counts"] if "counts" in c else decode_terms(c["terms"]) for c in self.cases]
        n = len(counts)
        df: Counter[str] = Counter()
        for tf in counts:
            df.update(tf.keys())
        self.idf = {t: math.log((1 + n) / (1 + d)) + 1.0 for t, d in df.items()}
        self._sums: dict[str, dict[str, float]] | None = None
        self._norms: dict[str, float] = {}
        self.vectors: list[dict[str, float]] = []
        for tf in counts:
            vec = {t: (1.0 + math.log(k)) * self.idf[t] for t, k in tf.items()}
            norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
            self.vectors.append({t: v / norm for t, v in vec.items()})

    def query_vector(self, counts: dict[str, int]) -> dict[str, float]:
        vec = {t: (1.0 + math.log(k)) * self.idf[t] for t, k in counts.items() if t in self.idf}
        norm = math.sqrt(sum(v * v for v in vec.values()))
        return {t: v / norm for t, v in vec.items()} if norm else {}

    def nearest(self, counts: dict[str, int], k: int, exclude_sources: frozenset[str] = frozenset(),
                min_terms: int = 1) -> list[Neighbour]:
        """The ``k`` most similar cases; none when the query has fewer than ``min_terms`` distinct
        terms the index knows (a line or two: a few shared words make a high cosine by chance)."""
        q = self.query_vector(counts)
        if len(q) < max(1, min_terms):
            return []
        scored = []
        for case, vec in zip(self.cases, self.vectors):
            if case["source"] in exclude_sources:
                continue  # the same thread: never evidence for itself
            small, big = (q, vec) if len(q) < len(vec) else (vec, q)
            s = sum(w * big.get(t, 0.0) for t, w in small.items())
            if s > 0:
                scored.append(Neighbour(case, s))
        scored.sort(key=lambda nb: -nb.similarity)
        return scored[:k]

    def rank_categories(self, counts: dict[str, int], exclude_sources: frozenset[str] = frozenset(),
                        min_terms: int = 1) -> list[tuple[str, float, Neighbour | None]]:
        """Categories by the cosine similarity of the query to each category's centroid, best first,
        each with its nearest case. Rocchio classification (Rocchio 1971; Manning, Raghavan & Schuetze
        2008, *Introduction to Information Retrieval*, section 14.2): a category is the sum of its
        cases' unit TF-IDF vectors, so the wording shared by many of its cases outweighs one case's
        particulars, which is what a text in new words about a known kind of problem has in common with
        it. The cases of an excluded thread are taken out of their centroids, so a known case is never
        ranked by itself. Empty under ``min_terms``."""
        q = self.query_vector(counts)
        if len(q) < max(1, min_terms):
            return []
        sums, norms = self._centroids()
        left_out: dict[str, Counter[str]] = {}
        best: dict[str, Neighbour] = {}
        for case, vec in zip(self.cases, self.vectors):
            cat = case["category"]
            if case["source"] in exclude_sources:
                left_out.setdefault(cat, Counter()).update(vec)
                continue
            small, big = (q, vec) if len(q) < len(vec) else (vec, q)
            s = sum(w * big.get(t, 0.0) for t, w in small.items())
            if s > 0 and (cat not in best or s > best[cat].similarity):
                best[cat] = Neighbour(case, s)
        ranked = []
        for cat, vec in sums.items():
            norm2 = norms[cat]
            if cat in left_out:  # the centroid without the excluded thread's cases
                vec = {t: v - left_out[cat].get(t, 0.0) for t, v in vec.items()}
                norm2 = sum(v * v for v in vec.values())
            if norm2 > 1e-9:
                ranked.append((cat, sum(w * vec.get(t, 0.0) for t, w in q.items()) / math.sqrt(norm2), best.get(cat)))
        ranked.sort(key=lambda r: -r[1])
        return ranked

    def _centroids(self) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
        """Per category the sum of its cases' unit vectors and the sum's squared norm (built once)."""
        if self._sums is None:
            sums: dict[str, Counter[str]] = {}
            for case, vec in zip(self.cases, self.vectors):
                acc = sums.setdefault(case["category"], Counter())
                for t, v in vec.items():
                    acc[t] += v
            self._sums = {cat: dict(c) for cat, c in sums.items()}
            self._norms = {cat: sum(v * v for v in c.values()) for cat, c in self._sums.items()}
        return self._sums, self._norms


@lru_cache(maxsize=1)
def _packaged() -> tuple[KnownCaseIndex, dict[str, Any]]:
    from advisor.diagnosis.tables import load_table

    table = load_table(TABLE)
    return KnownCaseIndex(table["cases"]), dict(table["params"])


def packaged_table() -> dict[str, Any]:
    from advisor.diagnosis.tables import load_table

    return load_table(TABLE)


@dataclass(frozen=True)
class Vote:
    category: str
    weight: float
    share: float
    neighbours: tuple[Neighbour, ...]


def vote(neighbours: list[Neighbour], threshold: float, max_findings: int) -> list[Vote]:
    """Categories of the neighbours at or above ``threshold``, weighted by similarity, best first."""
    kept = [nb for nb in neighbours if nb.similarity >= threshold]
    total = sum(nb.similarity for nb in kept)
    by_cat: dict[str, list[Neighbour]] = {}
    for nb in kept:
        by_cat.setdefault(nb.case["category"], []).append(nb)
    votes = [Vote(cat, sum(nb.similarity for nb in nbs), sum(nb.similarity for nb in nbs) / total, tuple(nbs))
             for cat, nbs in by_cat.items()]
    votes.sort(key=lambda v: (-v.weight, -v.neighbours[0].similarity))
    return votes[:max_findings]


def similar_votes(text: str, *, index: KnownCaseIndex | None = None, params: dict[str, Any] | None = None,
                  exclude_sources: Iterable[str] = ()) -> list[Vote]:
    """The category votes of the known cases nearest to ``text`` (packaged index and parameters
    unless given)."""
    if not has_sentence(text):
        return []  # before the packaged index is loaded: most machine logs hold no sentence
    counts = term_counts(text)
    if not counts:
        return []
    if index is None or params is None:
        pk_index, pk_params = _packaged()
        index, params = index or pk_index, params or pk_params
    nbs = index.nearest(counts, int(params["k"]), frozenset(exclude_sources), int(params.get("min_terms", 1)))
    return vote(nbs, float(params["threshold"]), int(params["max_findings"]))


def findings(text: str, found: list[Any], framework: str | None, plan: object | None = None,
             exclude_sources: Iterable[str] = ()) -> list[Any]:
    """Findings for the categories the nearest known cases vote for. A category a rule already
    found (in ``found``) gets the nearest case as one more evidence item (its thread and
    resolution) instead. When a rule read an error from a log line there is no retrieval at all (the
    framework's own message is the better evidence, retrieval is the fallback, and a crash log then
    never pays for loading the table). Healthy neighbours give an info
    finding (a thread where this was expected), every other category a warning. When no rule and no
    neighbour found anything in a text with no metric record, the engine offers the categories
    nearest as a whole as info hypotheses (``class_findings``)."""
    if not text.strip():
        return []
    from advisor.diagnosis.model import Finding
    from advisor.diagnosis.tables import taxonomy

    if any(f.severity == "error" and any(e.kind == "log" for e in f.evidence) for f in found):
        return []  # a rule read the framework's error message: that is the diagnosis (and no table load)
    tax = taxonomy()
    by_cat = {f.category: f for f in found}
    out = []
    for v in similar_votes(text, exclude_sources=exclude_sources):
        if v.category not in tax:
            continue
        evidence = _evidence(v)
        if v.category in by_cat:
            by_cat[v.category].evidence.append(evidence[0])
            continue
        best = v.neighbours[0]
        healthy = v.category in HEALTHY
        out.append(Finding(
            category=v.category, title=tax[v.category]["title"], severity="info" if healthy else "warning",
            rule=RULE_ID,
            summary=(f"Resembles a known case ({best.case['id']}, text similarity {best.similarity:.2f}); "
                     "found by retrieval, not by a rule: read the thread to confirm"),
            evidence=evidence, likely_cause=best.case["resolution"],
            fixes=_category_fixes(v.category, framework, plan), source=best.case["source"],
            confidence=round(0.2 + 0.3 * v.share * min(1.0, best.similarity / 0.5), 2),
            score=round(10 * best.similarity, 3)))  # below every rule finding (>= 100)
    return out


def class_findings(text: str, framework: str | None, plan: object | None = None,
                   exclude_sources: Iterable[str] = ()) -> list[Any]:
    """Hypotheses when nothing was measured and nothing else was found (the engine asks only then: a
    run whose metrics were read and passed every rule is healthy, not a text to guess about): the
    ``CLASS_TOP`` categories whose known cases the text's wording is nearest to as a whole
    (``KnownCaseIndex.rank_categories``), each at severity info with the nearest case of the category
    as evidence. A report in new words about a known kind of problem shares little with any single
    case (no neighbour passes the similarity threshold) but much with the category's cases together.
    Nothing when the text reads most like the healthy cases (a run that is fine is not given problems
    to check), when it holds no sentence, or when it has fewer than ``CLASS_MIN_TERMS`` terms the
    index knows. Never a warning or an error: these are what to check first, not what was found
    (measured in benchmarks/class_fallback_retro.py)."""
    from advisor.diagnosis.model import Evidence, Finding
    from advisor.diagnosis.tables import taxonomy

    index, _ = _packaged()
    tax = taxonomy()
    ranked = [r for r in class_ranking(text, index, CLASS_MIN_TERMS, frozenset(exclude_sources)) if r[0] in tax]
    out = []
    for rank, (cat, sim, nb) in enumerate(ranked, 1):
        evidence = [] if nb is None else [Evidence(
            kind="case", note=f"nearest known case of the category {nb.case['id']}: {nb.case['source']} "
            f"(similarity {nb.similarity:.2f}): {nb.case['resolution']}")]
        out.append(Finding(
            category=cat, title=tax[cat]["title"], severity="info", rule=CLASS_RULE_ID,
            summary=(f"No rule matched. By its wording the text reads most like the known cases of this "
                     f"category (rank {rank} of {CLASS_TOP}, similarity {sim:.2f}): a hypothesis to check, "
                     "not a finding"),
            evidence=evidence, likely_cause="" if nb is None else nb.case["resolution"],
            fixes=_category_fixes(cat, framework, plan), source=nb.case["source"] if nb else "",
            confidence=round(min(0.3, 0.1 + sim / 2), 2), score=round(sim, 3)))  # below the similar cases
    return out


def class_ranking(text: str, index: KnownCaseIndex, min_terms: int,
                  exclude_sources: frozenset[str] = frozenset()) -> list[tuple[str, float, Neighbour | None]]:
    """The ``CLASS_TOP`` problem categories nearest to ``text`` as a whole (category, similarity,
    nearest case of it); none for a text without a sentence, with fewer than ``min_terms`` known terms,
    or whose nearest category is a healthy one."""
    if not has_sentence(text):
        return []
    counts = term_counts(text)
    ranked = index.rank_categories(counts, exclude_sources, min_terms) if counts else []
    if not ranked or ranked[0][0] in HEALTHY:
        return []
    return [r for r in ranked if r[0] not in HEALTHY][:CLASS_TOP]


def class_categories(text: str, index: KnownCaseIndex, min_terms: int,
                     exclude_sources: frozenset[str] = frozenset()) -> list[str]:
    return [cat for cat, _, _ in class_ranking(text, index, min_terms, exclude_sources)]


def _evidence(v: Vote) -> list[Any]:
    from advisor.diagnosis.model import Evidence

    return [Evidence(kind="case", note=f"similar known case {nb.case['id']}: {nb.case['source']} "
                     f"(similarity {nb.similarity:.2f}): {nb.case['resolution']}") for nb in v.neighbours[:2]]


def _category_fixes(category: str, framework: str | None, plan: object | None) -> list[Any]:
    """The fixes of the first rule or signature of the category (its usual remedies)."""
    from advisor.diagnosis.tables import make_fixes, rules, signatures

    for row in chain(signatures(), rules()):
        if row.get("category") == category and row.get("fixes"):
            return make_fixes(row["fixes"], framework, plan)[:4]
    return []
