"""MCP servers as review tools (spec §7.3): the only async code in ocr-hook.

Configuration (``mcp.servers``: models, validation, ``${NAME}`` expansion) lives in
:mod:`.servers`; its public names are re-exported here.

Runtime: :class:`McpBridge` runs one anyio event loop in a daemon thread (``ocr-mcp``) with a
``BlockingPortal``; every server lives in one task of that loop (set-up command ≤ 5 min, then
transport start-up and MCP handshake ≤ 30 s, as OCR), and the review's worker threads call
``call_tool`` synchronously through the portal, sharing one session per server. A server that
fails is a warning and its tools are absent. Stdio output is decoded with ``replace``: a line
that is not JSON-RPC (invalid UTF-8 included) is ignored with one warning, never the end of the
session. A call that finds the session closed marks the server dead: one warning names it, its
tools report ``alive() == False`` (the registry withdraws them) and later calls fail at once.
A stdio server's stderr goes to a private
temporary file, never to the hook's output; its last line is quoted when start-up fails. The
child environment is the SDK's minimal one (HOME, LOGNAME, PATH, SHELL, TERM, USER) plus
``env``. ``mcp``, ``anyio`` and ``httpx2`` are imported only inside the functions that run
servers, so a review without MCP servers never loads them (tests/e2e/test_startup.py). The SDK
is the optional extra ``ocr-hook[mcp]``: without it, configured servers are one warning naming
the install command (:data:`INSTALL_HINT`) and the review goes on without their tools.

Tool results are converted to text for the model (:func:`result_text`): text blocks verbatim,
embedded text resources with their URI, images/audio/binary resources as a one-line
placeholder, ``structured_content`` as JSON when there is no other content; at most 128 KiB.
"""

from __future__ import annotations

import concurrent.futures
import logging
import math
import os
import tempfile
import threading
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ... import __version__, git
from ...llm import ToolSpec
from ..registry import ExternalTool, ToolResult
from .servers import (
    HttpServer,
    McpServer,
    StdioServer,
    argv_text,
    describe_server,
    expand_vars,
    parse_servers,
)
from .text import (
    RESULT_MAX_CHARS,
    ServerFailed,
    bad_line,
    describe,
    result_text,
    session_closed,
    stderr_tail,
)

__all__ = [
    "CALL_TIMEOUT_S", "INSTALL_HINT", "RESULT_MAX_CHARS", "HttpServer", "McpBridge", "McpServer",
    "StdioServer",
    "describe_server", "expand_vars", "parse_servers", "result_text", "sdk_missing",
]

if TYPE_CHECKING:
    from anyio.from_thread import BlockingPortal

log = logging.getLogger(__name__)

SETUP_TIMEOUT_S = 300.0  # spec §7.3: set-up commands time out after 5 minutes (OCR)
STARTUP_TIMEOUT_S = 30.0  # spec §7.3: transport start-up + handshake (OCR)
CALL_TIMEOUT_S = 60.0  # one tools/call round trip (ours)
CLOSE_TIMEOUT_S = 10.0  # stdio shutdown: close stdin, 2 s, SIGTERM, 2 s, SIGKILL (SDK)
MAX_LIST_PAGES = 50  # tools/list pagination bound
INSTALL_HINT = "pip install 'ocr-hook[mcp]'"  # the extra that brings the MCP SDK (pyproject)


def sdk_missing() -> str:
    """The name of the first MCP SDK package (``mcp``, ``mcp_types``, ``anyio``) that cannot be
    imported, or "" when the SDK is installed. Imports them: call it only with servers."""
    for name in ("mcp", "mcp_types", "anyio"):
        try:
            __import__(name)
        except ImportError:
            return name
    return ""


@dataclass
class _Live:
    """A running server: its client (an ``mcp.Client``) and the event that ends its task."""

    client: Any
    stop: Any
    tools: list[Any]
    errlog: IO[bytes] | None = None


