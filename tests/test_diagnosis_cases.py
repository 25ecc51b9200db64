"""Every real case in ../shared/cases/diagnosis, diagnosed through `rl-advisor diagnose FILE --json`.

The expected category must be among the top 3 findings (the FIRST finding for log/traceback
cases); the healthy controls must get no error-level finding. The CLI is given the case's raw
file(s) exactly as listed in index.yaml.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest
import yaml

from advisor.diagnosis import category_aliases, taxonomy
from rl_advisor.cli import main as cli_main

HEALTHY = {"healthy", "healthy_false_alarm"}


def _index(shared: Path) -> list[dict]:
    return yaml.safe_load((shared / "cases" / "diagnosis" / "index.yaml").read_text())["cases"]


def _case_ids() -> list[str]:
    from tests.conftest import SHARED

    if SHARED is None:
        return ["(no shared dir)"]
    return [c["id"] for c in _index(SHARED)]


def _diagnose_cli(files: list[Path], source: str = "") -> dict:
    """``source``: the case's thread, left out of the similar-known-case search (a case is never
    evidence for itself)."""
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = cli_main(["diagnose", *map(str, files), "--json"] + (["--exclude-source", source] if source else []))
    assert code == 0
    return json.loads(buf.getvalue())


@pytest.mark.parametrize("case_id", _case_ids())
def test_case_is_diagnosed(shared_dir: Path, case_id: str) -> None:
    case = next(c for c in _index(shared_dir) if c["id"] == case_id)
    folder = shared_dir / "cases" / "diagnosis" / case_id
    result = _diagnose_cli([folder / raw for raw in case["raw_files"]], case.get("source") or "")
    findings = result["findings"]
    cats = [f["category"] for f in findings]
    expected = case["expected_diagnosis"]
    scores = [f["score"] for f in findings]
    assert scores == sorted(scores, reverse=True), "findings must come in rank order"
    if expected in HEALTHY:
        errors = [f for f in findings if f["severity"] == "error"]
        assert not errors, f"{case_id}: false alarm {[(f['category'], f['summary']) for f in errors]}"
        if expected == "healthy":
            assert result["status"] == "healthy", cats
            assert any(c["status"] == "passed" for c in result["checks"])
        else:
            assert expected in cats[:3], cats
        return
    if case["input_kind"] == "log":
        assert cats[:1] == [expected], f"{case_id}: expected {expected} first, got {cats}"
        assert findings[0]["evidence"][0]["lines"], "log findings quote the matching lines"
    else:
        assert expected in cats[:3], f"{case_id}: expected {expected} in top 3, got {cats}"
    top = next(f for f in findings if f["category"] == expected)
    assert top["evidence"] and top["likely_cause"] and top["source"]
    assert result["status"] == "problems"


def test_taxonomy_covers_every_label(shared_dir: Path) -> None:
    cats = set(taxonomy())
    aliases = category_aliases()
    for case in _index(shared_dir):
        assert case["expected_diagnosis"] in cats, case["expected_diagnosis"]
        for sec in case.get("secondary") or []:
            assert sec in aliases, f"secondary label {sec} of {case['id']} is not in the taxonomy"
    for row in taxonomy().values():
        assert row["title"] and row["description"] and row["group"]


def test_fixes_use_the_detected_framework(shared_dir: Path) -> None:
    folder = shared_dir / "cases" / "diagnosis" / "verl-2828-oom-entropy-compute-log-prob"
    result = _diagnose_cli([folder / "raw.txt"])
    assert result["framework"] == "verl"
    fixes = result["findings"][0]["fixes"]
    assert fixes and {f["framework"] for f in fixes} == {"verl"}
    assert any(f["key"] == "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu" for f in fixes)


@pytest.mark.integration
def test_console_script_json(shared_dir: Path) -> None:
    """The installed `rl-advisor` entry point, as hidden cases are run."""
    folder = shared_dir / "cases" / "diagnosis" / "verl-4262-hydra-key-n-not-in-struct"
    exe = Path(sys.executable).with_name("rl-advisor")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "rl_advisor"]
    out = subprocess.run([*cmd, "diagnose", str(folder / "raw.txt"), "--json"], capture_output=True,
                         text=True, timeout=120, check=True)
    data = json.loads(out.stdout)
    assert data["findings"][0]["category"] == "config_key_error"
    assert "actor_rollout_ref.rollout.n" in data["findings"][0]["likely_cause"]


def test_every_file_of_a_case_folder_together(shared_dir: Path) -> None:
    """Several files of one run (a log, a table extracted from it, rollout excerpts) are read as
    one run without double-counting a metric across files."""
    folder = shared_dir / "cases" / "diagnosis" / "trl-dapo-vl3b-120531-format-shortcut-zero-variance"
    files = sorted(p for p in folder.iterdir() if p.name != "case.yaml")
    result = _diagnose_cli(files)
    assert [f["category"] for f in result["findings"]][0] == "reward_hacking_shortcut"
    entropy = next(s for s in result["series"] if s["name"] == "entropy")
    assert len(entropy["values"]) == 18  # one file's 18 logs, not both files' 36
