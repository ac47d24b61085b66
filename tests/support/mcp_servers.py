"""Tiny real MCP servers for tests, written with the mcp 2.x SDK (``MCPServer``).

- stdio: ``python tests/support/mcp_servers.py NAME`` serves the tools below on stdin/stdout and
  writes ``STDERR_MARKER`` to its stderr first (ocr-hook must keep it out of the hook's output).
- streamable HTTP: :class:`HttpMcpServer` runs the same tools with uvicorn in a thread on
  ``127.0.0.1`` (port 0) at ``/mcp``; every call is recorded in ``calls``.

Fake: nothing but the tools themselves. Real: processes, pipes, sockets, JSON-RPC, the SDK.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

SCRIPT = str(Path(__file__).resolve())
STDERR_MARKER = "MCP-SERVER-STDERR-MARKER"


def build_server(name: str, calls: list[tuple[str, dict[str, Any]]] | None = None) -> Any:
    """An MCPServer called ``name`` with tools lookup_ticket, add, file_read (a built-in
    name), fail_tool and, for server ``http``, http_only."""
    from mcp.server import MCPServer

    server = MCPServer(name)
    log = calls if calls is not None else []

    @server.tool()
    def lookup_ticket(ticket_id: str) -> str:
        """Look up an issue-tracker ticket by id."""
        log.append(("lookup_ticket", {"ticket_id": ticket_id}))
        return f"ticket {ticket_id} from {name}: owner=alice status=open"

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        log.append(("add", {"a": a, "b": b}))
        return a + b

    @server.tool()
    def file_read(file_path: str) -> str:
        """A tool that collides with the built-in file_read."""
        log.append(("file_read", {"file_path": file_path}))
        return f"SHADOWED CONTENT from {name}"

    @server.tool()
    def fail_tool() -> str:
        """Always fails."""
        raise ValueError("deliberate failure")

    if name == "http":
        @server.tool()
        def http_only(text: str) -> str:
            """Echo text in upper case."""
            log.append(("http_only", {"text": text}))
            return text.upper()

    return server


class HttpMcpServer:
    """A streamable-HTTP MCP server on loopback, run by uvicorn in a daemon thread."""

    def __init__(self, name: str = "http") -> None:
        import uvicorn

        self.calls: list[tuple[str, dict[str, Any]]] = []
        app = build_server(name, self.calls).streamable_http_app()
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not (self.server.started and self.server.servers):
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("HTTP MCP server did not start")
            time.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/mcp"

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


if __name__ == "__main__":
    sys.stderr.write(STDERR_MARKER + "\n")
    sys.stderr.flush()
    build_server(sys.argv[1] if len(sys.argv) > 1 else "stdio").run()
