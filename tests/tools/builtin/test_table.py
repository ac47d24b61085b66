"""The built-in tools' table (``tools.builtin.TOOLS``) is the one list of them in code: it names
the tools ``config/tools.json`` specifies, one module per tool, and every handler it builds
answers bad arguments with a result the model can read.

Real: a git repository and its staged snapshot, the shipped tools.json, the registry.
Fake: the comment sink (a list).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from ocr_hook.git import target
from ocr_hook.llm.types import ToolCall
from ocr_hook.tools import builtin
from ocr_hook.tools.builtin import TOOLS, builtin_handlers
from ocr_hook.tools.builtin.common import ToolEnv
from ocr_hook.tools.registry import ToolResult, build_registry, parse_tools_json
from ocr_hook.tools.snapshot import SnapshotView
from tests.support.gitrepo import GitRepo

# One bad-argument call per tool and the start of its answer. file_find has no argument error
# (spec §7.1): a flag it cannot read counts as false, a missing query finds nothing.
BAD_CALLS: dict[str, tuple[dict[str, Any], str]] = {
    "task_done": ({"state": 42}, "Error: task_done state must be DONE or FAILED."),
    "code_comment": ({"comments": []}, "Error: 'comments' array is required"),
    "file_read": ({"file_path": "../etc/passwd"}, 'Error: file_path "../etc/passwd" is outside'),
    "file_read_diff": ({"path_array": 7}, "Error: no files found"),
    "file_find": ({"query_name": "app", "case_sensitive": []}, "app.py"),
    "code_search": ({"search_text": "a", "file_patterns": "../x"},
                    "Error: file_patterns must not contain .."),
}


@pytest.fixture
def view(repo: GitRepo) -> SnapshotView:
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({"app.py": "a = 1\n"})
    t = target.staged_snapshot(repo.path, os.environ)
    return SnapshotView(repo.path, t.head, target.load_diff(repo.path, t))


def test_the_table_names_the_tools_of_tools_json_in_its_order() -> None:
    assert list(TOOLS) == list(parse_tools_json())


def test_each_tool_is_one_module_named_for_it() -> None:
    here = Path(builtin.__file__).parent
    modules = {p.stem for p in here.glob("*.py")} - {"__init__", "common"}
    assert modules == set(TOOLS)
    assert {name: make.__module__ for name, make in TOOLS.items()} == {
        name: f"ocr_hook.tools.builtin.{name}" for name in TOOLS}


def test_every_handler_answers_a_bad_argument_call(view: SnapshotView) -> None:
    assert set(BAD_CALLS) == set(TOOLS)
    sink: list[Any] = []
    env = ToolEnv(view, sink.extend, "g")
    for name, make in TOOLS.items():
        handler = make(env)
        assert handler is not None, name
        args, start = BAD_CALLS[name]
        result = handler(args)
        assert isinstance(result, ToolResult), name
        assert result.text.startswith(start), (name, result.text)
        assert result.is_error == start.startswith("Error:"), name
        assert handler({"no_such_argument": 1}).text, name
    assert sink == []


def test_file_find_answers_a_failing_snapshot_with_an_error(view: SnapshotView) -> None:
    broken = SnapshotView(view.repo, "0" * 40, view.files)
    result = TOOLS["file_find"](ToolEnv(broken))({"query_name": "app"})
    assert result.is_error and result.text.startswith("Error: file_find failed: ")


def test_the_run_binds_every_tool_but_the_per_group_code_comment(view: SnapshotView) -> None:
    handlers = builtin_handlers(view)
    assert list(handlers) == [n for n in TOOLS if n != "code_comment"]
    registry = build_registry(parse_tools_json(), handlers, strict=True)
    call = ToolCall("c1", "code_comment", "{}", {"comments": []})
    assert registry.dispatch(call).text == "Error: tool code_comment is not available here"
    sink: list[Any] = []
    local = {"code_comment": TOOLS["code_comment"](ToolEnv(view, sink.extend, "g"))}
    assert registry.dispatch(call, (), local).text.startswith("Error: 'comments' array is required")
