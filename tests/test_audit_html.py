"""audit_data's HTML report: self-contained, hostile text escaped, rendered by headless chromium."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from advisor.plan import Framework, Method
from rl_advisor.audit_tool import audit_data
from tests.test_diagnosis_html import CHROMIUM, _chromium

FIX = Path(__file__).resolve().parent / "fixtures" / "audit"


def _report(tmp_path: Path, src: Path = FIX / "trl_pref_seeded.jsonl") -> Path:
    out = tmp_path / "audit.html"
    audit_data(str(src), method=Method.DPO, framework=Framework.TRL, consumer_check=False, html_report=str(out))
    return out


def test_report_is_self_contained_and_escapes_data(tmp_path: Path) -> None:
    hostile = tmp_path / "hostile.jsonl"
    rows = [{"prompt": "<script>alert(1)</script> q", "chosen": "<img src=x onerror=alert(1)>",
             "rejected": "<img src=x onerror=alert(1)>"}] * 3
    hostile.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    text = _report(tmp_path, hostile).read_text()
    assert "<script" not in text and "<img" not in text
    assert "&lt;img src=x" in text  # the identical pair's example text, escaped
    text = _report(tmp_path).read_text()
    assert text.count("<svg") >= 5  # chosen vs rejected, and one histogram per length
    assert not re.search(r"(?:src|href)=['\"](?:https?:|//|file:)", text), "report must not load anything"


@pytest.mark.integration
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/setup-system.sh)")
def test_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    out = _report(tmp_path)
    dom = _chromium(["--dump-dom", out.as_uri()], tmp_path / "profile")
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    checks = re.findall(r'class="finding" id="finding-\d+" data-check="([a-z_]+)" data-severity="([a-z]+)"', html)
    assert checks[0] == ("mixed_shapes", "error")
    assert ("length_bias", "warning") in checks and ("identical_pair", "warning") in checks
    plots = re.findall(r'class="plot" data-length="([^"]+)"', html)
    assert plots[0] == "chosen vs rejected" and {"prompt", "chosen", "rejected"} <= set(plots)
    assert html.count("<svg") == len(plots)
    assert 'id="status"' in html and "PROBLEMS" in html
    shot = tmp_path / "shot.png"
    res = _chromium([f"--screenshot={shot}", "--window-size=1200,1600", out.as_uri()], tmp_path / "profile2")
    assert res.returncode == 0, res.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
