"""MCP servers as review tools (spec §7.3): configuration, consent for repository-defined
servers, the bridge's life cycle, and full reviews that call real MCP servers.

Real: a stdio MCP server subprocess and a streamable-HTTP one on loopback (both written with
the mcp 2.x SDK, tests/support/mcp_servers.py), the SDK client, git repositories, HTTP to the
scripted model. Fake: the model's replies.
"""

from __future__ import annotations

import json
import stat
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types
import pytest

from ocr_hook import cli
from ocr_hook.errors import ConfigError
from ocr_hook.tools.builtin import TOOLS
from ocr_hook.tools.mcp.bridge import (
    RESULT_MAX_CHARS,
    HttpServer,
    McpBridge,
    StdioServer,
    describe_server,
    expand_vars,
    parse_servers,
    result_text,
)
from ocr_hook.tools.mcp.text import safe_cut
from tests.support.cli import cli_environ, run_cli, run_python
from tests.support.gitrepo import GitRepo
from tests.support.home import user_file, write_user_config
from tests.support.mcp_servers import SCRIPT, STDERR_MARKER, HttpMcpServer
from tests.support.scripted_llm import ScriptedLLM

PY = sys.executable
BUILTIN = list(TOOLS)


def toml_servers(servers: dict[str, dict[str, Any]]) -> str:
    """``[mcp.servers.<name>]`` tables (JSON strings and arrays are valid TOML values)."""
    out = []
    for name, entry in servers.items():
        out.append(f"[mcp.servers.{name}]")
        out.extend(f"{k} = {json.dumps(v)}" for k, v in entry.items())
    return "\n".join(out) + "\n"


def tool_names(request: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request["tools"]]


def tool_results(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


@pytest.fixture(scope="module")
def http_server() -> Iterator[HttpMcpServer]:
    server = HttpMcpServer("http")
    yield server
    server.close()


# -- configuration -------------------------------------------------------------------------


def test_parse_servers_infers_type_and_validates() -> None:
    servers = parse_servers({
        "a": {"command": "node", "args": ["srv.js"], "env": {"K": "v"}, "setup": ["npm", "ci"]},
        "b": {"type": "http", "url": "https://mcp.example/mcp", "headers": {"X": "1"},
              "tools": ["t1"]},
    })
    assert servers == {
        "a": StdioServer(command="node", args=["srv.js"], env={"K": "v"}, setup=["npm", "ci"]),
        "b": HttpServer(url="https://mcp.example/mcp", headers={"X": "1"}, tools=["t1"]),
    }
    assert describe_server("a", servers["a"]) == "a: node srv.js (env: K=v) (set-up: npm ci)"
    assert describe_server("b", servers["b"]) == "b: http https://mcp.example/mcp"


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"type": "stdio"}, "invalid mcp.servers.x.command in t.toml: Field required"),
        ({"type": "sse", "url": "http://h/"},
         "invalid mcp.servers.x in t.toml: type must be stdio (with command) or http (with url)"),
        ({"args": ["a"]},
         "invalid mcp.servers.x in t.toml: type must be stdio (with command) or http (with url)"),
        ({"url": "ftp://h/"},
         "invalid mcp.servers.x.url in t.toml: Value error, url must start with http:// or"
         " https://"),
        ({"command": "srv", "setup": []},
         'invalid mcp.servers.x.setup in t.toml: Value error, setup must be a non-empty argv'
         ' list, e.g. ["npm", "ci"]'),
        ({"command": "srv", "cwd": "/"},
         "invalid mcp.servers.x.cwd in t.toml: Extra inputs are not permitted"),
        ({"command": "srv", "args": "--flag"},
         "invalid mcp.servers.x.args in t.toml: Input should be a valid list"),
        ("srv", "invalid mcp.servers.x in t.toml: must be a table"),
    ],
)
def test_invalid_server_entries(entry: Any, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_servers({"x": entry}, "t.toml")
    assert str(e.value) == message


def test_expand_vars() -> None:
    env = {"TOKEN": "abc"}
    assert expand_vars("Bearer ${TOKEN}", env) == "Bearer abc"
    assert expand_vars("${MISSING}-$TOKEN", env) == "-$TOKEN"


# -- results for the model -----------------------------------------------------------------


def test_result_text_converts_content_blocks() -> None:
    res = mcp_types.CallToolResult(content=[
        mcp_types.TextContent(type="text", text="first"),
        mcp_types.ImageContent(type="image", data="aGk=", mime_type="image/png"),
        mcp_types.EmbeddedResource(type="resource", resource=mcp_types.TextResourceContents(
            uri="file:///a.txt", text="body")),
        mcp_types.EmbeddedResource(type="resource", resource=mcp_types.BlobResourceContents(
            uri="file:///a.bin", blob="aGk=", mime_type="application/octet-stream")),
        mcp_types.ResourceLink(type="resource_link", uri="file:///x", name="x"),
    ])
    assert result_text(res) == (
        "first\n[image content (image/png) omitted]\n[resource file:///a.txt]\nbody\n"
        "[binary resource file:///a.bin (application/octet-stream) omitted]\n"
        "[resource link: x file:///x]", False)


def test_result_text_structured_error_empty_and_cap() -> None:
    assert result_text(mcp_types.CallToolResult(content=[], structured_content={"n": 3})) == (
        '{"n":3}', False)
    assert result_text(mcp_types.CallToolResult(content=[], is_error=True)) == ("(no output)", True)
    big = mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text="x" * 200_000)])
    text, _ = result_text(big)
    assert text == "x" * RESULT_MAX_CHARS + f"\nNote: result truncated to {RESULT_MAX_CHARS} chars."


