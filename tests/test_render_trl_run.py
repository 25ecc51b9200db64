"""The rendered TRL artifacts run as they are: real TRL 1.16 training on this CPU with a tiny local
model, started by the rendered run_trl.sh (accelerate launch + entry script), writing
<output_dir>/metrics.jsonl through the rendered callback (one JSON object per log with `step`
and TRL's raw keys). GRPO covers the reward-function path; ORPO the experimental-trainer path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.plan import Plan
from advisor.render import render_config
from rl_advisor.render_tool import write_artifacts

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    from rl_advisor.tinymodel import build_toy_workspace

    return build_toy_workspace(tmp_path_factory.mktemp("toy"))


def _run(plan: Plan, run_dir: Path) -> list[dict]:
    rendered = render_config(plan)
    write_artifacts(rendered, str(run_dir))
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", WANDB_MODE="disabled",
               PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.run(["bash", str(run_dir / "run_trl.sh")], cwd=run_dir, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = (run_dir / plan.logging.output_dir / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_rendered_grpo_trains_and_logs_jsonl(workspace, tmp_path):
    from rl_advisor.tinymodel import toy_plan

    rows = _run(toy_plan(workspace, "grpo", steps=3), tmp_path)
    steps = [r for r in rows if "reward" in r]
    assert [r["step"] for r in steps] == [1, 2, 3]
    assert all("rewards/reward_target_fraction/mean" in r and "completions/mean_length" in r for r in steps)
    assert "train_runtime" in rows[-1]  # the final summary entry is kept too


def test_rendered_orpo_experimental_script_trains(workspace, tmp_path):
    from rl_advisor.tinymodel import toy_plan

    data = toy_plan(workspace, "dpo", steps=2).model_dump(mode="json", exclude_none=True)
    data["method"] = "orpo"
    rows = _run(Plan.model_validate(data), tmp_path)
    assert [r["step"] for r in rows if "log_odds_ratio" in r] == [1, 2]
