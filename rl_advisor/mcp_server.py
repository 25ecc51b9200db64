"""rl-advisor-mcp: the MCP server (stdio by default, Streamable HTTP on 127.0.0.1 on request).

Tools come from ``rl_advisor.tools.TOOLS``; resources serve SKILL.md, examples.md and every
guide/ file; one prompt walks an agent through plan -> render -> launch -> diagnose.

In stdio mode stdout is the protocol: nothing else may print there. Logging goes to stderr and
backends capture their subprocesses' output to files.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import json
import logging
import sys
from typing import Any, Callable

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from pydantic import ValidationError

from advisor.errors import AdvisorError, FieldProblem, as_advisor_error
from rl_advisor import __version__, paths
from rl_advisor.safe_paths import untrusted_caller
from advisor.secrets import install_log_filter
from rl_advisor.tools import available_tools, guarded

INSTRUCTIONS = """rl-advisor plans, budgets, renders, launches and diagnoses LLM post-training runs
(PPO, GRPO, RLOO, REINFORCE++, DAPO, DPO, KTO, ORPO, SimPO, reward models, rejection sampling,
RLAIF) on veRL, OpenRLHF and TRL. Every tool reads or writes one framework-neutral Plan (the same
object as the CLI's --plan YAML). Typical order: choose_method -> choose_framework ->
budget_memory -> plan_placement -> render_config -> launch_run (dry run unless confirm=true) ->
run_metrics -> diagnose_run. Read the resource rl-advisor://skill first."""


class AdvisorToolError(ToolError):
    """A ToolError carrying the structured ``AdvisorError`` payload (field, value, allowed)."""

    def __init__(self, payload: dict[str, Any]):
        self.payload = payload
        super().__init__(json.dumps(payload, sort_keys=True))


def _tool_error(exc: AdvisorError) -> ToolError:
    return AdvisorToolError(exc.to_dict())


class AdvisorMCPServer(MCPServer):
    """MCPServer whose every rejected call answers the same JSON: ``{"error", "problems": [{field,...}]}``.

    The SDK reports argument-validation failures as pydantic's plain text behind an "Error
    executing tool" prefix and silently drops unknown argument names; an agent then has to
    parse prose. Here unknown names, schema failures and AdvisorErrors raised inside a tool
    all become one payload naming the field (the text of an ``isError`` result). Crashes
    (UnexpectedToolError) are left to the SDK, which hides their text from the client.
    """

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        tool = self._tool_manager.get_tool(name)
        if tool is None:
            known = sorted(t.name for t in self._tool_manager.list_tools())
            raise AdvisorToolError(AdvisorError("unknown tool", field="name", value=name,
                                                allowed=", ".join(known)).to_dict())
        allowed = set((tool.parameters or {}).get("properties", {}))
        unknown = sorted(k for k in (arguments or {}) if k not in allowed)
        if unknown:
            raise AdvisorToolError(AdvisorError([
                FieldProblem(field=str(k) or "\"\"", value=None, message="unknown argument",
                             allowed=", ".join(sorted(allowed)) or "no arguments")
                for k in unknown]).to_dict())
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, AdvisorToolError):
                raise AdvisorToolError(cause.payload) from None
            if isinstance(cause, ValidationError):
                raise AdvisorToolError(as_advisor_error(cause).to_dict()) from None
            raise