def test_the_cap_never_cuts_through_a_value() -> None:
    """A value the cap would cut is dropped whole (the run's redactor knows a secret only
    whole): the cut moves back to a line break, else to the start of the run of value
    characters; a cut at a separator stays; a run longer than the back-off is cut as is."""
    token = "ghp_" + "A1b2C3d4E5" * 4
    assert safe_cut("ab\ncd " + token, 12) == "ab"
    assert safe_cut("{'k': '" + token + "'}", 20) == "{'k': '"
    assert safe_cut("a b;c", 3) == "a b"
    assert safe_cut("x" * 10_000, 6000) == "x" * 6000
    assert safe_cut("a " + "x" * 5000, 4500) == "a " + "x" * 4498
    big = mcp_types.CallToolResult(content=[mcp_types.TextContent(
        type="text", text="line\n" * 30_000 + token)])
    text, _ = result_text(big)
    assert text == "line\n" * 26_213 + "line" + (
        f"\nNote: result truncated to {RESULT_MAX_CHARS} chars.")


# -- the bridge ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bridge(http_server: HttpMcpServer, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[McpBridge]:
    servers = parse_servers({
        "tracker": {"command": PY, "args": [SCRIPT, "tracker"]},
        "web": {"url": http_server.url, "tools": ["http_only", "add", "no_such_tool"]},
    })
    b = McpBridge(servers, cwd=tmp_path_factory.mktemp("cwd"), environ={}).start()
    yield b
    b.close()


def test_bridge_lists_allowed_tools_in_configuration_order(bridge: McpBridge) -> None:
    tools = bridge.tools()
    assert [(t.source, t.spec.name) for t in tools] == [
        ("mcp:tracker", "lookup_ticket"), ("mcp:tracker", "add"), ("mcp:tracker", "file_read"),
        ("mcp:tracker", "fail_tool"), ("mcp:web", "add"), ("mcp:web", "http_only"),
    ]
    assert tools[0].spec.description == "Look up an issue-tracker ticket by id."
    assert tools[0].spec.parameters["properties"]["ticket_id"]["type"] == "string"
    assert ("web", "MCP server 'web' has no tool 'no_such_tool' (tools allow-list)") in (
        bridge.warnings)


def test_bridge_calls_and_errors_are_results(bridge: McpBridge) -> None:
    assert bridge.call_tool("tracker", "add", {"a": 2, "b": 40}).text == "42"
    assert bridge.call_tool("web", "http_only", {"text": "hi"}).text == "HI"
    fail = bridge.call_tool("tracker", "fail_tool", {})
    assert (fail.text, fail.is_error) == ("Error executing tool fail_tool", True)
    unknown = bridge.call_tool("tracker", "nosuch", {})
    assert (unknown.text, unknown.is_error) == ("Error: Unknown tool: nosuch", True)
    missing = bridge.call_tool("gone", "add", {})
    assert (missing.text, missing.is_error) == ("Error: MCP server 'gone' is not running", True)


