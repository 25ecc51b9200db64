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
import typing
from pathlib import Path
from typing import Any, Callable

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from mcp.types import Tool as MCPTool
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from pydantic import ValidationError

from advisor.errors import AdvisorError, FieldProblem, as_advisor_error
from advisor import bundle as paths
from rl_advisor import __version__
from rl_advisor.safe_paths import untrusted_caller
from advisor.secrets import install_log_filter
from rl_advisor import tool_surface
from rl_advisor.tools import TOOLS, ToolSpec, guarded

LISTING_FILE = Path(__file__).with_name("tool_listing.json")

INSTRUCTIONS = """rl-advisor plans, budgets, renders, launches and diagnoses LLM post-training runs
(PPO, GRPO, RLOO, REINFORCE++, DAPO, DPO, KTO, ORPO, SimPO, reward models, rejection sampling,
RLAIF) on veRL, OpenRLHF and TRL. Every tool reads or writes one framework-neutral Plan (the same
object as the CLI's --plan YAML). Typical order: choose_method -> choose_framework ->
budget_memory -> plan_placement -> render_config -> launch_run (dry run unless confirm=true) ->
run_metrics -> diagnose_run. Read the resource rl-advisor://skill first. The Plan's JSON schema is
the resource rl-advisor://schema/plan. Results are compact; pass detail=true for every field and item."""


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

    def __init__(self, *args: Any, specs: list[ToolSpec] = (), listing: list[dict] | None = None,
                 **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._specs = {s.name: s for s in specs}
        self._listing = listing

    def materialize(self, name: str) -> Any:
        """The registered tool, importing its module on first use (a fast start imports none)."""
        tool = self._tool_manager.get_tool(name)
        if tool is None and name in self._specs:
            spec = self._specs[name]
            _register(self, spec, spec.load())
            tool = self._tool_manager.get_tool(name)
        return tool

    async def list_tools(self) -> list[MCPTool]:
        if self._listing is not None:
            return [MCPTool.model_validate(d) for d in self._listing]
        for name in self._specs:
            self.materialize(name)
        return await super().list_tools()

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        tool = self.materialize(name)
        if tool is None:
            known = sorted(self._specs)
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


CALL_TIME_LIMIT_S = 60.0
"""Per-call time limit for a tool (``$RL_ADVISOR_CALL_TIMEOUT_S`` overrides it); launching and
stopping runs (which may start a Ray head or wait for a job to end) get LONG_CALL_TIME_LIMIT_S."""
LONG_CALL_TIME_LIMIT_S = 600.0
_LONG_CALLS = {"launch_run", "stop_run", "diagnose_run"}


def _time_limit(name: str) -> float:
    import os

    base = LONG_CALL_TIME_LIMIT_S if name in _LONG_CALLS else CALL_TIME_LIMIT_S
    try:
        value = float(os.environ.get("RL_ADVISOR_CALL_TIMEOUT_S", base))
    except ValueError:
        return base
    return value if value > 0 else base


def _as_mcp_tool(fn: Callable[..., Any], name: str | None = None) -> Callable[..., Any]:
    """Wrap a tool so advisor errors reach the client as structured, field-naming errors.

    Calls run as an untrusted caller (``safe_paths``): file paths a client sends are confined
    to the allowed roots (cwd, data folder, $RL_ADVISOR_ALLOWED_ROOTS) after resolving symlinks.
    A synchronous tool runs in a worker thread under a time limit (:func:`_time_limit`): past
    it the client gets an error naming the limit and the server answers others as before. (A
    Python thread cannot be killed; the inputs are bounded so the abandoned work ends too.)
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

    limit = _time_limit(name or getattr(fn, "__name__", ""))

    def run(*args: Any, **kwargs: Any) -> Any:
        with untrusted_caller():
            return inner(*args, **kwargs)

    @functools.wraps(inner)
    async def tool(*args: Any, **kwargs: Any) -> Any:
        import anyio

        try:
            with anyio.fail_after(limit):
                return await anyio.to_thread.run_sync(functools.partial(run, *args, **kwargs),
                                                      abandon_on_cancel=True)
        except TimeoutError:
            raise _tool_error(AdvisorError(
                f"the call did not finish within its time limit of {limit:g} s", field="(call)",
                allowed="smaller inputs; $RL_ADVISOR_CALL_TIMEOUT_S sets the limit")) from None
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
    if guide.is_dir():  # the topic pages and their generated tables (guide/reference/)
        for path in sorted(guide.rglob("*.md")):
            rel = path.relative_to(guide).with_suffix("").as_posix()
            entries.append((f"rl-advisor://guide/{rel}", f"guide/{rel}", str(path)))

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


def _surface_tool(spec: ToolSpec, fn: Callable[..., Any]) -> Callable[..., Any]:
    """The function the server registers for a tool: the tool's own parameters plus ``detail``,
    answering the compact view of its result (``tool_surface.compact_result``) as structured
    content and the same JSON as text."""
    inner = _as_mcp_tool(fn, spec.name)
    hints = typing.get_type_hints(fn, include_extras=True)  # keep StrictBool etc.
    sig = inspect.signature(fn)
    params = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in sig.parameters.values()]
    own_detail = "detail" in sig.parameters
    if not own_detail:
        params.append(inspect.Parameter("detail", inspect.Parameter.KEYWORD_ONLY, default=False,
                                        annotation=bool))

    def answer(result: Any, kwargs: dict[str, Any], detail: bool) -> CallToolResult:
        data = tool_surface.compact_result(result, detail=bool(detail), detail_fields=spec.detail_fields,
                                           list_limit=spec.list_limit, next_step=spec.next_step,
                                           given_plan=kwargs.get("plan"))
        text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)

    if inspect.iscoroutinefunction(inner):
        async def async_call(**kwargs: Any) -> Any:
            detail = kwargs.get("detail", False) if own_detail else kwargs.pop("detail", False)
            return answer(await inner(**kwargs), kwargs, detail)
        call: Callable[..., Any] = async_call
    else:
        def sync_call(**kwargs: Any) -> Any:
            detail = kwargs.get("detail", False) if own_detail else kwargs.pop("detail", False)
            return answer(inner(**kwargs), kwargs, detail)
        call = sync_call
    call.__name__ = spec.name
    call.__doc__ = fn.__doc__
    call.__signature__ = sig.replace(parameters=params,  # type: ignore[attr-defined]
                                     return_annotation=hints.get("return", sig.return_annotation))
    return call


def _register(server: MCPServer, spec: ToolSpec, fn: Callable[..., Any]) -> None:
    """Register one tool with slim schemas: the SDK derives them from the typed signature (and
    validates calls with the full pydantic models); tool_surface trims what is listed."""
    hints = ToolAnnotations(read_only_hint=spec.read_only, destructive_hint=spec.destructive,
                            idempotent_hint=spec.read_only)
    tool = server._tool_manager.add_tool(_surface_tool(spec, fn), name=spec.name,
                                         description=_describe(spec), annotations=hints,
                                         structured_output=True)
    tool.parameters = tool_surface.slim_input_schema(tool.parameters)
    meta = tool.fn_metadata
    meta.output_schema = tool_surface.slim_output_schema(meta.output_schema or {"type": "object"},
                                                         spec.detail_fields)
    meta.output_model = None  # the answer is the compact view, checked against output_schema in tests
    tool.__dict__.pop("output_schema", None)  # a cached_property on Tool


def _schema_resources(server: MCPServer) -> None:
    """The Plan's full JSON schema, served once instead of inside every tool definition."""

    @server.resource(tool_surface.PLAN_SCHEMA_URI, name="schema/plan", mime_type="application/json",
                     description="JSON schema of the Plan that every tool takes (the --plan YAML).")
    def plan_schema() -> str:
        from advisor.plan import Plan

        return json.dumps(Plan.model_json_schema(), indent=1)


def shipped_listing(specs: list[ToolSpec]) -> list[dict] | None:
    """The tool definitions written by ``scripts/regenerate_tool_listing.py`` (what tools/list
    answers without importing any tool module), or None when they do not belong to this code:
    another version or other tools. ``tests/test_tool_surface.py`` fails when they are stale."""
    try:
        data = json.loads(LISTING_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    tools = data.get("tools") if isinstance(data, dict) else None
    if data.get("version") != __version__ or not isinstance(tools, list) or \
            [t.get("name") for t in tools] != [s.name for s in specs]:
        return None
    return tools


def build_server(lazy: bool = True) -> MCPServer:
    """The server. ``lazy``: answer tools/list from the shipped definitions and import each tool's
    module on its first call (cold start close to a bare MCPServer); otherwise, or when the
    shipped definitions do not match, every tool is imported and its schema derived now."""
    specs = [s for s in TOOLS if not s.cli_only]
    listing = shipped_listing(specs) if lazy else None
    server = AdvisorMCPServer(name="rl-advisor", instructions=INSTRUCTIONS, version=__version__,
                              log_level="WARNING", specs=specs, listing=listing)
    if listing is None:
        for spec in specs:
            server.materialize(spec.name)
    _schema_resources(server)
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


def _describe(spec: Any) -> str:
    """The tool's one-line summary, written for the listing. The docstring's first paragraph
    mostly restated it and cost every agent its bytes on each tools/list; the docstring stays
    the detail a person reads (``rl-advisor COMMAND --help``)."""
    return spec.summary


def live_listing() -> list[dict]:
    """tools/list as derived now from the tools' signatures (every tool module imported)."""
    import asyncio

    server = build_server(lazy=False)
    tools = asyncio.run(server.list_tools())
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]


def write_listing(path: Path = LISTING_FILE) -> int:
    data = {"version": __version__, "tools": live_listing()}
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


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
    parser.add_argument("--write-listing", metavar="FILE", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.write_listing:
        return write_listing(Path(args.write_listing))
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
