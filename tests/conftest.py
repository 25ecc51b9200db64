"""Shared test set-up: every test gets its own rl-advisor data folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = (REPO.parent / "shared") if (REPO.parent / "shared").is_dir() else None


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("rl-advisor-home")
    monkeypatch.setenv("RL_ADVISOR_HOME", str(home))
    return home


@pytest.fixture
def shared_dir() -> Path:
    if SHARED is None:
        pytest.skip("../shared is not present beside the checkout")
    return SHARED


def example_plan_path(name: str = "grpo-qwen2.5-7b-8xh100.yaml") -> Path:
    return REPO / "examples" / "plans" / name
