"""Tool calls written as text (``agent.loop.text_tool_calls``, spec §6.2 fallback) in the
formats local servers without a tool-call parser leave in ``content``. Pure function, literal
model outputs."""

from __future__ import annotations

import pytest

from ocr_hook.agent.loop import text_tool_calls

KNOWN = {"file_read", "code_comment", "task_done"}


@pytest.mark.parametrize(("content", "expected"), [
    ('<tool_call>\n{"name": "file_read", "arguments": {"file_path": "a.py"}}\n</tool_call>',
     [("file_read", {"file_path": "a.py"})]),
    ('I will read it.\n```json\n{"name": "file_read", "arguments": {"file_path": "a.py"}}\n```',
     [("file_read", {"file_path": "a.py"})]),
    ('{"type": "function", "function": {"name": "file_read", "arguments":'
     ' "{\\"file_path\\": \\"b.py\\"}"}}', [("file_read", {"file_path": "b.py"})]),
    ('{"tool_calls": [{"name": "file_read", "parameters": {"file_path": "c.py"}},'
     ' {"name": "task_done", "input": {"state": "DONE"}}]}',
     [("file_read", {"file_path": "c.py"}), ("task_done", {"state": "DONE"})]),
    ("<tool_call>\n<function=code_comment>\n<parameter=comments>\n"
     '[{"path": "a.py", "content": "bug"}]\n</parameter>\n</function>\n</tool_call>',
     [("code_comment", {"comments": [{"path": "a.py", "content": "bug"}]})]),
    ("<function=file_read>\n<parameter=file_path>\nsrc/app.py\n</parameter>\n</function>",
     [("file_read", {"file_path": "src/app.py"})]),
    ('<function=task_done>{"state": "DONE"}</function>', [("task_done", {"state": "DONE"})]),
    ('<think>I should call {"name": "file_read", "arguments": {"file_path": "t.py"}}</think>',
     [("file_read", {"file_path": "t.py"})]),
    ('<think>maybe {"name": "file_read", "arguments": {"file_path": "t.py"}}</think>\n'
     '{"name": "task_done", "arguments": {"state": "DONE"}}', [("task_done", {"state": "DONE"})]),
    ('{"name": "rm_rf", "arguments": {}} and {"name": "", "arguments": {}}', []),
    ("No issues found in this change.", []),
    ('{"comments": [{"path": "a.py"}]}', []),
])
def test_text_tool_calls(content: str, expected: list[tuple[str, dict]]) -> None:
    calls = text_tool_calls(content, KNOWN)
    assert [(c.name, c.arguments) for c in calls] == expected
    assert all(c.parse_error is None and c.synthetic_id for c in calls)
    assert len({c.id for c in calls}) == len(calls)


@pytest.mark.parametrize(("content", "error"), [
    ('{"name": "file_read"}', "arguments missing; expected a JSON object"),
    ('{"name": "file_read", "arguments": ""}',
     "arguments are an empty string; expected a JSON object"),
    ('{"name": "file_read", "arguments": null}', "arguments are null; expected a JSON object"),
    ('{"name": "file_read", "arguments": ["a.py"]}',
     "arguments are an array; expected a JSON object"),
    ("<function=file_read></function>", "arguments missing; expected a JSON object"),
])
def test_unusable_text_arguments_carry_a_parse_error(content: str, error: str) -> None:
    [call] = text_tool_calls(content, KNOWN)
    assert call.name == "file_read" and call.parse_error == error


def test_invalid_json_arguments_string() -> None:
    [call] = text_tool_calls('{"name": "file_read", "arguments": "{file_path: a.py"}', KNOWN)
    assert call.arguments is None and call.parse_error.startswith("invalid JSON (")
