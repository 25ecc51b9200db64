"""The pre-filter's literals and the routine lines of a healthy distributed run.

Speed is measured in benchmarks/diagnose_scale.py as a ratio; this checks the cause of the one large regression it
found (session 17: 264.8x a bare read): a requirement word, 'group', that every PyTorch NCCL warning line holds inside
"ProcessGroupNCCL", sent a quarter of the generated log past the pre-filter into the Python scanner."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from advisor.diagnosis.prefilter import marker_words, signal_words

REPO = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("diagnose_scale", REPO / "benchmarks" / "diagnose_scale.py")
diagnose_scale = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(diagnose_scale)  # type: ignore[union-attr]


@pytest.mark.parametrize("template", diagnose_scale.NOISE)
def test_routine_worker_lines_hold_no_prefilter_literal(template: str) -> None:
    line = template.format(pid=4242, ts="11-30 10:00:00", a=12.5, b=2052.0, r=3, p=40, s=120).lower()
    found = [w for w in signal_words() + marker_words() if w in line]
    assert not found, f"{found} would send every such line of a healthy log to the scanner"


def test_group_requirement_words_are_words() -> None:
    """'group' as a word ("group size", "group-relative", group_size), not inside ProcessGroupNCCL."""
    words = set(signal_words())
    assert "group" not in words
    assert {"group ", "group-", "group_", "groups"} <= words


def test_prose_zone_ends_at_one_issue_body() -> None:
    """Prose wordings are read in the first lines of an input up to 2,000 lines or 65,536 characters (one
    GitHub issue body or comment at most, diagnosis_signatures.yaml prose_scan_chars): past that the input
    is machine output, read through the pre-filter, where a description is read only behind '#' or '>'.
    (Session 18: the first 2,000 lines of a long log, 200-400k characters, were most of a million-line
    diagnosis's start-up.)"""
    from advisor.diagnosis.engine import diagnose_text
    from advisor.diagnosis.prefilter import prose_scan_chars

    said = "the reward keeps rising while the eval accuracy falls and the KL is climbing\n"
    noise = "".join(f"(WorkerDict pid=42) INFO 11-30 10:00:00 worker.py:1] heartbeat {'x' * 150} {i}\n"
                    for i in range(600))  # 600 lines (< 2,000), ~130k characters
    assert len(noise) > prose_scan_chars() == 65536

    def cats(text: str) -> list[str]:
        return [f.category for f in diagnose_text(text).findings]

    assert "reward_hacking" in cats(said + noise)
    assert "reward_hacking" in cats(noise[:30_000] + said)  # inside the zone: still a description
    assert "reward_hacking" not in cats(noise + said)  # past it: a machine log's line, not a description
    assert "reward_hacking" in cats(noise + "# " + said)