def test_bridge_is_shared_by_worker_threads(bridge: McpBridge) -> None:
    results: dict[int, str] = {}

    def work(n: int) -> None:
        server = "tracker" if n % 2 else "web"
        results[n] = bridge.call_tool(server, "add", {"a": n, "b": 1000}).text

    threads = [threading.Thread(target=work, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert results == {n: str(n + 1000) for n in range(16)}


def test_server_start_up_timeout_is_a_warning(tmp_path: Path) -> None:
    servers = parse_servers({"slow": {"command": PY, "args": [
        "-c", "import sys, time; print('booting', file=sys.stderr, flush=True); time.sleep(60)"]}})
    with McpBridge(servers, cwd=tmp_path, environ={}, startup_timeout_s=1).start() as b:
        assert b.tools() == []
        assert b.warnings == [
            ("slow", "MCP server 'slow' not started: start-up timed out after 1s; stderr: booting")]


def test_setup_command_runs_in_the_repository_before_start(tmp_path: Path) -> None:
    servers = parse_servers({
        "ok": {"command": PY, "args": [SCRIPT, "ok"], "env": {"MARK": "${SETUP_MARK}"},
               "setup": [PY, "-c", "import os; open('setup-ran', 'w').write(os.environ['MARK'])"]},
        "bad": {"command": PY, "args": [SCRIPT, "bad"],
                "setup": [PY, "-c", "import sys; sys.exit('no network')"]},
        "hang": {"command": PY, "args": [SCRIPT, "hang"],
                 "setup": [PY, "-c", "import time; time.sleep(60)"]},
    })
    b = McpBridge(servers, cwd=tmp_path, environ={"SETUP_MARK": "yes"}, setup_timeout_s=3)
    with b.start():
        assert (tmp_path / "setup-ran").read_text() == "yes"
        assert {t.source for t in b.tools()} == {"mcp:ok"}
        assert b.warnings == [
            ("bad", f"MCP server 'bad' not started: set-up command {PY}"
                    " -c 'import sys; sys.exit('\"'\"'no network'\"'\"')' failed (exit 1);"
                    " stderr: no network"),
            ("hang", "MCP server 'hang' not started: set-up command timed out after 3s"),
        ]


def test_bridge_without_servers_imports_nothing() -> None:
    b = McpBridge({}, cwd=Path("."), environ={}, notes=[("", "note")]).start()
    assert (b.warnings, b.tools(), b._thread) == ([("", "note")], [], None)
    b.close()


# -- full reviews --------------------------------------------------------------------------


def test_review_offers_mcp_tools_and_returns_their_results(
    repo: GitRepo, llm: ScriptedLLM, http_server: HttpMcpServer, monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    write_user_config(toml_servers({
        "tracker": {"command": PY, "args": [SCRIPT, "tracker"]},
        "web": {"type": "http", "url": http_server.url, "tools": ["http_only", "lookup_ticket"]},
    }))
    repo.stage({"app.py": "x = 1\n"})
    llm.tool_calls(("lookup_ticket", {"ticket_id": "T-42"}), ("http_only", {"text": "hi"}),
                   ("file_read", {"file_path": "app.py"}))
    llm.tool_calls(("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    calls_before = len(http_server.calls)
    rc, out, err = run_cli(["review", "--format", "json", "--effort", "low"], llm.env(), capfd)
    assert rc == 0
    assert tool_names(llm.requests[0]) == [*BUILTIN, "lookup_ticket", "add", "fail_tool",
                                           "http_only"]
    assert tool_results(llm.requests[1]) == [
        "ticket T-42 from tracker: owner=alice status=open",
        "HI",
        "File: app.py (Total lines: 1)\nIS_TRUNCATED: false\nLINE_RANGE: 1-1\n1|x = 1",
    ]
    assert http_server.calls[calls_before:] == [("http_only", {"text": "hi"})]
    warnings = [w["message"] for w in json.loads(out)["warnings"] if w["type"] == "mcp"]
    assert warnings == [
        "mcp:tracker tool 'file_read' skipped: the name is reserved for a built-in tool",
        "mcp:web tool 'lookup_ticket' skipped: already registered by mcp:tracker",
    ]
    assert STDERR_MARKER not in out + err


def test_server_that_fails_to_start_is_a_warning_and_the_review_goes_on(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    write_user_config(toml_servers({"broken": {"command": "/nonexistent/mcp-server"}}))
    repo.stage({"app.py": "x = 1\n"})
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review", "--format", "json"], llm.env(), capfd)
    message = "MCP server 'broken' not started: command not found: /nonexistent/mcp-server"
    assert rc == 0
    assert tool_names(llm.requests[0]) == BUILTIN
    result = json.loads(out)
    assert result["status"] == "complete" and result["files"][0]["reviewed"] is True
    assert {"type": "mcp", "file": "", "message": message} in result["warnings"]
    assert f"ocr-hook: {message}\n" in err


def test_invalid_server_entry_fails_at_start_up(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_user_config(toml_servers({"x": {"type": "stdio", "args": ["a"]}}))
    repo.stage({"app.py": "x = 1\n"})
    monkeypatch.chdir(repo.path)
    rc, _, err = run_cli(["review"], llm.env(), capsys)
    assert (rc, llm.requests) == (2, [])
    assert err == "ocr-hook: invalid mcp.servers.x.command in configuration: Field required\n"


REVIEW = ["review", "--format", "json", "--no-cache"]


def test_repository_servers_run_only_after_allow_mcp(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    servers = {"tracker": {"command": PY, "args": [SCRIPT, "tracker"]}}
    repo.commit({".ocr-hook.toml": toml_servers(servers)}, "team config")
    repo.stage({"app.py": "x = 1\n"})
    monkeypatch.chdir(repo.path)

    assert cli.main(REVIEW, environ=cli_environ(llm.env())) == 0
    out, _ = capsys.readouterr()
    assert tool_names(llm.requests[-1]) == BUILTIN
    assert [w["message"] for w in json.loads(out)["warnings"] if w["type"] == "mcp"] == [
        "MCP servers of .ocr-hook.toml (HEAD) not started: tracker; this server list has not"
        " been allowed; review it and run `git ocr config allow-mcp` to let it run"]

    assert cli.main(["config", "allow-mcp"], environ=cli_environ()) == 0
    out, _ = capsys.readouterr()
    store = user_file("mcp-consent.json")
    assert out == (
        f"Allowed the MCP servers of .ocr-hook.toml (HEAD) in {repo.path} to run during reviews:\n"
        f"  tracker: {PY} {SCRIPT} tracker\n"
        f"Recorded in {store}; any change to this list needs a new `git ocr config allow-mcp`.\n"
    )
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    entry = json.loads(store.read_text())["allowed"][0]
    assert (entry["repository"], entry["servers"]) == (str((repo.path / ".git").resolve()),
                                                       [f"tracker: {PY} {SCRIPT} tracker"])

    assert cli.main(REVIEW, environ=cli_environ(llm.env())) == 0
    out, _ = capsys.readouterr()
    assert tool_names(llm.requests[-1]) == [*BUILTIN, "lookup_ticket", "add", "fail_tool"]
    assert [w for w in json.loads(out)["warnings"] if "not started" in w["message"]] == []

    servers["tracker"]["args"] = [SCRIPT, "tracker", "--changed"]
    repo.commit({".ocr-hook.toml": toml_servers(servers)}, "changed server")
    repo.stage({"app.py": "x = 2\n"})
    assert cli.main(REVIEW, environ=cli_environ(llm.env())) == 0
    out, _ = capsys.readouterr()
    assert tool_names(llm.requests[-1]) == BUILTIN


def test_allow_mcp_without_repository_servers_is_an_error(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    monkeypatch.chdir(repo.path)
    assert cli.main(["config", "allow-mcp"], environ=cli_environ()) == 2
    assert capsys.readouterr().err == (
        "ocr-hook: .ocr-hook.toml (HEAD) defines no mcp.servers; nothing to allow\n")


WITHOUT_SDK = """\
import sys
sys.modules["mcp"] = None  # as if ocr-hook were installed without the [mcp] extra
from ocr_hook import cli
rc = cli.main(sys.argv[1:])
sys.stderr.write("MCP_LOADED=" + str(sys.modules.get("mcp") is not None) + "\\n")
sys.exit(rc)
"""


def test_configured_server_without_the_mcp_extra_is_one_warning_and_the_review_goes_on(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    write_user_config(toml_servers({"tracker": {"command": PY, "args": [SCRIPT, "tracker"]}}))
    repo.stage({"app.py": "x = 1\n"})
    llm.tool_calls(("task_done", {"state": "DONE"}))
    p = run_python(["-c", WITHOUT_SDK, "review", "--format", "json", "--effort", "low"],
                   cwd=repo.path, env=llm.env())
    message = ("MCP servers not started: tracker; the MCP SDK is not installed (no module"
               " 'mcp'): pip install 'ocr-hook[mcp]'")
    assert p.returncode == 0, p.stderr
    result = json.loads(p.stdout)
    assert (result["status"], result["files"][0]["reviewed"]) == ("complete", True)
    assert [w for w in result["warnings"] if w["type"] == "mcp"] == [
        {"type": "mcp", "file": "", "message": message}]
    assert [ln for ln in p.stderr.splitlines() if "MCP" in ln] == [
        f"ocr-hook: {message}", "MCP_LOADED=False"]
    assert tool_names(llm.requests[0]) == BUILTIN and len(llm.requests) == 1
