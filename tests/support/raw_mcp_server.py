"""A hand-written stdio MCP server that misbehaves on purpose: it speaks JSON-RPC
lines directly, without the SDK, so it can put raw bytes on stdout.

``python raw_mcp_server.py MODE``; MODE ``junk-first`` writes a line of invalid UTF-8 before
the handshake and then serves normally; ``serve`` serves normally. Tools: ``echo(text)``,
``garble()`` (writes an invalid-UTF-8 line, then answers ``after junk``) and ``crash()`` (the
process exits with code 5 without answering, after writing ``crashing`` to stderr).
"""

from __future__ import annotations

import json
import os
import sys

TOOLS = [
    {"name": "echo", "description": "Echo text.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
    {"name": "garble", "description": "Write junk, then answer.",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "crash", "description": "Exit without answering.",
     "inputSchema": {"type": "object", "properties": {}}},
]
JUNK = b"\xff\xfe\x80 not json \xc3\x28\n"


def send(message: dict[str, object]) -> None:
    os.write(1, json.dumps(message).encode() + b"\n")


def answer(request: dict[str, object]) -> None:
    rid, method = request.get("id"), request.get("method")
    params = request.get("params") or {}
    assert isinstance(params, dict)
    if rid is None:
        return  # a notification
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}}, "serverInfo": {"name": "raw", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        name, args = params.get("name"), params.get("arguments") or {}
        if name == "crash":
            sys.stderr.write("crashing\n")
            sys.stderr.flush()
            os._exit(5)
        if name == "garble":
            os.write(1, JUNK)
            text = "after junk"
        else:
            assert isinstance(args, dict)
            text = str(args.get("text", ""))
        send({"jsonrpc": "2.0", "id": rid,
              "result": {"content": [{"type": "text", "text": text}], "isError": False}})
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    else:
        send({"jsonrpc": "2.0", "id": rid,
              "error": {"code": -32601, "message": f"Method not found: {method}"}})


def main() -> None:
    if sys.argv[1:] == ["junk-first"]:
        os.write(1, JUNK)
    for line in sys.stdin:
        if line.strip():
            answer(json.loads(line))


if __name__ == "__main__":
    main()
