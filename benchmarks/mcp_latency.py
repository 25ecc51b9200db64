"""MCP latency: rl-advisor-mcp against a minimal one-tool MCPServer, measured in the same run.

Cold start = spawn the server process over stdio, initialize, and get the ``tools/list`` answer
(what an agent waits for before it can plan); the first tool result after that is reported too
(it pays the import of that tool's module). Warm latency = p50/p99 of repeated calls of every
tool over one stdio session (compact results, the default). The baseline is an MCPServer with a
single ``echo`` tool, so the ratio shows what rl-advisor adds on top of the SDK. Issue #20's
target: cold start <= 1.3x the baseline.

    .venv/bin/python benchmarks/mcp_latency.py [--cold 7] [--calls 30]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import yaml
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parent.parent

BASELINE_SERVER = textwrap.dedent('''
    from mcp.server.mcpserver import MCPServer
    server = MCPServer(name="baseline")
    @server.tool()
    def echo(text: str) -> str:
        return text
    server.run()
''')


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    idx = min(len(values) - 1, max(0, round(q * (len(values) - 1))))
    return values[idx]


def _params(args: list[str], home: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=args, cwd=str(REPO),
                                 env={**os.environ, "RL_ADVISOR_HOME": home, "PYTHONPATH": str(REPO)})


async def _cold(args: list[str], tool: str, arguments: dict, home: str) -> tuple[float, float]:
    """(spawn -> tools/list answered, spawn -> first tool result)."""
    start = time.perf_counter()
    async with Client(_params(args, home)) as client:
        await client.list_tools()
        listed = time.perf_counter() - start
        result = await client.call_tool(tool, arguments)
        assert not result.is_error, result.content
    return listed, time.perf_counter() - start


async def _warm(args: list[str], calls: list[tuple[str, dict]], n: int, home: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    async with Client(_params(args, home)) as client:
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)  # first call imports the module
            assert not result.is_error, (name, result.content)
            samples = []
            for _ in range(n):
                t0 = time.perf_counter()
                result = await client.call_tool(name, arguments)
                samples.append(time.perf_counter() - t0)
                assert not result.is_error, (name, result.content)
            out[name] = samples
    return out


def _finished_run(home: str) -> str:
    """A finished local run in the benchmark's registry, for run_status/run_logs/run_metrics/stop_run."""
    os.environ["RL_ADVISOR_HOME"] = home
    from backends.local import LocalBackend
    from backends.protocol import LaunchSpec, RunRecord, RunState, utcnow
    from backends.registry import RunRegistry, new_run_id, runs_root

    run_id = new_run_id("bench")
    run_dir = runs_root() / run_id
    spec = LaunchSpec(run_id=run_id, name="bench", framework="trl", run_dir=str(run_dir),
                      working_dir=str(run_dir / "work"),
                      entrypoint=[sys.executable, "-c", "print('step 1 loss 0.5', flush=True)"])
    now = utcnow()
    reg = RunRegistry()
    reg.create(RunRecord(run_id=run_id, name="bench", created_at=now, updated_at=now, backend="local",
                         framework="trl", method="grpo", state=RunState.PENDING, run_dir=str(run_dir),
                         log_paths={"console": str(run_dir / "console.log")}))
    reg.update_ids(run_id, LocalBackend().submit(spec))
    deadline = time.monotonic() + 60
    while not (run_dir / "exit.json").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    return run_id


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cold", type=int, default=7, help="cold starts per server (interleaved)")
    ap.add_argument("--calls", type=int, default=30, help="warm calls per tool")
    ns = ap.parse_args()

    plan = yaml.safe_load((REPO / "examples/plans/grpo-qwen2.5-7b-8xh100.yaml").read_text())
    verl_cmd = ("python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo "
                "actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct trainer.n_gpus_per_node=1")
    ours = ["-m", "rl_advisor.mcp_server"]
    with tempfile.TemporaryDirectory() as home:
        base_file = Path(home) / "baseline_server.py"
        base_file.write_text(BASELINE_SERVER)
        baseline = [str(base_file)]
        run_id = _finished_run(home)
        metrics = [{"step": s, "values": {"reward": 0.1 * s, "kl": 0.01 * s, "entropy": 1.0 - 0.05 * s}}
                   for s in range(1, 11)]
        calls = [
            ("validate_plan", {"plan": plan}),
            ("choose_method", {"objective": {"task": "math", "data": ["prompts_with_verifier"]}}),
            ("choose_framework", {"method": "grpo"}),
            ("list_catalog", {"kind": "gpus"}),
            ("import_config", {"text": verl_cmd}),
            ("budget_memory", {"plan": plan}),
            ("budget_memory_from_config", {"text": verl_cmd, "gpu": "H100"}),
            ("plan_placement", {"plan": plan}),
            ("render_config", {"plan": plan, "validate": False}),
            ("translate_config", {"text": verl_cmd, "to_framework": "openrlhf", "validate": False}),
            ("launch_run", {"plan": plan}),
            ("run_status", {"run_id": run_id}),
            ("run_logs", {"run_id": run_id}),
            ("run_metrics", {"run_id": run_id}),
            ("stop_run", {"run_id": run_id}),
            ("list_runs", {}),
            ("diagnose_run", {"metrics": metrics}),
        ]

        async def run() -> None:
            async with Client(_params(ours, home)) as c:
                names = {t.name for t in (await c.list_tools()).tools}
            cold_base, cold_ours = [], []
            for _ in range(ns.cold):  # interleaved, so load on the machine hits both alike
                cold_base.append(await _cold(baseline, "echo", {"text": "hi"}, home))
                cold_ours.append(await _cold(ours, "choose_method", calls[1][1], home))
            warm_base = await _warm(baseline, [("echo", {"text": "hi"})], ns.calls, home)
            warm_ours = await _warm(ours, [c for c in calls if c[0] in names], ns.calls, home)
            untimed = sorted(names - {c[0] for c in calls})

            b_list = statistics.median(x[0] for x in cold_base)
            b_first = statistics.median(x[1] for x in cold_base)
            o_list = statistics.median(x[0] for x in cold_ours)
            o_first = statistics.median(x[1] for x in cold_ours)
            print(f"\nCold start over stdio, median of {ns.cold} interleaved runs each")
            print(f"{'server':<28}{'tools/list s':>14}{'ratio':>8}{'first result s':>16}{'ratio':>8}")
            print(f"{'baseline (1-tool MCPServer)':<28}{b_list:>14.3f}{1.0:>8.2f}{b_first:>16.3f}{1.0:>8.2f}")
            print(f"{'rl-advisor-mcp':<28}{o_list:>14.3f}{o_list / b_list:>8.2f}{o_first:>16.3f}"
                  f"{o_first / b_first:>8.2f}")
            verdict = "meets" if o_list / b_list <= 1.3 else "MISSES"
            print(f"cold start to tools/list: {o_list / b_list:.2f}x the baseline ({verdict} the 1.3x target)")

            e = warm_base["echo"]
            e50 = _pct(e, 0.5)
            print(f"\nWarm tool calls over one stdio session, {ns.calls} calls each (compact results)")
            print(f"{'tool':<28}{'p50 ms':>10}{'p99 ms':>10}{'p50 ratio':>11}")
            print(f"{'baseline echo':<28}{e50 * 1e3:>10.2f}{_pct(e, 0.99) * 1e3:>10.2f}{1.0:>11.2f}")
            for name, samples in warm_ours.items():
                p50 = _pct(samples, 0.5)
                print(f"{name:<28}{p50 * 1e3:>10.2f}{_pct(samples, 0.99) * 1e3:>10.2f}{p50 / e50:>11.2f}")
            if untimed:
                print(f"not timed (no call prepared): {', '.join(untimed)}")

        asyncio.run(run())


if __name__ == "__main__":
    main()
