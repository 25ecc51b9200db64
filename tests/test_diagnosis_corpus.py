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


def test_validation_share() -> None:
    val = [c for c in CASES if c["split"] == "validation"]
    if not val:
        pytest.skip(f"no held-out cases of batch {acc.VALIDATION_BATCH} yet: the batch-1 validation part was read "
                    "while the rules were improved (session 3), so all of batch 1 is development; the next batch "
                    "is collected blind and measured against the >= 90% goal")
    passed = [c["id"] for c in val if _result(c["id"])[0]]
    misses = [(c["id"], _result(c["id"])[1]) for c in val if c["id"] not in passed]
    assert len(passed) / len(val) >= 0.9, f"{len(passed)}/{len(val)} validation cases; misses: {misses}"
