"""The tool registry (spec §7.2): shipped definitions, tools.file narrowing validated at
start-up, fill-then-freeze, first registration wins, reserved names, dispatch errors; and the
same through ``git ocr review`` against the scripted loopback model.

Real: config/tools.json, git repositories, HTTP to the scripted model. Fake: the model.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from ocr_hook.errors import ConfigError
from ocr_hook.llm.types import ToolCall, ToolSpec
from ocr_hook.tools.builtin import TOOLS
from ocr_hook.tools.registry import (
    ExternalTool,
    Registry,
    Tool,
    ToolDef,
    ToolResult,
    apply_tools_file,
    build_registry,
    parse_tools_json,
)
from tests.support.cli import run_cli
from tests.support.gitrepo import GitRepo
from tests.support.paths import ROOT
from tests.support.scripted_llm import ScriptedLLM

BUILTIN = list(TOOLS)  # the one list of built-in tools, in config/tools.json order
LISTED = ", ".join(BUILTIN)


def shipped_json() -> dict[str, Any]:
    return copy.deepcopy(
        json.loads((ROOT / "config" / "tools.json").read_text())
    )


def tools_text(data: dict[str, Any], drop: tuple[str, ...] = ()) -> str:
    data = copy.deepcopy(data)
    data["tools"] = [t for t in data["tools"] if t["name"] not in drop]
    return json.dumps(data)


def echo(text: str) -> Any:
    return lambda args: ToolResult(f"{text}:{json.dumps(args, sort_keys=True)}")


def call(name: str, args: Any = None, raw: str = "{}", err: str | None = None) -> ToolCall:
    return ToolCall("call_1", name, raw, {} if args is None else args, err)


# -- shipped definitions and tools.file ----------------------------------------------------


def test_shipped_tools_and_phases() -> None:
    defs = parse_tools_json()
    assert list(defs) == BUILTIN
    assert [n for n, d in defs.items() if d.plan] == ["file_read_diff", "file_find", "code_search"]
    assert all(d.main for d in defs.values())
    assert defs["file_read"].spec.parameters["required"] == ["file_path"]


def test_shipped_tools_read_as_they_are_equal_the_validated_file() -> None:
    """The shipped file is read without validation on a review's path; validated
    as a user's tools file, it gives exactly the same definitions, phases and order."""
    from ocr_hook.util import resources

    shipped = parse_tools_json()
    text = json.dumps(resources.load_builtin_json("tools.json"))
    validated = parse_tools_json(text, "shipped copy")
    assert list(shipped) == list(validated)
    assert shipped == validated


def test_tools_file_drops_a_tool_and_rewrites_descriptions() -> None:
    data = shipped_json()
    for t in data["tools"]:
        if t["name"] == "file_read":
            t["definition"]["description"] = "Read a staged file."
            t["definition"]["parameters"]["properties"]["file_path"]["description"] = "Path."
    out = apply_tools_file(parse_tools_json(), tools_text(data, drop=("code_search",)), "t.json")
    assert list(out) == [n for n in BUILTIN if n != "code_search"]
    assert out["file_read"].spec.description == "Read a staged file."
    assert out["file_read"].spec.parameters["properties"]["file_path"]["description"] == "Path."
    assert out["file_find"] == parse_tools_json()["file_find"]


def test_tools_file_may_turn_a_phase_off() -> None:
    data = shipped_json()
    for t in data["tools"]:
        if t["name"] == "code_search":
            t["plan_task"] = False
    out = apply_tools_file(parse_tools_json(), json.dumps(data), "t.json")
    assert (out["code_search"].plan, out["code_search"].main) == (False, True)


