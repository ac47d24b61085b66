"""End-to-end reviews through ``cli.main`` on real repositories against the scripted loopback
model. Real: git, HTTP, JSON; fake: the model's replies."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ocr_hook.tools.builtin import TOOLS
from tests.support.cli import GIT_OCR, run_cli
from tests.support.gitrepo import GitRepo
from tests.support.samples import APP_PY, SQL_LINE, sql_comment
from tests.support.scripted_llm import ScriptedLLM


def test_sql_injection_comment_lands_on_line_12_and_blocks(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({"app.py": APP_PY})
    assert APP_PY.splitlines()[11].strip() == SQL_LINE
    llm.tool_calls(("code_comment", sql_comment()))
    llm.tool_calls(("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review", "--format", "json"], llm.env(), capsys)
    data = json.loads(out)
    assert rc == 1, err
    assert data["verdict"] == "findings"
    assert data["status"] == "complete"
    assert data["gate"] == {"mode": "blocking", "fail_on": "high", "blocking": True}
    [c] = data["comments"]
    assert (c["path"], c["side"], c["start_line"], c["end_line"]) == ("app.py", "new", 12, 12)
    assert (c["severity"], c["category"], c["anchor"]) == ("critical", "security", "hunk_new")
    assert c["existing_code"].strip() == SQL_LINE
    assert c["suggestion_code"].startswith("cursor.execute(")
    files = {f["path"]: f for f in data["files"]}
    assert files["app.py"] == {"path": "app.py", "status": "added", "reviewed": True, "reason": ""}
    assert data["summary"]["files_reviewed"] == 1
    assert data["summary"]["by_severity"]["critical"] == 1
    # round 1: comment, then task_done; one round (effort low, the default); no review filter
    # (opt-in)
    assert data["summary"]["llm_calls"] == 2 == len(llm.requests)
    first = llm.requests[0]
    assert first["model"] == "scripted-model"
    assert {t["function"]["name"] for t in first["tools"]} == set(TOOLS)
    assert "temperature" not in first
    user = first["messages"][1]["content"]
    assert '<file path="app.py"' in user and "12 +    query = " in user
    assert llm.headers[0]["authorization"] == "Bearer test-token"
    assert llm.paths[0] == "/v1/chat/completions"
    # the tool result for code_comment came back in the second request
    tool_msgs = [m for m in llm.requests[1]["messages"] if m["role"] == "tool"]
    assert tool_msgs[0]["content"] == "Filed: app.py:12 (new side)"  # where it landed


def test_advisory_mode_exits_zero_with_the_same_finding(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"app.py": APP_PY})  # first commit of a repository: no HEAD yet
    llm.tool_calls(("code_comment", sql_comment()), ("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    rc, out, _ = run_cli(["review", "--format", "json", "--effort", "low", "--no-filter"],
                         llm.env(OCR_HOOK_GATE_MODE="advisory"), capsys)
    data = json.loads(out)
    assert rc == 0
    assert data["verdict"] == "findings"
    assert data["gate"]["mode"] == "advisory" and data["gate"]["blocking"] is False
    assert data["comments"][0]["start_line"] == 12
    assert data["input"]["base"] == "(empty tree)"
    assert len(llm.requests) == 1


def test_fail_on_critical_lets_a_high_finding_pass(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"app.py": APP_PY})
    args = sql_comment()
    args["comments"][0]["severity"] = "high"
    llm.tool_calls(("code_comment", args), ("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    rc, out, _ = run_cli(["review", "--format", "json", "--effort", "low"],
                         llm.env(OCR_HOOK_FAIL_ON="critical"), capsys)
    assert rc == 0
    assert json.loads(out)["verdict"] == "pass"


def test_staged_bug_is_reviewed_not_the_unstaged_fix(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({"app.py": APP_PY})
    fixed = APP_PY.replace(SQL_LINE, 'query = "SELECT id, email FROM users WHERE name = ?"')
    repo.write({"app.py": fixed})  # the fix exists only in the work tree
    repo.git("stash", "push", "-q", "--keep-index", "-m", "wip")
    repo.write({"app.py": fixed, "notes.txt": "untracked\n"})
    before = repo.state()
    llm.tool_calls(("file_read", {"file_path": "app.py", "start_line": 12, "end_line": 12}))
    llm.tool_calls(("code_comment", sql_comment()), ("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    rc, out, _ = run_cli(["review", "--format", "json", "--effort", "low"], llm.env(), capsys)
    assert rc == 1
    diff_prompt = llm.requests[0]["messages"][1]["content"]
    assert "+ '\"" not in diff_prompt and "name = '\" + name" in diff_prompt
    tool_result = [m for m in llm.requests[1]["messages"] if m["role"] == "tool"][0]["content"]
    assert tool_result == (
        "File: app.py (Total lines: 14)\nIS_TRUNCATED: false\nLINE_RANGE: 12-12\n"
        "12|    " + SQL_LINE
    )
    assert "notes.txt" not in json.dumps(llm.requests)
    assert repo.state() == before


def test_no_endpoint_prints_one_line_and_allows(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"app.py": APP_PY})
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review"], {}, capsys)
    assert rc == 0
    assert "NOT REVIEWED: no LLM endpoint configured" in out
    assert "Traceback" not in out + err
    rc, out, err = run_cli(["review", "--format", "json"], {"OCR_HOOK_GATE_ON_ERROR": "block"}, capsys)
    data = json.loads(out)
    assert rc == 3
    assert data["verdict"] == "incomplete"
    assert data["files"][0]["reason"] == "no_endpoint"
    assert err.count("NOT REVIEWED") == 1


def test_invalid_config_value_is_one_line_exit_2(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"app.py": APP_PY})
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review"], {"OCR_HOOK_GATE_MODE": "sometimes"}, capsys)
    assert rc == 2
    assert out == ""
    assert err.strip().splitlines() == [
        "ocr-hook: invalid gate.mode = 'sometimes' in environment variable OCR_HOOK_GATE_MODE:"
        " must be blocking or advisory"
    ]


def test_outside_a_repository_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    d = tmp_path / "plain"
    d.mkdir()
    monkeypatch.chdir(d)
    rc, _, err = run_cli(["review"], {"GIT_CEILING_DIRECTORIES": str(tmp_path)}, capsys)
    assert rc == 2
    assert err.startswith("ocr-hook: git rev-parse: fatal: not a git repository")
    assert "Traceback" not in err


def test_console_script_runs_from_a_subdirectory(repo: GitRepo, llm: ScriptedLLM) -> None:
    repo.stage({"src/pkg/app.py": APP_PY})
    llm.tool_calls(("code_comment", sql_comment("src/pkg/app.py")), ("task_done", {"state": "DONE"}))
    exe = GIT_OCR
    env = {**repo.env, **llm.env(), "PATH": f"{exe.parent}:{os.environ['PATH']}"}
    p = subprocess.run(["git", "ocr", "review", "--format", "json", "--effort", "low"],
                       cwd=repo.path / "src" / "pkg", env=env, capture_output=True, text=True)
    assert p.returncode == 1, p.stderr
    data = json.loads(p.stdout)
    assert data["comments"][0]["path"] == "src/pkg/app.py"
    assert data["comments"][0]["start_line"] == 12


@pytest.mark.parametrize("target", ["somedir", "missing/report.json"])
def test_bad_output_path_is_refused_before_the_review(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], tmp_path: Path, target: str,
) -> None:
    repo.stage({"app.py": APP_PY})
    (tmp_path / "somedir").mkdir()
    llm.tool_calls(("code_comment", sql_comment()), ("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    dest = tmp_path / target
    rc, out, err = run_cli(["review", "--format", "json", "--output", str(dest)], llm.env(),
                           capsys)
    assert rc == 2
    assert out == ""
    why = ("is a directory; give a file name" if target == "somedir"
           else f"directory {tmp_path / 'missing'} does not exist")
    assert err.splitlines() == [f"ocr-hook: --output {dest}: {why}"]
    assert llm.requests == []  # refused before any review work


def test_output_file_is_replaced_whole(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    repo.stage({"app.py": APP_PY})
    llm.tool_calls(("code_comment", sql_comment()), ("task_done", {"state": "DONE"}))
    reports = tmp_path / "reports"
    reports.mkdir()
    dest = reports / "r.json"
    dest.write_text("old report, much longer than nothing " * 1000)
    monkeypatch.chdir(repo.path)
    rc, out, _ = run_cli(["review", "--format", "json", "--effort", "low", "--no-filter",
                          "--output", str(dest)], llm.env(), capsys)
    assert rc == 1
    assert out == ""
    data = json.loads(dest.read_text(encoding="utf-8"))
    assert data["comments"][0]["start_line"] == 12
    assert [p.name for p in reports.iterdir()] == ["r.json"]  # no temporary file left
    assert dest.stat().st_mode & 0o777 == 0o644


def test_commit_and_range_flags_together_are_a_usage_error(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    repo.commit({"app.py": APP_PY}, "app")
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review", "--commit", "HEAD", "--from", "HEAD~1", "--to", "HEAD"],
                           llm.env(), capsys)
    assert (rc, out) == (2, "")
    assert err.splitlines() == [
        "ocr-hook: --commit cannot be combined with --from/--to: review one commit"
        " (--commit REF) or one range (--from A --to B)"]
    rc, out, err = run_cli(["review", "--from", "HEAD~1"], llm.env(), capsys)
    assert (rc, out, err) == (2, "", "ocr-hook: --from and --to must be given together\n")
    assert llm.requests == []


def test_review_command_states_blocking_findings_without_commit_hints(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"app.py": APP_PY})
    llm.tool_calls(("code_comment", sql_comment()), ("task_done", {"state": "DONE"}))
    llm.tool_calls(("code_comment", sql_comment()), ("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review", "--effort", "low", "--no-filter", "--no-cache"],
                           llm.env(), capsys)
    assert rc == 1
    [fid] = [ln.split(" id ")[1] for ln in out.splitlines() if ln.startswith("BLOCKING ")]
    assert err.splitlines() == [
        "ocr-hook: reviewing 1 file in 1 group with scripted-model…",
        "ocr-hook: blocking findings: 1 at or above high",
        "ocr-hook: not a problem? dismiss it (or put `ocr-hook: ignore <reason>` on its line):",
        f"ocr-hook:   git ocr dismiss {fid} --reason '…'    # app.py:12 [critical · security]",
    ]
    rc, out, err = run_cli(["hook", "pre-commit", "--no-filter", "--no-cache"], llm.env(), capsys)
    assert rc == 1
    assert err.splitlines()[1].startswith(
        "ocr-hook: commit blocked: 1 finding(s) at or above high. Fix and retry, or bypass once"
        " with `git commit --no-verify`")
    assert err.splitlines()[-1] == (
        f"ocr-hook:   git ocr dismiss {fid} --reason '…'    # app.py:12 [critical · security]")


def test_config_error_in_a_hook_says_how_to_bypass_once(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({".ocr-hook.toml": '[reviw]\neffort = "low"\n'}, "typo")
    repo.stage({".ocr-hook.toml": '[review]\neffort = "low"\n'})  # the fix, blocked by HEAD
    monkeypatch.chdir(repo.path)
    error = ("ocr-hook: unknown configuration section [reviw] in .ocr-hook.toml (HEAD); allowed:"
             " llm, review, select, rules, gate, cache, tools, mcp, security, budget, telemetry")
    rc, out, err = run_cli(["hook", "pre-commit"], {}, capsys)
    assert (rc, out) == (2, "")
    assert err.splitlines() == [
        error,
        "ocr-hook: to commit anyway, bypass the review once: `git commit --no-verify` or"
        " `OCR_HOOK_SKIP=1 git commit`",
    ]
    rc, out, err = run_cli(["hook", "pre-commit"], {"OCR_HOOK_SKIP": "1"}, capsys)
    assert (rc, out, err) == (0, "", "ocr-hook: skipped (OCR_HOOK_SKIP=1)\n")
    rc, out, err = run_cli(["review"], {}, capsys)  # by hand: the one-line error only
    assert (rc, err.splitlines()) == (2, [error])


def _closed_port_url() -> str:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.mark.parametrize("case", ["http_500", "connection_refused", "timeout", "budget",
                                  "no_tool_calls"])
def test_every_incomplete_review_prints_one_not_reviewed_line(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], case: str,
) -> None:
    repo.stage({"app.py": APP_PY})
    env = llm.env(OCR_HOOK_LLM_MAX_RETRIES="0")
    flags = ["--effort", "low", "--no-cache"]
    if case == "http_500":
        llm.default = None
        for _ in range(2):
            llm.reply({"error": {"message": "upstream exploded"}}, status=500)
        why = "LLM server error (HTTP 500): upstream exploded"
    elif case == "connection_refused":
        env["OCR_LLM_URL"] = url = _closed_port_url()
        why = f"cannot connect to LLM endpoint {url}/chat/completions: connection refused"
    elif case == "timeout":
        for _ in range(2):
            llm.tool_calls(("task_done", {"state": "DONE"}), delay_s=3)
        flags += ["--timeout", "0.5"]
        why = "time limit of 0.5s reached (review.timeout_s, --timeout)"
    elif case == "budget":
        for _ in range(2):
            llm.tool_calls(("file_read", {"file_path": "app.py"}))
        flags += ["--max-tokens-budget", "1"]
        why = "token budget of 1 used up (review.max_tokens_budget, --max-tokens-budget)"
    else:
        for _ in range(6):
            llm.text("Looks fine.")
        why = ("the model made no tool calls (3 replies in a row without one; check the model"
               " and server with `git ocr llm test`)")
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review", *flags], env, capsys)
    assert rc == 0, err
    lines = out.splitlines()
    assert [ln for ln in lines if "NOT REVIEWED" in ln] == [f"NOT REVIEWED: {why}"]
    assert lines[-1] == ("PASS: review incomplete, let through by gate.on_error = allow"
                         " (blocking mode)")
    assert "NOT REVIEWED" not in err
    rc, out, err = run_cli(["review", "--format", "json", *flags], env, capsys)
    assert (rc, json.loads(out)["verdict"]) == (0, "incomplete")
    assert [ln for ln in err.splitlines() if "NOT REVIEWED" in ln] == [
        f"ocr-hook: NOT REVIEWED: {why}"]


def test_summary_counts_failed_llm_attempts(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"app.py": APP_PY})
    monkeypatch.chdir(repo.path)
    url = _closed_port_url()
    env = {"OCR_LLM_URL": url, "OCR_LLM_MODEL": "m", "OCR_HOOK_LLM_MAX_RETRIES": "1"}
    rc, out, _ = run_cli(["review", "--effort", "low"], env, capsys)
    assert rc == 0
    [summary] = [ln for ln in out.splitlines() if ln.startswith("ocr-hook: ")]
    assert "; 0 LLM call(s) (2 failed attempts); 0 cache hit(s);" in summary
    assert (f"NOT REVIEWED: cannot connect to LLM endpoint {url}/chat/completions: connection"
            " refused (after 2 attempts)") in out.splitlines()
    rc, out, _ = run_cli(["review", "--effort", "low", "--format", "json"], env, capsys)
    data = json.loads(out)
    assert (data["summary"]["llm_calls"], data["summary"]["llm_attempts"]) == (0, 2)


NOTHING_TEXT = (  # `git ocr review` with nothing staged, byte for byte
    "Nothing to review.\n"
    "\n"
    "ocr-hook: 0 reviewed, 0 excluded, 0 incomplete; 0 finding(s); tokens in/out 0/0; 0 LLM"
    " call(s); 0 cache hit(s); {elapsed}s\n"
    "PASS: no finding at or above high (blocking mode)\n"
)


@pytest.mark.parametrize("argv", [["review"], ["hook", "pre-commit"]])
def test_nothing_to_review_prints_the_same_text_and_keeps_a_session_log(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], argv: list[str],
) -> None:
    """Nothing staged: the text result, byte for byte (the elapsed time aside), exit 0, no
    request, nothing on stderr; the run's session log (spec §12) has its start, result and
    end records; the cache directory is not created (nothing was written, nothing pruned)."""
    repo.commit({"README.md": "hi\n"}, "init")
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(argv, llm.env(), capsys)
    elapsed = out.splitlines()[2].rsplit(" ", 1)[1][:-1]
    assert float(elapsed) < 60
    assert (rc, out, err, llm.requests) == (0, NOTHING_TEXT.format(elapsed=elapsed), "", [])
    sessions = list((repo.path / ".git" / "ocr-hook" / "sessions").glob("*.jsonl"))
    assert len(sessions) == 1
    records = [json.loads(ln) for ln in sessions[0].read_text().splitlines()]
    assert [r["type"] for r in records] == ["start", "result", "end"]
    assert (records[-1]["status"], records[-1]["verdict"]) == ("skipped", "pass")
    assert not (repo.path / ".git" / "ocr-hook" / "cache").exists()
