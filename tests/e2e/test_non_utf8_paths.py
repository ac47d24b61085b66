"""Non-UTF-8 file names: the file is reviewed, the model sees the name as ``\\xNN``
and its echo of that form reaches the real file (tools and comments), JSON is strict UTF-8 with
the exact bytes in ``path_bytes_b64``, SARIF is written, and every output format gives the same
exit code.

Real: a git repository with a Latin-1 file name, HTTP to the scripted loopback model, the
session file. Fake: the model's replies.
"""

from __future__ import annotations

import base64
import json
import os
from typing import Any

import pytest

from ocr_hook.util import text as pathtext
from tests.support.cli import run_cli
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

RAW_NAME = b"caf\xe9.py"
SHOWN = "caf\\xe9.py"  # what the model, JSON and the terminal see
BUGGY = "def div(a, b):\n    return a / b\n"


def test_non_utf8_file_name_is_reviewed_and_reported_alike_in_every_format(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    (repo.path / os.fsdecode(RAW_NAME)).write_text(BUGGY)
    repo.git("add", "-A")
    llm.tool_calls(("file_read", {"file_path": SHOWN}), ("file_find", {"query_name": "caf\\xe9"}))
    llm.tool_calls(("code_comment", {"comments": [{
        "path": SHOWN, "existing_code": "    return a / b",
        "content": "Division by zero when b is 0.", "severity": "high", "category": "bug"}]}),
        ("task_done", {"state": "DONE"}))
    before = repo.state()
    monkeypatch.chdir(repo.path)
    rc, out, _ = run_cli(["review", "--format", "json", "--effort", "low", "--no-filter"],
                         llm.env(), capsysbinary)
    assert rc == 1
    assert len(llm.requests) == 2
    prompt = llm.requests[0]["messages"][1]["content"]
    assert f'<file path="{SHOWN}"' in prompt
    results = [m["content"] for m in llm.requests[1]["messages"] if m["role"] == "tool"]
    assert results[0].startswith(f"File: {SHOWN} (Total lines: 2)\n")
    assert results[0].endswith("2|    return a / b")
    assert SHOWN in results[1].splitlines()
    data: dict[str, Any] = json.loads(out.decode("utf-8", "strict"))  # strict UTF-8 JSON
    assert [(f["path"], f["path_bytes_b64"], f["reviewed"]) for f in data["files"]] == [
        (SHOWN, base64.b64encode(RAW_NAME).decode(), True)]
    [c] = data["comments"]
    assert (c["path"], c["side"], c["start_line"], c["anchor"]) == (SHOWN, "new", 2, "hunk_new")
    assert base64.b64decode(c["path_bytes_b64"]) == RAW_NAME
    assert data["groups"] == [{"label": data["groups"][0]["label"], "files": [SHOWN]}]

    # the same review as SARIF and text: served by the result cache, same exit code
    rc, out, _ = run_cli(["review", "--format", "sarif", "--effort", "low", "--no-filter"],
                         llm.env(), capsysbinary)
    assert rc == 1
    sarif = json.loads(out.decode("utf-8", "strict"))
    [res] = sarif["runs"][0]["results"]
    loc = res["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "caf%E9.py"
    assert loc["region"] == {"startLine": 2, "endLine": 2}
    rc, out, _ = run_cli(["review", "--effort", "low", "--no-filter"], llm.env(), capsysbinary)
    assert rc == 1
    assert f"BLOCKING {SHOWN}:2 [high · bug] id " in out.decode("utf-8", "strict")
    assert len(llm.requests) == 2
    assert repo.state() == before


@pytest.mark.parametrize(("raw", "text"), [
    (b"caf\xe9.py", "caf\\xe9.py"),
    (b"\xff\xfe/x.py", "\\xff\\xfe/x.py"),
    ("café.py".encode(), "café.py"),
    (b"a\\x41.py", "a\\x41.py"),
])
def test_shown_and_real_path_round_trip(raw: bytes, text: str) -> None:
    path = os.fsdecode(raw)
    assert pathtext.shown_text(path) == text
    assert pathtext.real_path(pathtext.shown_text(path)) == path
    assert pathtext.shown_text(path).encode("utf-8")
