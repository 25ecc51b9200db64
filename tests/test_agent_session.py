"""A realistic agent session over MCP stdio (the real SDK client), as SKILL.md prescribes:
choose method -> choose framework -> budget memory -> plan placement -> render -> launch as a dry
run -> launch a real tiny TRL run and read it back when finished -> diagnose. Every answer is
checked (benchmarks/agent_session.py) and the bytes the agent received are held under budget."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import agent_session  # noqa: E402

from tests.conftest import REPO  # noqa: E402


@pytest.mark.integration
def test_scripted_agent_session_answers_and_stays_small(tmp_path, monkeypatch):
    home = os.environ["RL_ADVISOR_HOME"]
    monkeypatch.setenv("RL_ADVISOR_ALLOWED_ROOTS", str(tmp_path))
    session = asyncio.run(agent_session.run_session(REPO, home, tmp_path / "work"))
    sizes = {s.name: s.bytes for s in session.steps}
    print("\n" + session.table(agent_session.PREVIOUS_SURFACE))
    assert list(sizes) == list(agent_session.PREVIOUS_SURFACE), "the session played every step"
    assert sizes["list tools"] <= 40 * 1024
    assert session.total < agent_session.SESSION_BUDGET, sizes
    # every step is smaller than on the previous surface (the listing by far)
    for name, before in agent_session.PREVIOUS_SURFACE.items():
        assert sizes[name] <= before, (name, sizes[name], before)
