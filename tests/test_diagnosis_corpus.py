"""The real-case corpus of tests/cases/diagnosis, run through `rl-advisor diagnose FILE --json`.

Development cases must each pass (the rules are written against them). Validation cases are
judged together: the share that passes must stay >= 90% (the issue's goal); a single validation
miss is not a failure, and no rule is tuned to one. The split is by collection batch
(benchmarks/diagnose_accuracy.py: case_split): the newest held-out batch is validation, every older
batch development, so a case cannot be moved after a result (tests/cases/diagnosis/README.md).
"""

from __future__ import annotations

import importlib.util
import sys
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

from advisor.diagnosis import taxonomy

REPO = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("diagnose_accuracy", REPO / "benchmarks" / "diagnose_accuracy.py")
acc = importlib.util.module_from_spec(_spec)
sys.modules["diagnose_accuracy"] = acc
_spec.loader.exec_module(acc)  # type: ignore[union-attr]

CASES = acc.load_cases(shared=None)
REQUIRED = ("id", "source", "repository", "framework", "input_kind", "expected", "ground_truth",
            "ground_truth_from", "batch", "files")


def test_corpus_shape() -> None:
    cats = set(taxonomy())
    ids = set()
    for c in CASES:
        meta = yaml.safe_load((c["folder"] / "case.yaml").read_text(encoding="utf-8"))
        missing = [k for k in REQUIRED if not meta.get(k)]
        assert not missing, f"{c['id']}: missing {missing}"
        assert meta["id"] == c["folder"].name and meta["id"] not in ids
        ids.add(meta["id"])
        assert meta["source"].startswith("https://github.com/"), meta["source"]
        assert meta["expected"] in cats, meta["expected"]
        assert meta["input_kind"] in ("log", "metric", "prose")
        assert meta["ground_truth_from"] in ("maintainer", "reporter", "error")
        for f in meta["files"]:
            text = (c["folder"] / f).read_text(encoding="utf-8")
            assert 0 < len(text) < 20_000, f"{c['id']}/{f}: excerpts only"
    repos = {c["repository"] for c in CASES}
    assert len(repos) >= 15, sorted(repos)


def test_split_is_by_batch() -> None:
    parts: dict[str, set[str]] = {}
    for c in CASES:
        assert isinstance(c["batch"], int) and c["batch"] >= 1, (c["id"], c["batch"])
        assert c["split"] == ("validation" if c["batch"] >= acc.VALIDATION_BATCH else "development")
        parts.setdefault(c["source"], set()).add(c["split"])
    assert all(len(v) == 1 for v in parts.values()), "one thread's cases belong to one batch"
    # batch 1 was read while the rules were written: never validation again
    assert all(c["split"] == "development" for c in CASES if c["batch"] == 1)


@lru_cache(maxsize=None)
def _result(case_id: str) -> tuple[bool, str]:
    case = next(c for c in CASES if c["id"] == case_id)
    return acc.judge(case, acc.diagnose_cli(case["paths"]))


@pytest.mark.parametrize("case_id", [c["id"] for c in CASES if c["split"] == "development"])
def test_development_case(case_id: str) -> None:
    ok, got = _result(case_id)
    case = next(c for c in CASES if c["id"] == case_id)
    assert ok, f"{case_id}: expected {case['expected']} ({case['input_kind']}); {got}"


MEASURED_VALIDATION = (26, 38)
"""Batch 2 as first measured, blind, at the rule freeze of session 4 (benchmarks/diagnose_accuracy.py
--show-misses): the floor below which a change is a regression on held-out cases."""


def _validation() -> tuple[list[str], list[tuple[str, str]], int]:
    val = [c for c in CASES if c["split"] == "validation"]
    if not val:
        pytest.skip(f"no held-out cases of batch {acc.VALIDATION_BATCH} yet")
    passed = [c["id"] for c in val if _result(c["id"])[0]]
    misses = [(c["id"], _result(c["id"])[1]) for c in val if c["id"] not in passed]
    return passed, misses, len(val)


def test_validation_share_not_below_its_first_measurement() -> None:
    passed, misses, n = _validation()
    if n != MEASURED_VALIDATION[1]:
        pytest.fail(f"the validation batch has {n} cases, measured on {MEASURED_VALIDATION[1]}: a new held-out "
                    "batch is measured once, blind, and its figure recorded here")
    assert len(passed) >= MEASURED_VALIDATION[0], f"{len(passed)}/{n} validation cases; misses: {misses}"


@pytest.mark.xfail(strict=True, reason=(
    "measured 26/38 = 68% on the blind batch 2 (goal >= 90%): host-memory OOMs read as GPU OOM or as a Ray "
    "actor death (4), prose reports of a reward function that never scores, of identical group rewards, of "
    "responses all clipped and of rising entropy in wordings no rule reads (5), a DeepSpeed micro-batch of 0, "
    "an OOM while ZeRO-3 gathers weights for generation read as a plain GPU OOM, and a healthy run's "
    "description given an OOM error; batch 2 is not tuned on while it is the validation part"))
def test_validation_share() -> None:
    passed, misses, n = _validation()
    assert len(passed) / n >= 0.9, f"{len(passed)}/{n} validation cases; misses: {misses}"
