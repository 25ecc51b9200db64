"""A realistic agent session over MCP stdio, and the bytes the agent receives at each step.

A coding agent connects to ``rl-advisor-mcp`` with the real SDK client and follows the workflow
SKILL.md prescribes: list the tools, choose a method, choose a framework, budget memory, plan the
placement, render, launch as a dry run, launch a real (tiny, CPU) TRL run and read it back once it
has finished, and diagnose it. Every step's answer is checked, and the size of what came back
(the JSON-RPC result: text content plus structured content) is recorded.

    .venv/bin/python benchmarks/agent_session.py                    # this checkout
    .venv/bin/python benchmarks/agent_session.py --server-repo DIR  # another checkout's server

The previous release's surface (commit 1b25ff3, before the slim tool surface) is the recorded
figure ``PREVIOUS_SURFACE`` below, measured with ``--server-repo`` on a worktree of that commit.
``tests/test_agent_session.py`` runs the same session and holds it under ``SESSION_BUDGET``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
SESSION_BUDGET = 120 * 1024  # bytes, listing included (issue #20)
EXAMPLE_PLAN = "examples/plans/grpo-qwen2.5-7b-8xh100.yaml"

# Measured on this machine with --server-repo on a worktree of commit 1b25ff3 (17 tools):
#   git -C . worktree add /tmp/prev 1b25ff3 && .venv/bin/python benchmarks/agent_session.py --server-repo /tmp/prev
PREVIOUS_SURFACE: dict[str, int] = {
    "list tools": 319088, "choose method": 23050, "choose framework": 8453, "budget memory": 24315,
    "plan placement": 68966, "render": 58139, "launch (dry run)": 8760, "launch (confirm)": 4374,
    "run status": 2714, "read run back": 9350, "diagnose": 21063,
}


@dataclass
class Step:
    name: str
    tool: str
    bytes: int
    seconds: float
    note: str = ""


@dataclass
class Session:
    steps: list[Step] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(s.bytes for s in self.steps)

    def table(self, previous: dict[str, int] | None = None) -> str:
        prev = previous or {}
        head = f"{'step':<22}{'tool':<20}{'bytes':>9}{'previous':>10}{'s':>7}  answer"
        lines = [head, "-" * len(head)]
        for s in self.steps:
            before = f"{prev[s.name]:>10}" if s.name in prev else f"{'':>10}"
            lines.append(f"{s.name:<22}{s.tool:<20}{s.bytes:>9}{before}{s.seconds:>7.2f}  {s.note}")
        before = f"{sum(prev.values()):>10}" if prev else f"{'':>10}"
        lines.append(f"{'total':<42}{self.total:>9}{before}")
        return "\n".join(lines)


def _size(result: Any) -> int:
    """Bytes of a result as it travels (JSON, aliases, no nulls)."""
    return len(json.dumps(result.model_dump(mode="json", by_alias=True, exclude_none=True),
                          separators=(",", ":"), ensure_ascii=False).encode())


def _data(result: Any) -> dict[str, Any]:
    if result.is_error:
        raise AssertionError(f"tool error: {result.content[0].text[:2000]}")
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


def _as_plan(value: Any) -> dict[str, Any]:
    """A Plan as a dict, from either surface (YAML text now, the typed object before)."""
    return yaml.safe_load(value) if isinstance(value, str) else value


async def play(client: Any, workspace: dict[str, Path], poll_s: float = 240.0) -> Session:
    """The session. ``client`` is a connected ``mcp.Client``; ``workspace`` a toy workspace
    (``rl_advisor.tinymodel.build_toy_workspace``) for the real run."""
    session = Session()

    async def call(step: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        t0 = time.perf_counter()
        result = await client.call_tool(tool, args)
        data = _data(result)
        session.steps.append(Step(step, tool, _size(result), time.perf_counter() - t0))
        return data

    t0 = time.perf_counter()
    listing = await client.list_tools()
    session.steps.append(Step("list tools", "tools/list", _size(listing), time.perf_counter() - t0,
                              f"{len(listing.tools)} tools"))

    method = await call("choose method", "choose_method",
                        {"objective": {"task": "math", "data": ["prompts_with_verifier"]}})
    best_method = method["ranked"][0]["method"]
    assert best_method in {"grpo", "dapo", "dr_grpo", "rloo", "reinforce_pp", "gspo"}, best_method
    session.steps[-1].note = f"best {best_method}"

    hardware = {"gpu": "H100", "gpus_per_node": 8, "nodes": 1}
    framework = await call("choose framework", "choose_framework",
                           {"method": best_method, "hardware": hardware})
    best_fw = framework["ranked"][0]["framework"]
    assert best_fw in {"verl", "openrlhf", "trl"}, best_fw
    session.steps[-1].note = f"best {best_fw}"

    plan = yaml.safe_load((REPO / EXAMPLE_PLAN).read_text())
    budget = await call("budget memory", "budget_memory", {"plan": plan})
    assert budget["fits"] is True, budget.get("verdict")
    session.steps[-1].note = f"fits: {budget['fits']}"

    placement = await call("plan placement", "plan_placement", {"plan": plan})
    placed = _as_plan(placement["best_plan"])
    assert all(placed["hardware"][k] == v for k, v in plan["hardware"].items()), placed["hardware"]
    assert placed["method"] == plan["method"]
    session.steps[-1].note = f"best {placement['best']['layout']}"
    plan = placed

    rendered = await call("render", "render_config", {"plan": plan})
    assert rendered["valid"] is True, rendered.get("validation")
    session.steps[-1].note = f"valid: {rendered['valid']}"

    dry = await call("launch (dry run)", "launch_run", {"plan": plan, "backend": "local"})
    assert dry["dry_run"] is True and dry.get("run_id") is None
    session.steps[-1].note = "dry run"

    from rl_advisor import tinymodel

    toy = tinymodel.toy_plan(workspace, "grpo", steps=3, name="session-grpo").model_dump(
        mode="json", exclude_none=True)
    launched = await call("launch (confirm)", "launch_run",
                          {"plan": toy, "backend": "local", "confirm": True})
    run_id = launched["run_id"]
    assert run_id, launched
    deadline = time.monotonic() + poll_s
    polls = 0
    while True:
        status = await call("run status", "run_status", {"run_id": run_id})
        polls += 1
        if status["state"] in ("succeeded", "failed", "stopped", "vanished"):
            break
        session.steps.pop()  # waiting polls are not what the agent reads; keep the last one
        if time.monotonic() > deadline:
            raise AssertionError(f"run {run_id} still {status['state']} after {poll_s} s")
        await asyncio.sleep(2.0)
    assert status["state"] == "succeeded", status
    session.steps[-1].note = f"{status['state']} after {polls} polls"

    metrics = await call("read run back", "run_metrics", {"run_id": run_id})
    assert metrics.get("points", metrics.get("count", 1)), metrics
    session.steps[-1].note = "metrics read"

    diagnosis = await call("diagnose", "diagnose_run", {"run_id": run_id})
    assert "findings" in diagnosis or "healthy" in diagnosis, diagnosis
    session.steps[-1].note = (f"{len(diagnosis.get('findings', []))} findings shown"
                              + (f", {diagnosis['more']} more" if diagnosis.get("more") else ""))
    return session


def server_params(server_repo: Path, home: str) -> Any:
    from mcp import StdioServerParameters

    env = {**os.environ, "RL_ADVISOR_HOME": home, "PYTHONPATH": str(server_repo)}
    return StdioServerParameters(command=sys.executable, args=["-m", "rl_advisor.mcp_server"],
                                 env=env, cwd=str(server_repo))


async def run_session(server_repo: Path, home: str, workdir: Path) -> Session:
    from mcp import Client

    from rl_advisor import tinymodel

    workspace = tinymodel.build_toy_workspace(workdir)
    async with Client(server_params(server_repo, home)) as client:
        return await play(client, workspace)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server-repo", type=Path, default=REPO,
                    help="checkout whose rl_advisor.mcp_server to run (default: this one)")
    ap.add_argument("--json", action="store_true", help="print the steps as JSON")
    ns = ap.parse_args()
    with tempfile.TemporaryDirectory() as home:
        # launch_run confines files to the working folder: run the session from inside the temp dir
        work = Path(home) / "work"
        work.mkdir()
        os.environ["RL_ADVISOR_ALLOWED_ROOTS"] = home
        session = asyncio.run(run_session(ns.server_repo.resolve(), home, work))
    if ns.json:
        print(json.dumps({s.name: s.bytes for s in session.steps}, indent=1))
        return
    previous = PREVIOUS_SURFACE if ns.server_repo.resolve() == REPO else None
    print(f"Agent session over stdio ({ns.server_repo}), bytes received per step")
    print(session.table(previous))
    verdict = "under" if session.total < SESSION_BUDGET else "OVER"
    print(f"\ntotal {session.total / 1024:.1f} KB: {verdict} the {SESSION_BUDGET // 1024} KB budget")
    if previous:
        print(f"previous surface {sum(previous.values()) / 1024:.1f} KB "
              f"({sum(previous.values()) / max(session.total, 1):.1f}x this one)")


if __name__ == "__main__":
    main()
