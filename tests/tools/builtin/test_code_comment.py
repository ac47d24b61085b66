"""``code_comment`` and ``task_done`` (spec §7.1): exact results for the model, normalisation
of invalid values, the JSON-string form, and the error cases. Pure: no git, no model."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ocr_hook.findings import RawComment
from ocr_hook.tools.builtin.code_comment import code_comment_handler
from ocr_hook.tools.builtin.task_done import parse_task_done
from ocr_hook.vocabulary import Severity

ITEM = {"path": "./app.py", "content": " Division by zero when n is 0. ", "existing_code": "1 / n",
        "severity": "HIGH", "category": "Bug", "thinking": "n comes from the request"}


def comment(args: dict[str, Any]) -> tuple[str, bool, list[RawComment]]:
    got: list[RawComment] = []
    r = code_comment_handler(got.extend, "g1")(args)
    return r.text, r.is_error, got


def test_code_comment_success_and_normalised_fields() -> None:
    text, is_error, got = comment({"comments": [ITEM]})
    assert (text, is_error) == ("Successfully commented.", False)
    assert got == [RawComment("app.py", "Division by zero when n is 0.", "1 / n", "",
                              Severity.HIGH, "bug", None, "g1")]


def test_code_comment_accepts_a_json_string() -> None:
    text, _, got = comment({"comments": json.dumps([ITEM, {**ITEM, "path": "b.py"}])})
    assert text == "Successfully commented."
    assert [c.path for c in got] == ["app.py", "b.py"]


def test_invalid_severity_and_category_are_normalised_and_the_model_is_told() -> None:
    text, is_error, got = comment({"comments": [{**ITEM, "severity": "urgent", "category": "x"}]})
    assert (text, is_error) == (
        "Successfully commented.\nNote: comment 1: unknown severity 'urgent' recorded as low"
        " (allowed: critical, high, medium, low); comment 1: unknown category 'x' recorded as"
        " other", False)
    assert [(c.severity, c.category) for c in got] == [(Severity.LOW, "other")]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({}, "Error: 'comments' array is required, e.g. {\"comments\": [{\"path\": ...,"
             " \"content\": ..., \"existing_code\": ..., \"severity\": ..., \"category\": ...}]}"),
        ({"comments": []}, "Error: 'comments' array is required, e.g. {\"comments\": [{\"path\":"
                           " ..., \"content\": ..., \"existing_code\": ..., \"severity\": ...,"
                           " \"category\": ...}]}"),
        ({"comments": "[{oops"}, "Error: failed to parse 'comments' JSON string: Expecting"
                                 " property name enclosed in double quotes: line 1 column 3"
                                 " (char 2)"),
        ({"comments": [{"content": "no path"}, "text"]},
         "Error: no valid comments. comment 1 ignored: 'path' and 'content' are required;"
         " comment 2 ignored: not an object"),
    ],
)
def test_code_comment_errors(args: dict[str, Any], expected: str) -> None:
    text, is_error, got = comment(args)
    assert (text, is_error, got) == (expected, True, [])


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"state": "DONE"}, ("DONE", "Task completed successfully.")),
        ({"state": "failed"}, ("FAILED", "Task completed successfully.")),
        ({}, ("DONE", "Task completed successfully.")),
        ({"state": 1}, (None, "Error: task_done state must be DONE or FAILED.")),
        ({"state": "maybe"}, (None, 'Error: invalid task_done state "maybe"; expected DONE or'
                                    " FAILED.")),
    ],
)
def test_task_done_states(args: dict[str, Any], expected: tuple[str | None, str]) -> None:
    assert parse_task_done(args) == expected


@pytest.mark.parametrize(("given", "flag"), [(True, True), (False, False), ("true", None),
                                             (1, None), (0, None), (None, None)])
def test_preexisting_is_a_json_boolean_or_not_said(given: Any, flag: bool | None) -> None:
    _, is_error, got = comment({"comments": [{**ITEM, "preexisting": given}]})
    assert not is_error
    assert [c.preexisting for c in got] == [flag]


@pytest.mark.parametrize(("given", "label"), [("E2", "E2"), (" e12 ", "E12"), ("E", ""),
                                              ("2", ""), ("E2b", ""), (2, ""), (None, "")])
def test_repeats_is_an_earlier_findings_label_or_nothing(given: Any, label: str) -> None:
    _, is_error, got = comment({"comments": [{**ITEM, "repeats": given}]})
    assert not is_error
    assert [c.repeats for c in got] == [label]

