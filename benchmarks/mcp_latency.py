"""MCP latency: rl-advisor-mcp against a minimal one-tool MCPServer, measured in the same run.

Cold start = spawn the server process over stdio, handshake, list tools and get the first tool
result. Per-tool latency = p50/p99 of repeated calls over one stdio session. The baseline is an
MCPServer with a single ``echo`` tool, so the ratio shows what rl-advisor adds on top of the SDK.

    .venv/bin/python benchmarks/mcp_latency.py [--cold 5] [--calls 50]
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
                                 env={**os.environ, "RL_ADVISOR_HOME": home})


async def _cold(args: list[str], tool: str, arguments: dict, home: str) -> float:
    start = time.perf_counter()
    async with Client(_params(args, home)) as client:
        await client.list_tools()
        result = await client.call_tool(tool, arguments)
        assert not result.is_error, result.content
    return time.perf_counter() - start


async def _warm(args: list[str], calls: list[tuple[str, dict]], n: int, home: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    async with Client(_params(args, home)) as client:
        for name, arguments in calls:
            samples = []
            for _ in range(n):
                t0 = time.perf_counter()
                result = await client.call_tool(name, arguments)
                samples.append(time.perf_counter() - t0)
                assert not result.is_error, (name, result.content)
            out[name] = samples
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cold", type=int, default=5, help="cold starts per server")
    ap.add_argument("--calls", type=int, default=50, help="warm calls per tool")
    ns = ap.parse_args()

    plan = yaml.safe_load((REPO / "examples/plans/grpo-qwen2.5-7b-8xh100.yaml").read_text())
    ours = ["-m", "rl_advisor.mcp_server"]
    with tempfile.TemporaryDirectory() as home:
        base_file = Path(home) / "baseline_server.py"
        base_file.write_text(BASELINE_SERVER)
        baseline = [str(base_file)]
        calls = [("choose_method", {"objective": {"task": "math", "data": ["prompts_with_verifier"]}}),
                 ("choose_framework", {"method": "grpo"}),
                 ("validate_plan", {"plan": plan})]
        extra = [("budget_memory", {"plan": plan}), ("render_config", {"plan": plan, "validate": False})]

        async def run() -> None:
            cold_base = [await _cold(baseline, "echo", {"text": "hi"}, home) for _ in range(ns.cold)]
            cold_ours = [await _cold(ours, "choose_method", calls[0][1], home) for _ in range(ns.cold)]
            warm_base = await _warm(baseline, [("echo", {"text": "hi"})], ns.calls, home)
            async with Client(_params(ours, home)) as c:
                names = {t.name for t in (await c.list_tools()).tools}
            warm_ours = await _warm(ours, calls + [x for x in extra if x[0] in names], ns.calls, home)

            b50 = statistics.median(cold_base)
            print(f"\nCold start (spawn -> first tool result), {ns.cold} runs each")
            print(f"{'server':<28}{'p50 s':>10}{'max s':>10}{'ratio':>10}")
            print(f"{'baseline (1-tool MCPServer)':<28}{b50:>10.3f}{max(cold_base):>10.3f}{1.0:>10.2f}")
            o50 = statistics.median(cold_ours)
            print(f"{'rl-advisor-mcp':<28}{o50:>10.3f}{max(cold_ours):>10.3f}{o50 / b50:>10.2f}")

            e = warm_base["echo"]
            e50 = _pct(e, 0.5)
            print(f"\nWarm tool calls over one stdio session, {ns.calls} calls each")
            print(f"{'tool':<28}{'p50 ms':>10}{'p99 ms':>10}{'p50 ratio':>11}")
            print(f"{'baseline echo':<28}{e50 * 1e3:>10.2f}{_pct(e, 0.99) * 1e3:>10.2f}{1.0:>11.2f}")
            for name, samples in warm_ours.items():
                p50 = _pct(samples, 0.5)
                print(f"{name:<28}{p50 * 1e3:>10.2f}{_pct(samples, 0.99) * 1e3:>10.2f}{p50 / e50:>11.2f}")

        asyncio.run(run())


if __name__ == "__main__":
    main()
