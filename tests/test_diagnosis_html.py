"""The HTML report, rendered by a real headless browser (Debian's chromium)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rl_advisor.cli import main as cli_main

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)


def _chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--no-first-run", f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_report_is_self_contained(shared_dir: Path, tmp_path: Path) -> None:
    case = shared_dir / "cases" / "diagnosis" / "trl-dapo-vl3b-120531-format-shortcut-zero-variance"
    out = tmp_path / "report.html"
    assert cli_main(["diagnose", str(case / "raw_metrics_extract.txt"), "--html", str(out)]) == 0
    text = out.read_text()
    assert text.count("<svg") >= 4
    assert not re.search(r"(?:src|href)=['\"](?:https?:|//|file:)", text), "report must not load anything"
    assert "<script" not in text


@pytest.mark.integration
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/setup-system.sh)")
def test_report_renders_in_headless_chromium(shared_dir: Path, tmp_path: Path) -> None:
    case = shared_dir / "cases" / "diagnosis" / "trl-dapo-vl3b-120531-format-shortcut-zero-variance"
    out = tmp_path / "report.html"
    assert cli_main(["diagnose", str(case / "raw_metrics_extract.txt"), "--html", str(out)]) == 0
    dom = _chromium(["--dump-dom", out.as_uri()], tmp_path / "profile")
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    # the browser parsed the findings in rank order and the inline SVG plots
    cats = re.findall(r"class=\"finding\" id=\"finding-\d+\" data-category=\"([a-z_]+)\"", html)
    assert cats[0] == "reward_hacking_shortcut" and "entropy_collapse" in cats[:3]
    plots = re.findall(r"class=\"plot\" data-metric=\"([^\"]+)\"", html)
    assert {"reward_mean", "entropy", "response_length_mean"} <= set(plots)
    assert html.count("<svg") == len(plots)
    assert "#1 reward_hacking_shortcut" in html  # the plot annotation names the finding
    shot = tmp_path / "shot.png"
    res = _chromium([f"--screenshot={shot}", "--window-size=1200,1600", out.as_uri()], tmp_path / "profile2")
    assert res.returncode == 0, res.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # a real page, not a blank one
