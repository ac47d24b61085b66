"""Terminal safety of every command that prints repository or model text: ``session show`` and
``list``, ``dismiss --list``, ``rules check``, ``llm test`` and error messages spell out control,
format and separator characters as the text output does (``util.display_text``).

The hostile text holds ESC sequences (``ESC[2J`` clears the screen, an OSC sequence ended by BEL
sets the window title), a bare CR that would print "PASS: no finding" at the start of the line,
U+009B (the one-byte CSI of C1), U+202E (bidi override) and U+2028 (line separator).

Real: ``git-ocr`` processes (this environment's console script) with their output on pipes, git
repositories, the loopback model server. Fake: the model's replies; session and dismissal files
written by hand where a hostile repository or an older writer would have written them.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.support.cli import GIT_OCR
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM, openai_text

HOSTILE = "A\x1b[2J\x1b]0;owned\x07B\rPASS: no finding\x9b1m\u202eC\u2028D"
SHOWN = "A\\u001b[2J\\u001b]0;owned\\u0007B\\rPASS: no finding\\u009b1m\\u202eC\\u2028D"
RAW = ("\x1b", "\x07", "\r", "\x9b", "\u202e", "\u2028")
BUGGY = "def div(a, b):\n    return a / b\n"
KEY = "ab" * 32  # a dismissal key: 64 lower-case hex digits


def git_ocr(repo: GitRepo, *args: str, env: dict[str, str] | None = None
            ) -> tuple[int, str, str]:
    """``git-ocr ARGS`` as a real process in ``repo``: (exit code, stdout, stderr), decoded as
    strict UTF-8. Fails when either stream holds a raw hostile character."""
    p = subprocess.run([str(GIT_OCR), *args], cwd=repo.path, env={**repo.env, **(env or {})},
                       capture_output=True, timeout=120, check=False)
    out, err = p.stdout.decode("utf-8"), p.stderr.decode("utf-8")
    for ch in RAW:
        assert ch not in out and ch not in err, (ch, out, err)
    return p.returncode, out, err


def write_session(repo: GitRepo, name: str, records: list[dict[str, Any]]) -> Path:
    """A session file as an older ocr-hook (``json.dumps(ensure_ascii=False)``, which leaves
    C1 controls and U+2028 raw) or a hostile hand would write it."""
    directory = repo.path / ".git" / "ocr-hook" / "sessions"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                    encoding="utf-8")
    return path


def test_session_show_and_list_escape_the_models_text_of_a_real_review(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    repo.stage({"calc.py": BUGGY})
    llm.tool_calls(("code_comment", {"comments": [{
        "path": "calc.py", "content": HOSTILE, "existing_code": "    return a / b",
        "suggestion_code": "", "severity": "high", "category": "bug"}]}),
        ("task_done", {"state": "DONE"}))
    env = {**llm.env(OCR_LLM_MODEL="model\x1b]0;title\x07"), "OCR_HOOK_REVIEW_FILTER": "false"}
    rc, out, _ = git_ocr(repo, "review", "--format", "json", "--effort", "low", env=env)
    assert rc == 1
    data = json.loads(out)
    sid, [finding] = data["session_id"], data["comments"]
    assert finding["content"] == HOSTILE  # JSON output keeps the text, escaped by JSON itself

    rc, out, _ = git_ocr(repo, "session", "show", sid)
    assert rc == 0
    [line] = [ln for ln in out.splitlines() if ln[9:].startswith("comment ")]
    # the content's whitespace (the CR, U+2028) is one space, the rest spelled out
    assert line[9:] == ("comment    calc.py:2 [high · bug] A\\u001b[2J\\u001b]0;owned\\u0007B"
                        f" PASS: no finding\\u009b1m\\u202eC D id {finding['id']}")
    [start] = [ln for ln in out.splitlines() if ln[9:].startswith("start ")]
    assert '"model": "model\\u001b]0;title\\u0007"' in start

    rc, out, _ = git_ocr(repo, "session", "list")
    assert rc == 0
    header, row = out.splitlines()
    assert header.split() == ["ID", "STARTED", "STAGE", "MODEL", "STATUS", "VERDICT", "FINDINGS",
                              "LLM", "TIME"]
    assert row.split()[0] == sid and row.split()[4] == "model\\u001b]0;title\\u0007"

    rc, out, _ = git_ocr(repo, "session", "list", "--json")
    assert (rc, json.loads(out)["model"]) == (0, "model\x1b]0;title\x07")
    rc, out, _ = git_ocr(repo, "session", "show", sid, "--json")
    comments = [r for r in map(json.loads, out.splitlines()) if r["type"] == "comment"]
    assert rc == 0 and [c["content"] for c in comments] == [HOSTILE]  # the same JSON values


def test_session_show_escapes_every_field_of_a_hostile_session_file(repo: GitRepo) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    write_session(repo, "20250101-000000-abcdef", [
        {"type": "start", "stage": "pre-commit", "mode": "staged", "model": HOSTILE},
        {"type": "comment", "path": "a\rb.py", "start_line": 3, "end_line": 4,
         "severity": "high", "category": "bug", "content": HOSTILE, "id": "1234abcd"},
        {"type": "tool_call", "group": HOSTILE, "tool": "file_read\x1b[8m",
         "arguments": {"file_path": "x\u202e.py"}, "ok": True, "result": HOSTILE},
        {"type": "result", "verdict_line": HOSTILE, "diffs": []},
        {"type": "end", "status": "complete", "verdict": "pass\x9b2J", "findings": "many",
         "llm_calls": 1, "elapsed_ms": 1500},
    ])
    rc, out, _ = git_ocr(repo, "session", "show", "20250101")
    assert rc == 0
    assert out.splitlines() == [
        f'--:--:-- start      {{"stage": "pre-commit", "mode": "staged", "model": "{SHOWN}"}}',
        "--:--:-- comment    a\\rb.py:3-4 [high · bug] A\\u001b[2J\\u001b]0;owned\\u0007B"
        " PASS: no finding\\u009b1m\\u202eC D id 1234abcd",
        f"--:--:-- tool_call  [{SHOWN}] file_read\\u001b[8m"
        ' {"file_path": "x\\u202e.py"} → ok: A\\u001b[2J\\u001b]0;owned\\u0007B PASS: no'
        " finding\\u009b1m\\u202eC D",
        f"--:--:-- result     {SHOWN}; 0 file diff(s) kept for --html",
        '--:--:-- end        {"status": "complete", "verdict": "pass\\u009b2J", "findings":'
        ' "many", "llm_calls": 1, "elapsed_ms": 1500}',
    ]
    rc, out, _ = git_ocr(repo, "session", "list")
    assert rc == 0
    # no start time; "many" findings is not a number: the comment records count
    assert out.splitlines()[1].split() == [
        "20250101-000000-abcdef", "pre-commit", "A\\u001b[2J\\u001b]0;owned\\u0007B\\rPASS:",
        "no", "finding\\u009b1m\\u202eC\\u2028D", "complete", "pass\\u009b2J", "1", "1", "1.5s"]
    rc, out, _ = git_ocr(repo, "session", "show", "20250101", "--json")
    assert rc == 0 and [json.loads(ln)["type"] for ln in out.splitlines()] == [
        "start", "comment", "tool_call", "result", "end"]  # U+2028 splits no record
    assert json.loads(out.splitlines()[3])["verdict_line"] == HOSTILE


def test_dismiss_list_escapes_a_hostile_shared_dismissal_file(repo: GitRepo) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    entry = {"key": KEY, "path": "src/\x1b[2Ja.py", "category": "bug\u202e",
             "code": "\n  x = 1\x9b31m\n", "reason": HOSTILE, "author": "Eve\r <e@x>",
             "date": "2025-01-01T00:00:00Z", "finding_id": "", "message": HOSTILE}
    repo.write({".ocr-hook-dismissed.json": json.dumps(
        {"version": 1, "dismissed": [entry]}, ensure_ascii=False)})
    rc, out, _ = git_ocr(repo, "dismiss", "--list")
    assert rc == 0
    assert out.splitlines() == [
        f"{KEY[:12]}  shared    src/\\u001b[2Ja.py [bug\\u202e]  2025-01-01T00:00:00Z"
        "  Eve\\r <e@x>",
        f"    key:     {KEY[:12]}",
        "    code:    x = 1\\u009b31m",
        f"    finding: {SHOWN}",
        f"    reason:  {SHOWN}",
    ]
    rc, out, _ = git_ocr(repo, "dismiss", "--list", "--json")
    assert rc == 0 and json.loads(out)["reason"] == HOSTILE and "\\u009b" in out


def test_rules_check_escapes_a_repository_rule(repo: GitRepo) -> None:
    rule = f"Check {HOSTILE}\n\tsecond line"
    repo.commit({".opencodereview/rule.json": json.dumps(
        {"rules": [{"path": "*.py", "rule": rule}]}, ensure_ascii=False)}, "rules")
    rc, out, _ = git_ocr(repo, "rules", "check", "app\x1b[2J.py")
    assert rc == 0
    assert out.splitlines() == [
        "path:    app\\u001b[2J.py", "layer:   repo", "pattern: *.py", "source:  inline", "",
        f"Check {SHOWN}", "\tsecond line",  # its own newline and tab are kept
    ]


def test_llm_test_escapes_the_models_reply_and_the_servers_error(repo: GitRepo,
                                                                 llm: ScriptedLLM) -> None:
    llm.reply(openai_text(HOSTILE))
    rc, out, _ = git_ocr(repo, "llm", "test", env=llm.env())
    assert rc == 1
    assert out.splitlines()[-1] == (
        f'FAILED:   model does not call tools: it answered with text instead of a tool call'
        f' ("{SHOWN}"); reviews need a model and server with tool calling (llama.cpp: --jinja;'
        " vLLM: --enable-auto-tool-choice)")
    llm.reply({"error": {"message": HOSTILE}}, status=400)
    rc, out, _ = git_ocr(repo, "llm", "test", env=llm.env())
    assert rc == 3
    [failed] = [ln for ln in out.splitlines() if ln.startswith("FAILED:")]
    assert failed == f"FAILED:   LLM rejected the request (HTTP 400): {SHOWN}"
    llm.reply(openai_text(HOSTILE))
    rc, out, _ = git_ocr(repo, "llm", "test", "--json", env=llm.env())
    assert (rc, json.loads(out)["reply_text"]) == (1, HOSTILE)


def test_error_messages_on_stderr_escape_names_and_model_text(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    repo.stage({"calc.py": BUGGY})
    missing = tmp_path / "no\x1b]0;t\x07dir" / "r.json"
    rc, _, err = git_ocr(repo, "review", "--output", str(missing))
    assert rc == 2
    assert err == (f"ocr-hook: --output {tmp_path}/no\\u001b]0;t\\u0007dir/r.json: directory"
                   f" {tmp_path}/no\\u001b]0;t\\u0007dir does not exist\n")
    rc, _, err = git_ocr(repo, "review", "--no-such\x1b[2J")
    assert rc == 2
    assert err.splitlines()[-1] == "git ocr: error: unrecognized arguments: --no-such\\u001b[2J"
    # a warning logged while the review runs: the model answers the review filter with a
    # tool of its own making, twice
    llm.tool_calls(("code_comment", {"comments": [{
        "path": "calc.py", "content": "Division by zero.", "existing_code": "    return a / b",
        "suggestion_code": "", "severity": "high", "category": "bug"}]}),
        ("task_done", {"state": "DONE"}))
    llm.tool_calls((HOSTILE, {}))
    llm.tool_calls((HOSTILE, {}))
    env = {**llm.env(), "OCR_HOOK_REVIEW_FILTER": "true"}
    rc, _, err = git_ocr(repo, "review", "--effort", "low", env=env)
    assert rc == 1
    assert (f"ocr-hook: review filter failed for calc.py: malformed answer (unknown tool(s)"
            f" {SHOWN}); keeping all comments") in err.splitlines()