class McpBridge:
    """MCP servers of one run, started once, shared by the worker threads, closed at the end.

    ``start()`` starts the loop thread and every server in parallel and waits for each to be
    ready or to fail; afterwards ``tools()`` lists the allowed tools of the live servers as
    ``ExternalTool`` values and ``warnings`` holds ``(server, message)`` pairs. ``call_tool``
    is thread-safe. ``close()`` (idempotent) stops the servers and the loop. The bridge is
    built (cheaply, nothing imported) by ``pipeline.mcp_bridge`` for ``cli`` and started by
    ``pipeline.llm_stage`` only when a review reaches the tool loop, so previews, empty changes
    and cache hits start no server.
    """

    def __init__(
        self,
        servers: Mapping[str, StdioServer | HttpServer],
        *,
        cwd: Path,
        environ: Mapping[str, str],
        setup_timeout_s: float = SETUP_TIMEOUT_S,
        startup_timeout_s: float = STARTUP_TIMEOUT_S,
        call_timeout_s: float = CALL_TIMEOUT_S,
        notes: Sequence[tuple[str, str]] = (),
    ) -> None:
        self.servers = dict(servers)
        self.notes = list(notes)
        self.cwd = cwd
        self.environ = environ
        self.setup_timeout_s = setup_timeout_s
        self.startup_timeout_s = startup_timeout_s
        self.call_timeout_s = call_timeout_s
        self.warnings: list[tuple[str, str]] = []
        self._live: dict[str, _Live] = {}
        self._dead: dict[str, str] = {}  # server -> why its session ended during the review
        self._bad_lines: set[str] = set()  # servers that wrote a line that is not JSON-RPC
        self._tasks: list[concurrent.futures.Future[None]] = []
        self._portal: BlockingPortal | None = None
        self._thread: threading.Thread | None = None
        self._started = False
        self._lock = threading.Lock()

    # -- life cycle (sync side) -------------------------------------------------------------

    def start(self) -> McpBridge:
        """Start the loop thread and all servers; returns self. Never raises for a server.
        The ``notes`` given at construction (servers not allowed to run) become warnings
        first. Idempotent; with no servers, nothing is imported or started."""
        if self._started:
            return self
        self._started = True
        for server, message in self.notes:
            self._warn(server, message)
        if not self.servers:
            return self
        missing = sdk_missing()
        if missing:
            self._warn("", f"MCP servers not started: {', '.join(self.servers)}; the MCP SDK is"
                           f" not installed (no module {missing!r}): {INSTALL_HINT}")
            return self
        mcp_log = logging.getLogger("mcp")
        if not mcp_log.handlers:  # keep SDK log records off stderr (no last-resort handler)
            mcp_log.addHandler(logging.NullHandler())
        portal = self._start_loop()
        started: dict[str, concurrent.futures.Future[_Live]] = {}
        for name, spec in self.servers.items():
            fut: concurrent.futures.Future[_Live] = concurrent.futures.Future()
            started[name] = fut
            self._tasks.append(portal.start_task_soon(self._serve, name, spec, fut))
        bound = self.setup_timeout_s + self.startup_timeout_s + CLOSE_TIMEOUT_S
        for name, fut in started.items():
            try:
                self._live[name] = fut.result(timeout=bound)
            except BaseException as e:  # noqa: BLE001 - a failed server is a warning
                self._warn(name, f"MCP server {name!r} not started: {describe(e)}")
        return self

    def _start_loop(self) -> BlockingPortal:
        import anyio
        from anyio.from_thread import BlockingPortal

        ready: concurrent.futures.Future[BlockingPortal] = concurrent.futures.Future()

        async def serve() -> None:
            async with BlockingPortal() as portal:
                ready.set_result(portal)
                await portal.sleep_until_stopped()

        def run() -> None:
            try:
                anyio.run(serve)
            except BaseException as e:  # noqa: BLE001 - reported through `ready`
                if not ready.done():
                    ready.set_exception(e)
                log.debug("MCP event loop ended with an error", exc_info=True)

        self._thread = threading.Thread(target=run, name="ocr-mcp", daemon=True)
        self._thread.start()
        self._portal = ready.result(timeout=STARTUP_TIMEOUT_S)
        return self._portal

    def close(self) -> None:
        """Stop every server (each closes its transport: stdio servers get EOF, then signals),
        then the loop; bounded by CLOSE_TIMEOUT_S. Idempotent."""
        portal, self._portal = self._portal, None
        if portal is None:
            return
        for live in self._live.values():
            try:
                portal.call(live.stop.set)
            except Exception:  # noqa: BLE001 - best effort on the way out
                log.debug("stopping an MCP server failed", exc_info=True)
        concurrent.futures.wait(self._tasks, timeout=CLOSE_TIMEOUT_S)
        try:
            portal.call(portal.stop, True)
        except Exception:  # noqa: BLE001 - the loop may already be gone
            log.debug("stopping the MCP loop failed", exc_info=True)
        if self._thread is not None:
            self._thread.join(timeout=CLOSE_TIMEOUT_S)

    def __enter__(self) -> McpBridge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _warn(self, server: str, message: str) -> None:
        log.warning("%s", message)
        self.warnings.append((server, message))

    # -- tools ------------------------------------------------------------------------------

    def tools(self) -> list[ExternalTool]:
        """Allowed tools of the live servers, in configuration order, as ExternalTool values
        whose handler calls this bridge. An allow-list name the server does not offer is a
        warning."""
        out: list[ExternalTool] = []
        for name, live in self._live.items():
            allow = self.servers[name].tools
            offered = {t.name for t in live.tools}
            for missing in [a for a in allow or () if a not in offered]:
                self._warn(name, f"MCP server {name!r} has no tool {missing!r} (tools allow-list)")
            for t in live.tools:
                if allow is not None and t.name not in allow:
                    continue
                schema = dict(t.input_schema or {})
                schema.setdefault("type", "object")
                spec = ToolSpec(t.name, t.description or t.title or t.name, schema)
                out.append(ExternalTool(spec, self._handler(name, t.name), f"mcp:{name}",
                                        self._alive(name)))
        return out

    def _alive(self, server: str) -> Any:
        def alive() -> bool:
            return server not in self._dead

        return alive

    def _handler(self, server: str, tool: str) -> Any:
        def handle(args: dict[str, Any]) -> ToolResult:
            return self.call_tool(server, tool, args)

        return handle

    def call_tool(self, server: str, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Call ``name`` on ``server`` from any thread; failures (timeout after
        CALL_TIMEOUT_S, a dead server, protocol errors, ``is_error`` results) come back as
        ``Error: …`` results. A call that finds the session closed (the server exited or
        closed its stdout) marks the server dead: a warning names it, its tools leave later
        tool lists (``ExternalTool.alive``), and later calls fail at once."""
        live = self._live.get(server)
        portal = self._portal
        if server in self._dead:
            return ToolResult.error(f"Error: {self._dead_text(server)}")
        if live is None or portal is None:
            return ToolResult.error(f"Error: MCP server {server!r} is not running")
        try:
            result = portal.call(self._call, live.client, name, dict(arguments))
        except BaseException as e:  # noqa: BLE001 - a tool failure is a result for the model
            if isinstance(e, KeyboardInterrupt):
                raise
            if session_closed(e):
                self._mark_dead(server, live, describe(e))
                return ToolResult.error(f"Error: MCP tool {name}: {self._dead_text(server)}")
            return ToolResult.error(f"Error: MCP tool {name} ({server}) failed: {describe(e)}")
        text, is_error = result_text(result)
        return ToolResult.error(text) if is_error else ToolResult(text)

    def _dead_text(self, server: str) -> str:
        return (f"MCP server {server!r} stopped during this review ({self._dead[server]});"
                " its tools were withdrawn")

    def _mark_dead(self, server: str, live: _Live, why: str) -> None:
        with self._lock:
            if server in self._dead:
                return
            self._dead[server] = why + stderr_tail(live.errlog) if live.errlog else why
        self._warn(server, self._dead_text(server))

    # -- async side (runs on the loop thread) -----------------------------------------------

    def _message_handler(self, server: str) -> Any:
        """The session's handler for notifications and transport faults: a line that is not
        JSON-RPC (invalid UTF-8 shows as U+FFFD, so it is also just a bad line) is ignored,
        with one warning per server."""
        import anyio

        async def handle(message: Any) -> None:
            if isinstance(message, Exception) and server not in self._bad_lines:
                self._bad_lines.add(server)
                self._warn(server, f"MCP server {server!r} wrote a line that is not JSON-RPC"
                                   f" (ignored): {bad_line(message)}")
            await anyio.lowlevel.checkpoint()

        return handle

    async def _call(self, client: Any, name: str, arguments: dict[str, Any]) -> Any:
        import anyio

        try:
            with anyio.fail_after(self.call_timeout_s + 5):
                return await client.call_tool(
                    name, arguments, read_timeout_seconds=self.call_timeout_s
                )
        except TimeoutError:
            raise TimeoutError(f"timed out after {self.call_timeout_s:g}s") from None

    async def _serve(
        self, name: str, spec: StdioServer | HttpServer, started: concurrent.futures.Future[_Live]
    ) -> None:
        """One server's life: set-up command, transport + handshake, tools/list, then wait
        for ``stop``. Deadlines move on the task's own cancel scope, so the transport's task
        groups stay properly nested."""
        import anyio

        stop = anyio.Event()
        errlog = tempfile.TemporaryFile()  # noqa: SIM115 - closed in finally
        phase, limit = "start-up", self.startup_timeout_s
        try:
            with anyio.CancelScope() as scope:
                if isinstance(spec, StdioServer) and spec.setup:
                    phase, limit = "set-up command", self.setup_timeout_s
                    scope.deadline = anyio.current_time() + limit
                    await self._run_setup(spec.setup, spec, errlog)
                phase, limit = "start-up", self.startup_timeout_s
                scope.deadline = anyio.current_time() + limit
                await self._connect_and_wait(name, spec, errlog, scope, started, stop)
            if scope.cancelled_caught and not started.done():
                started.set_exception(
                    ServerFailed(f"{phase} timed out after {limit:g}s{stderr_tail(errlog)}")
                )
        except Exception as e:  # noqa: BLE001 - reported through `started`
            if not started.done():
                started.set_exception(ServerFailed(f"{describe(e)}{stderr_tail(errlog)}"))
            else:
                log.debug("MCP server %s ended with an error", name, exc_info=True)
        finally:
            errlog.close()
            if not started.done():
                started.set_exception(ServerFailed("stopped before it was ready"))

    async def _connect_and_wait(
        self,
        name: str,
        spec: StdioServer | HttpServer,
        errlog: IO[bytes],
        scope: Any,
        started: concurrent.futures.Future[_Live],
        stop: Any,
    ) -> None:
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters, stdio_client
        from mcp.client.streamable_http import streamable_http_client
        from mcp_types import Implementation

        async with AsyncExitStack() as stack:
            if isinstance(spec, StdioServer):
                params = StdioServerParameters(
                    command=spec.command,
                    args=list(spec.args),
                    env={k: expand_vars(v, self.environ) for k, v in spec.env.items()} or None,
                    cwd=str(self.cwd),
                    encoding_error_handler="replace",  # a bad byte is one bad line, no crash
                )
                transport: Any = stdio_client(params, errlog=errlog)  # type: ignore[arg-type]
            else:
                import httpx2

                http = await stack.enter_async_context(
                    httpx2.AsyncClient(
                        headers={k: expand_vars(v, self.environ) for k, v in spec.headers.items()},
                        timeout=httpx2.Timeout(self.startup_timeout_s, read=300.0),
                    )
                )
                transport = streamable_http_client(spec.url, http_client=http)
            client = await stack.enter_async_context(
                Client(
                    transport,
                    cache=None,
                    client_info=Implementation(name="ocr-hook", version=__version__),
                    message_handler=self._message_handler(name),
                )
            )
            tools: list[Any] = []
            cursor: str | None = None
            for _ in range(MAX_LIST_PAGES):
                page = await client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
            scope.deadline = math.inf
            started.set_result(_Live(client, stop, tools, errlog))
            await stop.wait()

    async def _run_setup(
        self, argv: Sequence[str], spec: StdioServer, errlog: IO[bytes]
    ) -> None:
        """Run the set-up command in the repository top with the review's environment minus
        the repo-local GIT_* variables, plus the server's ``env``; output to ``errlog``."""
        import anyio

        env = git.foreign_env(self.environ)
        env.update({k: expand_vars(v, self.environ) for k, v in spec.env.items()})
        with open(os.devnull, "rb") as devnull:
            proc = await anyio.run_process(
                list(argv), cwd=str(self.cwd), env=env, stdin=devnull, stdout=errlog,
                stderr=errlog, check=False,
            )
        if proc.returncode != 0:
            raise ServerFailed(
                f"set-up command {argv_text(argv)} failed (exit {proc.returncode})"
            )