def _with(name: str, **changes: Any) -> str:
    data = shipped_json()
    for t in data["tools"]:
        if t["name"] == name:
            for k, v in changes.items():
                if k == "properties":
                    t["definition"]["parameters"]["properties"].update(v)
                else:
                    t[k] = v
    return json.dumps(data)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            json.dumps(
                {
                    "tools": [
                        *shipped_json()["tools"],
                        {
                            "name": "web_fetch",
                            "definition": {"name": "web_fetch", "parameters": {"type": "object"}},
                        },
                    ]
                }
            ),
            f"tools file t.json: unknown tool 'web_fetch'; built-in tools: {LISTED}",
        ),
        (
            tools_text(shipped_json(), drop=("task_done",)),
            "tools file t.json: task_done cannot be dropped",
        ),
        (
            _with("code_comment", main_task=False),
            "tools file t.json: code_comment cannot be dropped",
        ),
        (
            _with("file_read", properties={"encoding": {"type": "string"}}),
            "tools file t.json: tool 'file_read': only descriptions may change, not the parameters"
            " schema",
        ),
        (
            _with("file_read", plan_task=True),
            "tools file t.json: tool 'file_read' cannot be added to a phase it is not built for"
            " (plan_task/main_task may only be turned off)",
        ),
        (
            "{not json",
            "tools file t.json: not valid JSON (Expecting property name enclosed in"
            " double quotes: line 1 column 2 (char 1))",
        ),
        (
            json.dumps({"tools": [{"name": "file_read"}]}),
            "tools file t.json: tools.0.definition: Field required",
        ),
        (
            json.dumps({"tools": [shipped_json()["tools"][0]] * 2}),
            "tools file t.json: tool 'task_done' is listed twice",
        ),
    ],
)
def test_invalid_tools_file_is_a_config_error(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        apply_tools_file(parse_tools_json(), text, "t.json")
    assert str(e.value) == message


# -- registry ------------------------------------------------------------------------------


def test_registry_first_registration_wins_and_freezes() -> None:
    reg = Registry()
    spec = ToolSpec("probe", "first", {"type": "object"})
    assert reg.add(Tool(spec, echo("first"))) is True
    assert reg.add(Tool(ToolSpec("probe", "second", {"type": "object"}), echo("second"))) is False
    reg.freeze()
    with pytest.raises(RuntimeError, match="frozen"):
        reg.add(Tool(ToolSpec("other", "", {"type": "object"}), echo("other")))
    assert reg.dispatch(call("probe", {"x": 1})).text == 'first:{"x": 1}'


def test_specs_by_phase() -> None:
    reg = build_registry(parse_tools_json(), {})
    assert [s.name for s in reg.specs("main")] == BUILTIN
    assert [s.name for s in reg.specs("plan")] == ["file_read_diff", "file_find", "code_search"]
    assert [s.name for s in reg.specs("main", only=("task_done", "code_comment"))] == [
        "task_done",
        "code_comment",
    ]


def test_dispatch_errors_are_results_for_the_model() -> None:
    reg = build_registry(parse_tools_json(), {"file_find": echo("find")})
    unknown = reg.dispatch(call("web_search"))
    assert (unknown.text, unknown.is_error) == (
        "Error: Tool not found. The tool 'web_search' does not exist or is not available. Please"
        f" check the tool name and try again with one of: {LISTED}.",
        True,
    )
    grace = reg.dispatch(
        call("file_find", {"query_name": "x"}), allowed=("code_comment", "task_done")
    )
    assert grace.text == (
        "Error: Tool not found. The tool 'file_find' does not exist or is not available. Please"
        " check the tool name and try again with one of: code_comment, task_done."
    )
    bad_json = reg.dispatch(call("file_find", None, raw="{oops", err="invalid JSON: x"))
    assert bad_json.text.startswith(
        "Error parsing tool arguments for file_find: invalid JSON: x. Expected a JSON object"
        ' matching: {"type":"object","properties":{"query_name":'
    )
    not_object = reg.dispatch(call("file_find", ["a"]))
    assert not_object.text.startswith(
        "Error: arguments for file_find must be a JSON object, got list. Expected: {"
    )
    assert reg.dispatch(call("file_find", None)).text == "find:{}"
    assert reg.dispatch(call("file_read", {})).text == "Error: tool file_read is not available here"


def test_dispatch_turns_a_crash_into_an_error_unless_strict() -> None:
    def boom(_args: dict[str, Any]) -> ToolResult:
        raise ValueError("bug")

    defs = {"probe": ToolDef(ToolSpec("probe", "", {"type": "object"}))}
    assert build_registry(defs, {"probe": boom}).dispatch(call("probe")).text == (
        "Error executing tool probe: ValueError"
    )
    with pytest.raises(ValueError):
        build_registry(defs, {"probe": boom}, strict=True).dispatch(call("probe"))


def test_external_tools_filters() -> None:
    shipped = parse_tools_json()
    narrowed = {n: d for n, d in shipped.items() if n != "code_search"}
    warnings: list[str] = []
    obj = {"type": "object"}
    external = [
        ExternalTool(ToolSpec("lookup", "a", obj), echo("a"), "mcp:a"),
        ExternalTool(ToolSpec("file_read", "shadow", obj), echo("shadow"), "mcp:a"),
        ExternalTool(ToolSpec("code_search", "shadow", obj), echo("shadow"), "mcp:a"),
        ExternalTool(ToolSpec("lookup", "b", obj), echo("b"), "mcp:b"),
        ExternalTool(ToolSpec("bad.name", "", obj), echo("c"), "mcp:b"),
    ]
    reg = build_registry(
        narrowed, {"file_read": echo("builtin")}, external, reserved=shipped, warn=warnings.append
    )
    assert reg.names() == [*[n for n in BUILTIN if n != "code_search"], "lookup"]
    assert [s.name for s in reg.specs("plan")] == ["file_read_diff", "file_find", "lookup"]
    assert reg.dispatch(call("lookup", {"k": 1})).text == 'a:{"k": 1}'
    assert reg.dispatch(call("file_read", {})).text == "builtin:{}"
    assert warnings == [
        "mcp:a tool 'file_read' skipped: the name is reserved for a built-in tool",
        "mcp:a tool 'code_search' skipped: the name is reserved for a built-in tool",
        "mcp:b tool 'lookup' skipped: already registered by mcp:a",
        "mcp:b tool 'bad.name' skipped: tool names must match [A-Za-z0-9_-]{1,64}",
    ]


# -- through `git ocr review` --------------------------------------------------------------

REVIEW = ["review", "--format", "json", "--effort", "low"]


def offered(request: dict[str, Any]) -> dict[str, str]:
    return {t["function"]["name"]: t["function"]["description"] for t in request["tools"]}


def test_tools_flag_drops_a_tool_and_rewrites_a_description(
    repo: GitRepo,
    llm: ScriptedLLM,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = shipped_json()
    for t in data["tools"]:
        if t["name"] == "file_find":
            t["definition"]["description"] = "Find a file by name (custom text)."
    tools_file = tmp_path / "tools.json"
    tools_file.write_text(tools_text(data, drop=("code_search",)))
    repo.stage({"app.py": "x = 1\n"})
    llm.tool_calls(("code_search", {"search_text": "x"}))
    llm.tool_calls(("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    rc, out, _ = run_cli([*REVIEW, "--tools", str(tools_file)], llm.env(), capsys)
    assert rc == 0
    tools = offered(llm.requests[0])
    assert list(tools) == [n for n in BUILTIN if n != "code_search"]
    assert tools["file_find"] == "Find a file by name (custom text)."
    result = [m for m in llm.requests[1]["messages"] if m["role"] == "tool"][0]["content"]
    assert result.startswith("Error: Tool not found. The tool 'code_search' does not exist")
    assert json.loads(out)["verdict"] == "pass"


def test_tools_file_with_unknown_name_fails_at_start_up(
    repo: GitRepo,
    llm: ScriptedLLM,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = shipped_json()
    data["tools"][2]["name"] = data["tools"][2]["definition"]["name"] = "file_reader"
    tools_file = tmp_path / "tools.json"
    tools_file.write_text(json.dumps(data))
    repo.stage({"app.py": "x = 1\n"})
    monkeypatch.chdir(repo.path)
    monkeypatch.setenv("OCR_HOOK_TOOLS_FILE", str(tools_file))
    rc, out, err = run_cli(REVIEW, llm.env(), capsys)
    assert (rc, out, llm.requests) == (2, "", [])
    assert err == (
        f"ocr-hook: tools file {tools_file}: unknown tool 'file_reader'; built-in tools: {LISTED}\n"
    )


def test_unknown_tool_call_is_answered_with_not_available(
    repo: GitRepo,
    llm: ScriptedLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"app.py": "x = 1\n"})
    llm.tool_calls(("shell_exec", {"cmd": "id"}), ("file_find", {"query_name": "app"}))
    llm.tool_calls(("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    rc, _, _ = run_cli(REVIEW, llm.env(), capsys)
    results = [m["content"] for m in llm.requests[1]["messages"] if m["role"] == "tool"]
    assert results == [
        "Error: Tool not found. The tool 'shell_exec' does not exist or is not available. Please"
        f" check the tool name and try again with one of: {LISTED}.",
        "app.py",
    ]
    assert rc == 0
