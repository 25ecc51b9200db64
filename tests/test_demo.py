"""`rl-advisor demo` end to end (real TRL training on this CPU), as `make demo` runs it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rl_advisor.commands.demo import ProgressBar

@pytest.mark.integration
def test_demo_runs_the_whole_loop(tmp_path: Path) -> None:
    pytest.importorskip("trl")
    out = tmp_path / "report.html"
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "rl_advisor.cli", "demo", "--steps", "10",
                           "--out", str(out)], capture_output=True, text=True, timeout=400,
                          env={**os.environ}, cwd=tmp_path)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    text = proc.stdout
    for marker in ("[1/8]", "[4/8]", "[5/8]", "[7/8]", "[8/8]", "succeeded"):
        assert marker in text, text
    assert "step  10/10" in proc.stderr  # the progress bar reached the end (on stderr)
    assert "reward_mean" in text and "metric points" in text
    assert "audit_data prompts.jsonl: clean, 64 rows" in text  # the toy data passed the data audit
    html = out.read_text()
    assert "<svg" in html or "<img" in html  # metric plots
    assert elapsed < 180, f"demo took {elapsed:.0f}s (budget: 3 minutes on 2 cores)"


def test_progress_bar_lines_when_not_a_terminal(tmp_path: Path) -> None:
    sink = (tmp_path / "bar.txt").open("w")
    bar = ProgressBar(10, stream=sink)
    for s in range(0, 11):
        bar.update(s, "running", {"reward_mean": s / 10, "loss": 1.0})
    bar.close()
    sink.close()
    lines = (tmp_path / "bar.txt").read_text().splitlines()
    assert len(lines) == 3 and "step  10/10" in lines[-1] and "reward 1" in lines[-1]