def _as_mcp_tool(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a tool so advisor errors reach the client as structured, field-naming errors.

    Calls run as an untrusted caller (``safe_paths``): file paths a client sends are confined
    to the allowed roots (cwd, data folder, $RL_ADVISOR_ALLOWED_ROOTS) after resolving symlinks.
    """
    inner = guarded(fn)

    if inspect.iscoroutinefunction(inner):
        @functools.wraps(inner)
        async def async_tool(*args: Any, **kwargs: Any) -> Any:
            try:
                with untrusted_caller():
                    return await inner(*args, **kwargs)
            except AdvisorError as exc:
                raise _tool_error(exc) from None
        return async_tool

    @functools.wraps(inner)
    def tool(*args: Any, **kwargs: Any) -> Any:
        try:
            with untrusted_caller():
                return inner(*args, **kwargs)
        except AdvisorError as exc:
            raise _tool_error(exc) from None
    return tool


def _doc_resources(server: MCPServer) -> None:
    """Serve SKILL.md, examples.md and guide/*.md as resources (read fresh on each request)."""
    entries: list[tuple[str, str, str]] = []
    try:
        root = paths.bundle_root()
    except FileNotFoundError:
        return
    for label, path in (("skill", root / "SKILL.md"), ("examples", root / "examples.md")):
        if path.is_file():
            entries.append((f"rl-advisor://{label}", label, str(path)))
    guide = root / "guide"
    if guide.is_dir():
        for path in sorted(guide.glob("*.md")):
            entries.append((f"rl-advisor://guide/{path.stem}", f"guide/{path.stem}", str(path)))

    def make_reader(file: str) -> Callable[[], str]:
        # A zero-argument handler: the SDK rejects parameters on a URI without {variables}.
        def reader() -> str:
            with open(file, encoding="utf-8") as fh:
                return fh.read()
        return reader

    for uri, name, file in entries:
        reader = make_reader(file)
        reader.__name__ = f"read_{name.replace('/', '_').replace('-', '_')}"
        server.resource(uri, name=name, mime_type="text/markdown",
                        description=f"rl-advisor {name}")(reader)


def build_server() -> MCPServer:
    server = AdvisorMCPServer(name="rl-advisor", instructions=INSTRUCTIONS, version=__version__,
                              log_level="WARNING")
    for spec, fn in available_tools():
        if spec.cli_only:
            continue
        hints = ToolAnnotations(read_only_hint=spec.read_only, destructive_hint=spec.destructive,
                                idempotent_hint=spec.read_only)
        server.add_tool(_as_mcp_tool(fn), name=spec.name, description=_describe(spec, fn),
                        annotations=hints, structured_output=True)
    _doc_resources(server)

    @server.prompt(name="post_training_run",
                   description="Walk through plan -> budget -> place -> render -> launch -> diagnose.")
    def post_training_run(goal: str = "GRPO on a 7B model for math", gpus: str = "8xH100") -> str:
        return (
            f"Goal: {goal}. Hardware: {gpus}.\n"
            "1. Call choose_method with the objective (task, data that exists, budget).\n"
            "2. Call choose_framework with the chosen method and the hardware.\n"
            "3. Write a Plan (see the rl-advisor://skill resource for its YAML form) and call "
            "budget_memory; apply the first fix of the ladder until every pool fits.\n"
            "4. Call plan_placement to pick the layout and parallelism; copy its placement into "
            "the Plan.\n"
            "5. Call render_config; the artifacts are validated against the framework's own schema.\n"
            "6. Call launch_run with confirm=false to review, then confirm=true to launch.\n"
            "7. Poll run_status / run_metrics, then call diagnose_run on the run id and apply the "
            "exact keys it names. A rising reward is not success: check KL, entropy, length and eval."
        )

    return server


def _describe(spec: Any, fn: Callable[..., Any]) -> str:
    doc = inspect.getdoc(fn) or ""
    first = doc.split("\n\n", 1)[0].replace("\n", " ").strip()
    return spec.summary if not first else f"{spec.summary} {first}" if first != spec.summary else first


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rl-advisor-mcp", description="rl-advisor MCP server")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1",
                        help="HTTP bind address (default loopback; anything else needs a token)")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--require-token", action="store_true",
                        help="HTTP: require the bearer token on loopback too (shared machines)")
    parser.add_argument("--allowed-origin", action="append", default=[], metavar="ORIGIN",
                        help="HTTP: also accept browser requests from this Origin (repeatable)")
    parser.add_argument("--allowed-host", action="append", default=[], metavar="HOST:PORT",
                        help="HTTP: also accept this Host header, e.g. a proxy name (repeatable)")
    parser.add_argument("--version", action="version", version=__version__)
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    install_log_filter()  # credentials never reach the server's log
    server = build_server()
    if args.transport == "stdio":
        server.run()
        return 0
    from rl_advisor.http_transport import serve_http

    return serve_http(server, host=args.host, port=args.port,
                      require_token=True if args.require_token else None,
                      allowed_origins=args.allowed_origin, allowed_hosts=args.allowed_host)


if __name__ == "__main__":
    raise SystemExit(main())
