"""MCP stdio servers that misbehave (spec §7.3): invalid UTF-8 on stdout is one ignored line,
a server that dies before the handshake fails at once (not after the start-up limit), and a
server that dies during the review is named in the result and its tools are withdrawn.

Real: a hand-written stdio MCP server process (tests/support/raw_mcp_server.py) that writes
raw bytes, the SDK client, git repositories, HTTP to the scripted model. Fake: the model's
replies.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ocr_hook.tools.mcp.bridge import McpBridge, parse_servers
from tests.support.cli import run_cli
from tests.support.gitrepo import GitRepo
from tests.support.home import write_user_config
from tests.support.paths import SUPPORT
from tests.support.scripted_llm import ScriptedLLM

PY = sys.executable
RAW = str(SUPPORT / "raw_mcp_server.py")
JUNK_SHOWN = "'\ufffd\ufffd\ufffd not json \ufffd('"  # b"\xff\xfe\x80 not json \xc3\x28"
BAD_LINE = f"MCP server 'raw' wrote a line that is not JSON-RPC (ignored): {JUNK_SHOWN}"
DEAD = ("MCP server 'raw' stopped during this review (MCPError: Connection closed; stderr:"
        " crashing); its tools were withdrawn")


def raw_server(mode: str) -> dict[str, object]:
    return {"command": PY, "args": [RAW, mode]}


def test_junk_before_the_handshake_is_one_bad_line_and_a_crash_withdraws_the_tools(
    tmp_path: Path,
) -> None:
    servers = parse_servers({"raw": raw_server("junk-first")})
    with McpBridge(servers, cwd=tmp_path, environ={}).start() as b:
        tools = b.tools()
        assert [t.spec.name for t in tools] == ["echo", "garble", "crash"]
        assert b.warnings == [("raw", BAD_LINE)]
        assert b.call_tool("raw", "garble", {}).text == "after junk"  # junk mid-session too
        assert b.call_tool("raw", "echo", {"text": "hi"}).text == "hi"
        assert [t.alive() for t in tools if t.alive] == [True, True, True]
        crash = b.call_tool("raw", "crash", {})
        assert (crash.text, crash.is_error) == (f"Error: MCP tool crash: {DEAD}", True)
        later = b.call_tool("raw", "echo", {"text": "hi"})
        assert (later.text, later.is_error) == (f"Error: {DEAD}", True)
        assert [t.alive() for t in tools if t.alive] == [False, False, False]
        assert b.warnings == [("raw", BAD_LINE), ("raw", DEAD)]


def test_server_that_dies_before_the_handshake_fails_without_waiting_for_the_limit(
    tmp_path: Path,
) -> None:
    code = "import os, sys; os.write(1, b'\\xff\\xfe\\n'); sys.stderr.write('no licence\\n'); os._exit(3)"
    servers = parse_servers({"gone": {"command": PY, "args": ["-c", code]}})
    with McpBridge(servers, cwd=tmp_path, environ={}, startup_timeout_s=600).start() as b:
        assert b.tools() == []
        assert b.warnings[-1] == (
            "gone", "MCP server 'gone' not started: MCPError: Connection closed; stderr: no licence")


def test_review_names_a_server_that_died_and_stops_offering_its_tools(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_user_config(f"[mcp.servers.raw]\ncommand = {json.dumps(PY)}\n"
                      f"args = {json.dumps([RAW, 'junk-first'])}\n")
    repo.stage({"app.py": "x = 1\n"})
    llm.tool_calls(("garble", {}), ("echo", {"text": "hi"}))
    llm.tool_calls(("crash", {}))
    llm.tool_calls(("echo", {"text": "again"}))
    llm.tool_calls(("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review", "--format", "json", "--effort", "low"], llm.env(), capsys)
    assert rc == 0, err
    assert len(llm.requests) == 4
    names = [[t["function"]["name"] for t in r["tools"]] for r in llm.requests]
    assert [("echo" in n, "crash" in n) for n in names] == [
        (True, True), (True, True), (False, False), (False, False)]
    results = [[m["content"] for m in r["messages"] if m["role"] == "tool"] for r in llm.requests]
    assert results[1] == ["after junk", "hi"]
    assert results[2][-1] == f"Error: MCP tool crash: {DEAD}"
    assert results[3][-1] == f"Error: {DEAD}"
    data = json.loads(out)
    assert [w["message"] for w in data["warnings"] if w["type"] == "mcp"] == [BAD_LINE, DEAD]
    assert data["files"][0]["reviewed"] is True
    assert f"ocr-hook: {DEAD}" in err
