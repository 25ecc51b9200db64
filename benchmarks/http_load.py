"""Bounded load test of the Streamable HTTP transport on loopback, against a one-tool baseline.

Starts two servers on free 127.0.0.1 ports, each in its own process:

* ``rl-advisor-mcp --transport http`` (our server; ``--token`` adds ``--require-token`` so the
  bearer-token middleware is on the path), called with ``validate_plan`` on the example Plan;
* a minimal MCPServer with one ``echo`` tool (the SDK alone), called with ``echo``.

Against each, ``--clients`` MCP clients (``mcp.Client`` over Streamable HTTP, each with its own
HTTP connection pool) connect at once and make ``--calls`` tool calls each, all concurrently.
Reports connect (handshake + tools/list) and per-call latency p50/p99/max, throughput and errors, with the
ratio ours/baseline. Exits 1 on any error. Everything is bounded by ``--timeout``.

    .venv/bin/python benchmarks/http_load.py [--clients 100] [--calls 10] [--token]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent

BASELINE_SERVER = textwrap.dedent('''
    import sys, uvicorn
    from mcp.server.mcpserver import MCPServer
    server = MCPServer(name="baseline", log_level="WARNING")
    @server.tool()
    def echo(text: str) -> str:
        return text
    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[1]),
                log_level="warning")
''')


@dataclass
class Run:
    name: str
    connect_s: list[float] = field(default_factory=list)
    call_s: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    wall_s: float = 0.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, max(0, round(q * (len(values) - 1))))]


def start(args: list[str], port: int, env: dict[str, str]) -> subprocess.Popen:
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, cwd=REPO)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server {args} exited: {proc.stderr.read()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"server {args} did not listen on {port}")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def one_client(run: Run, url: str, tool: str, arguments: dict[str, Any], calls: int,
                     headers: dict[str, str], gate: asyncio.Event) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    await gate.wait()  # every client starts at the same moment
    try:
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            t0 = time.perf_counter()
            async with Client(streamable_http_client(url, http_client=http)) as client:
                # an agent lists the tools first; the client also needs their output schemas
                await client.list_tools()
                run.connect_s.append(time.perf_counter() - t0)
                for _ in range(calls):
                    t = time.perf_counter()
                    result = await client.call_tool(tool, arguments)
                    run.call_s.append(time.perf_counter() - t)
                    if result.is_error:
                        run.errors.append(f"{tool}: {result.content[0].text[:200]}")
    except Exception as exc:  # counted, not raised: the table reports every failure
        run.errors.append(f"{type(exc).__name__}: {str(exc)[:200]}")


async def load(run: Run, url: str, tool: str, arguments: dict[str, Any], clients: int,
               calls: int, headers: dict[str, str], timeout: float, start_at: float) -> None:
    gate = asyncio.Event()
    tasks = [asyncio.create_task(one_client(run, url, tool, arguments, calls, headers, gate))
             for _ in range(clients)]
    await asyncio.sleep(max(0.0, start_at - time.time()))
    t0 = time.perf_counter()
    gate.set()
    done, pending = await asyncio.wait(tasks, timeout=timeout)
    for task in pending:
        task.cancel()
        run.errors.append("client did not finish within --timeout")
    run.wall_s = time.perf_counter() - t0


def _worker(name: str, url: str, tool: str, arguments: dict[str, Any], clients: int, calls: int,
            headers: dict[str, str], timeout: float, start_at: float) -> Run:
    run = Run(name)
    asyncio.run(load(run, url, tool, arguments, clients, calls, headers, timeout, start_at))
    return run


def drive(name: str, url: str, tool: str, arguments: dict[str, Any], clients: int, calls: int,
          headers: dict[str, str], timeout: float, procs: int) -> Run:
    """Split the clients over ``procs`` load-generator processes that all start at one instant,
    so one generator's event loop (busy parsing a tools/list) does not stretch every latency."""
    from concurrent.futures import ProcessPoolExecutor

    shares = [clients // procs + (1 if i < clients % procs else 0) for i in range(procs)]
    start_at = time.time() + 3.0 + 0.5 * procs  # time for the workers to import and set up
    with ProcessPoolExecutor(max_workers=procs) as pool:
        futures = [pool.submit(_worker, name, url, tool, arguments, n, calls, headers, timeout,
                               start_at) for n in shares if n]
        parts = [f.result() for f in futures]
    total = Run(name)
    for part in parts:
        total.connect_s += part.connect_s
        total.call_s += part.call_s
        total.errors += part.errors
        total.wall_s = max(total.wall_s, part.wall_s)
    return total


def table(runs: list[Run], clients: int, calls: int) -> str:
    ours, base = runs
    rows = [("connect+list p50 ms", [pct(r.connect_s, .5) * 1e3 for r in runs]),
            ("connect+list p99 ms", [pct(r.connect_s, .99) * 1e3 for r in runs]),
            ("call p50 (ms)", [pct(r.call_s, .5) * 1e3 for r in runs]),
            ("call p99 (ms)", [pct(r.call_s, .99) * 1e3 for r in runs]),
            ("call max (ms)", [max(r.call_s, default=float("nan")) * 1e3 for r in runs]),
            ("calls/s", [len(r.call_s) / r.wall_s if r.wall_s else float("nan") for r in runs]),
            ("calls done", [float(len(r.call_s)) for r in runs]),
            ("errors", [float(len(r.errors)) for r in runs])]
    out = [f"Streamable HTTP on loopback: {clients} concurrent clients x {calls} calls "
           f"(client processes share this machine's cores with the server)",
           f"{'metric':<18} {ours.name:>22} {base.name:>22} {'ratio':>7}"]
    for label, (a, b) in rows:
        ratio = a / b if b else float("nan")
        out.append(f"{label:<18} {a:>22.1f} {b:>22.1f} {ratio:>7.2f}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--calls", type=int, default=10, help="tool calls per client")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per server, at most")
    parser.add_argument("--token", action="store_true", help="run ours with --require-token")
    parser.add_argument("--procs", type=int, default=4, help="load-generator processes")
    parser.add_argument("--json", action="store_true", help="also print the raw numbers as JSON")
    args = parser.parse_args(argv)

    plan = yaml.safe_load((REPO / "examples" / "plans" / "grpo-qwen2.5-7b-8xh100.yaml").read_text())
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="rl-advisor-http-load-") as home:
        env = {**os.environ, "RL_ADVISOR_HOME": home}
        env.pop("RL_ADVISOR_TOKEN", None)
        port = free_port()
        cmd = [sys.executable, "-m", "rl_advisor.mcp_server", "--transport", "http", "--port", str(port)]
        proc = start(cmd + (["--require-token"] if args.token else []), port, env)
        try:
            headers = {}
            if args.token:
                headers = {"Authorization": "Bearer " + (Path(home) / "http-token").read_text().strip()}
            runs.append(drive("rl-advisor validate_plan" + (" +token" if args.token else ""),
                              f"http://127.0.0.1:{port}/mcp", "validate_plan", {"plan": plan},
                              args.clients, args.calls, headers, args.timeout, args.procs))
        finally:
            stop(proc)
        port = free_port()
        proc = start([sys.executable, "-c", BASELINE_SERVER, str(port)], port, env)
        try:
            runs.append(drive("baseline echo", f"http://127.0.0.1:{port}/mcp", "echo",
                              {"text": "hi"}, args.clients, args.calls, {}, args.timeout, args.procs))
        finally:
            stop(proc)

    print(table(runs, args.clients, args.calls))
    for run in runs:
        for err in run.errors[:5]:
            print(f"  {run.name}: {err}", file=sys.stderr)
    if args.json:
        print(json.dumps({r.name: {"connect_s": r.connect_s, "call_s": r.call_s,
                                   "errors": r.errors, "wall_s": r.wall_s} for r in runs}))
    return 1 if any(r.errors for r in runs) else 0


if __name__ == "__main__":
    raise SystemExit(main())
