"""The review pipeline of spec §6 end to end through ``cli.main``: grouping, effort rounds,
the main loop's limits, compression, budget, deadline and failure isolation.

Real: git repositories, HTTP to the loopback model server, JSON output, session logs. Fake: the
model's replies (ScriptedLLM; replies routed by a substring of the request with ``match`` where
groups run in parallel). The review filter is switched off (OCR_HOOK_REVIEW_FILTER=false) so the
request counts below are the pipeline's own; its tests live with the comment pipeline.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from ocr_hook.report.result import not_reviewed_cause, not_reviewed_line
from tests.support.cli import GIT_OCR, run_json
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM, openai_text, openai_tool_calls

GROUPING = "sort the changed files"  # in the grouping system prompt
SUMMARY = "Condense this part"  # in the compression user prompt
DONE = ("task_done", {"state": "DONE"})


def pyfile(tag: str, n: int) -> str:
    return "".join(f"value_{tag}_{i} = {i}\n" for i in range(n))


def review(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], *args: str, **env: str,
) -> tuple[int, dict[str, Any], str]:
    monkeypatch.chdir(repo.path)
    return run_json(["review", "--format", "json", "--no-cache", *args], llm.env(**env), capsys,
                    review_filter=False)


def groups_of(data: dict[str, Any]) -> list[tuple[str, list[str]]]:
    return [(g["label"], g["files"]) for g in data["groups"]]


def reasons(data: dict[str, Any]) -> dict[str, tuple[bool, str]]:
    return {f["path"]: (f["reviewed"], f["reason"]) for f in data["files"]}


def kinds(llm: ScriptedLLM) -> list[str]:
    """What each recorded request was: grouping | summary | main."""
    out = []
    for body in llm.requests:
        system = body["messages"][0]["content"]
        last = body["messages"][-1]["content"] or ""
        if GROUPING in system:
            out.append("grouping")
        elif SUMMARY in last:
            out.append("summary")
        else:
            out.append("main")
    return out


def session_records(repo: GitRepo, kind: str) -> list[dict[str, Any]]:
    [path] = (repo.path / ".git" / "ocr-hook" / "sessions").glob("*.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [r for r in rows if r["type"] == kind]


# --- grouping (spec §6.1 step 2) ------------------------------------------------------------


def test_one_file_is_one_group_with_no_grouping_call(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"app.py": pyfile("a", 10)})
    rc, data, _ = review(repo, llm, monkeypatch, capsys, "--effort", "low")
    assert rc == 0 and data["status"] == "complete"
    assert groups_of(data) == [("app.py", ["app.py"])]
    assert kinds(llm) == ["main"]
    [done] = session_records(repo, "group_done")
    assert (done["stop_reason"], done["round_stop_reasons"]) == ("task_done", ["task_done"])


def test_three_small_files_are_one_bundle_without_grouping(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"a.py": pyfile("a", 30), "b.py": pyfile("b", 30), "c.py": pyfile("c", 30)})
    rc, data, _ = review(repo, llm, monkeypatch, capsys, "--effort", "low")
    assert rc == 0
    assert groups_of(data) == [("small change set", ["a.py", "b.py", "c.py"])]
    assert kinds(llm) == ["main"]
    user = llm.requests[0]["messages"][1]["content"]
    assert all(f'<file path="{p}" lines="30">' in user for p in ("a.py", "b.py", "c.py"))


def test_a_large_change_gets_no_plan_and_round_two_sees_the_confirmed_findings(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"app.py": pyfile("a", 60)})  # 60 changed lines: no plan request either
    llm.tool_calls(comment("5"), DONE)
    llm.tool_calls(DONE)
    rc, data, _ = review(repo, llm, monkeypatch, capsys, "--effort", "medium")
    assert rc == 1 and [c["start_line"] for c in data["comments"]] == [6]
    assert kinds(llm) == ["main", "main"]
    r1, r2 = (r["messages"][1]["content"] for r in llm.requests)
    assert "<confirmed_findings>" not in r1 and "<review_plan>" not in r1
    assert "<confirmed_findings>" in r2 and "issue: Problem 5" in r2


def test_placeholders_inside_the_diff_are_never_substituted(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = "# {{confirmed}} {{diffs}} {{rules}} {{language}} {{severity}}\n" + pyfile("a", 60)
    repo.stage({"app.py": text})
    rc, _, _ = review(repo, llm, monkeypatch, capsys, "--effort", "low")
    assert rc == 0
    for body in llm.requests:
        user = body["messages"][1]["content"]
        assert "+# {{confirmed}} {{diffs}} {{rules}} {{language}} {{severity}}" in user
        assert user.count("<review_files>") == 1


def test_three_large_files_are_reviewed_one_group_each(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"a.py": pyfile("a", 70), "b.py": pyfile("b", 70), "c.py": pyfile("c", 70)})
    rc, data, _ = review(repo, llm, monkeypatch, capsys, "--effort", "low")
    assert rc == 0 and data["status"] == "complete"
    assert groups_of(data) == [("a.py", ["a.py"]), ("b.py", ["b.py"]), ("c.py", ["c.py"])]
    assert kinds(llm) == ["main", "main", "main"]


def twelve_files(repo: GitRepo, n: int = 12) -> list[str]:
    names = [f"pkg/m{i:02}.py" for i in range(n)]
    repo.stage({name: pyfile(f"m{i}", 3) for i, name in enumerate(names)})
    return names


def test_twelve_files_are_grouped_by_one_call_on_metadata_only(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    names = twelve_files(repo)
    answer = [
        {"label": "core models", "files": [0, 1, "pkg/m02.py", "nope.py", 1]},
        {"label": "views", "files": ["pkg/m03.py", 4, 99]},
        {"label": "", "files": [5]},
        {"label": "dup only", "files": [0]},
    ]
    llm.reply(openai_text("```json\n" + json.dumps(answer) + "\n```"), match=GROUPING)
    rc, data, _ = review(repo, llm, monkeypatch, capsys, "--effort", "low")
    assert rc == 0 and data["status"] == "complete"
    assert groups_of(data) == [
        ("core models", names[0:3]),
        ("views", names[3:5]),
        (names[5], [names[5]]),
        *[(n, [n]) for n in names[6:]],  # not covered by the answer: one group each
    ]
    assert kinds(llm).count("grouping") == 1 and kinds(llm)[0] == "grouping"
    assert kinds(llm).count("main") == 9
    grouping_req = llm.requests[0]
    assert "tools" not in grouping_req
    listing = grouping_req["messages"][1]["content"]
    assert "[0] ADDED pkg/m00.py (+3/-0)" in listing and "[11] ADDED pkg/m11.py (+3/-0)" in listing
    assert "value_m0_" not in json.dumps(grouping_req)  # no diff text


def test_malformed_grouping_answer_falls_back_to_one_group_per_file(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    names = twelve_files(repo)
    llm.reply(openai_text("Group 1: m00 and m01. Group 2: the rest."), match=GROUPING)
    rc, data, _ = review(repo, llm, monkeypatch, capsys, "--effort", "low")
    assert rc == 0 and data["status"] == "complete"
    assert groups_of(data) == [(n, [n]) for n in names]
    assert [w["type"] for w in data["warnings"]] == ["grouping_failed"]
    assert kinds(llm).count("main") == 12


def test_grouping_call_failure_falls_back_to_one_group_per_file(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    names = twelve_files(repo, 5)
    llm.reply({"error": {"message": "no such model"}}, status=404, match=GROUPING)
    rc, data, _ = review(repo, llm, monkeypatch, capsys, "--effort", "low")
    assert rc == 0 and groups_of(data) == [(n, [n]) for n in names]
    assert "HTTP 404" in data["warnings"][0]["message"]


def test_a_group_of_fourteen_files_is_split_into_ten_and_four(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    names = twelve_files(repo, 14)
    llm.reply(openai_text(json.dumps([{"label": "everything", "files": list(range(14))}])),
              match=GROUPING)
    rc, data, _ = review(repo, llm, monkeypatch, capsys, "--effort", "low")
    assert rc == 0
    assert groups_of(data) == [("everything (1/2)", names[:10]), ("everything (2/2)", names[10:])]
    assert sorted(kinds(llm)) == ["grouping", "main", "main"]


# --- main loop and effort rounds (spec §6.1 step 5, §6.2) -------------------------------------


def comment(tag: str, severity: str = "high") -> tuple[str, dict[str, Any]]:
    return ("code_comment", {"comments": [{
        "path": "app.py", "content": f"Problem {tag}: the constant is wrong.",
        "existing_code": f"value_a_{tag} = {tag}", "severity": severity, "category": "bug"}]})


def test_effort_high_passes_confirmed_findings_and_stops_when_a_round_adds_nothing(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"app.py": pyfile("a", 10)})
    llm.tool_calls(comment("3"), DONE)  # round 1
    llm.tool_calls(comment("7", "medium"), DONE)  # round 2: a new finding
    llm.tool_calls(DONE)  # round 3: nothing new → done (a 4th round would not exist anyway)
    rc, data, _ = review(repo, llm, monkeypatch, capsys, "--effort", "high")
    assert rc == 1
    found = [(c["start_line"], c["severity"]) for c in data["comments"]]
    assert found == [(4, "high"), (8, "medium")]
    assert len(llm.requests) == 3
    r1, r2, r3 = (r["messages"][1]["content"] for r in llm.requests)
    assert "<confirmed_findings>" not in r1
    assert "1. app.py\n   code: value_a_3 = 3\n   issue: Problem 3: the constant is wrong." in r2
    assert "2. app.py" not in r2
    assert "2. app.py\n   code: value_a_7 = 7" in r3
    [done] = session_records(repo, "group_done")
    assert done["round_stop_reasons"] == ["task_done", "task_done", "task_done"]


def test_effort_high_stops_after_a_round_without_findings(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"app.py": pyfile("a", 10)})
    rc, data, _ = review(repo, llm, monkeypatch, capsys, "--effort", "high")
    assert (rc, data["verdict"], len(llm.requests)) == (0, "pass", 1)


def test_a_model_that_never_calls_tools_leaves_the_file_unreviewed(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"app.py": pyfile("a", 10)})
    for _ in range(3):
        llm.text("Looks good to me.")
    rc, data, err = review(repo, llm, monkeypatch, capsys, "--effort", "medium",
                           OCR_HOOK_GATE_ON_ERROR="block")
    assert (rc, data["status"], data["verdict"]) == (3, "failed", "incomplete")
    assert reasons(data) == {"app.py": (False, "no_tool_calls")}
    assert len(llm.requests) == 3  # no second effort round after a failed first one
    assert "NOT REVIEWED: the model made no tool calls (3 replies in a row" in err


def test_grace_round_after_the_tool_cap_still_files_comments(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"app.py": pyfile("a", 10)})
    llm.tool_calls(("file_find", {"query_name": "app"}))
    llm.tool_calls(("file_find", {"query_name": "app"}))
    llm.tool_calls(comment("2"))
    rc, data, err = review(repo, llm, monkeypatch, capsys, "--effort", "low", "--max-tools", "2")
    # the grace round's comment is kept, but without task_done and with the round
    # cap hit the group is incomplete: not a PASS, and not cached
    assert rc == 1 and (data["status"], data["verdict"]) == ("failed", "findings")
    assert reasons(data) == {"app.py": (False, "max_rounds")}
    assert "NOT REVIEWED: the model reached the tool-round limit without finishing" in err
    assert [c["start_line"] for c in data["comments"]] == [3]
    grace_tools = sorted(t["function"]["name"] for t in llm.requests[2]["tools"])
    assert grace_tools == ["code_comment", "task_done"]
    assert session_records(repo, "group_done")[0]["stop_reason"] == "max_rounds"
    assert reasons(data) == {"app.py": (False, "max_rounds")}


# --- compression (spec §6.3) -----------------------------------------------------------------


def test_compression_with_a_small_context_keeps_the_review_going(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    big = "".join(f"def helper_{i}(value):\n    return value * {i} + len(str(value))\n"
                  for i in range(150))
    repo.commit({"app.py": big}, "base")
    repo.stage({"app.py": big + "answer = helper_1(41)\n"})
    llm.tool_calls(("file_read", {"file_path": "app.py"}))  # ~3,200 tokens of file text
    llm.tool_calls(DONE)
    llm.reply(openai_text("Tool findings: helper_1 returns value + 1 digits; no issue."),
              match=SUMMARY)
    rc, data, _ = review(repo, llm, monkeypatch, capsys, "--effort", "low",
                         OCR_HOOK_LLM_CONTEXT_TOKENS="5000")
    assert rc == 0 and data["status"] == "complete"
    assert kinds(llm) == ["main", "summary", "main"]
    summary_req = llm.requests[1]
    assert "tools" not in summary_req
    assert "File: app.py (Total lines: 301)" in summary_req["messages"][1]["content"]
    last = llm.requests[2]["messages"]
    assert [m["role"] for m in last] == ["system", "user"]
    assert "<previous_review_summary>\nTool findings: helper_1" in last[1]["content"]
    assert "Total lines: 301" not in json.dumps(last)  # the file_read result is gone
    assert session_records(repo, "group_done")[0]["compressions"] == 1


def test_a_prompt_over_80_percent_of_the_context_skips_the_group(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"app.py": pyfile("a", 40)})  # the diff alone fits; system prompt + rules do not
    rc, data, _ = review(repo, llm, monkeypatch, capsys, "--effort", "low",
                         OCR_HOOK_LLM_CONTEXT_TOKENS="1200")
    assert rc == 0 and data["verdict"] == "incomplete"
    assert reasons(data) == {"app.py": (False, "token_threshold_exceeded")}
    assert "token_threshold_exceeded" in [w["type"] for w in data["warnings"]]
    assert llm.requests == []


# --- budget, deadline, isolation (spec §6.1 step 3, §6.4) --------------------------------------


def costly(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` reporting 100,000 tokens (99,980 in, 20 out): the budget is used up by the
    answers, not by the reservations of the requests (``agent.budget``)."""
    return {**body, "usage": {"prompt_tokens": 99_980, "completion_tokens": 20,
                              "total_tokens": 100_000}}


def test_budget_exhausted_mid_run_starts_no_further_call(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"a.py": pyfile("a", 70), "b.py": pyfile("b", 70), "c.py": pyfile("c", 70)})
    llm.default = None
    for _ in range(5):
        llm.reply(costly(openai_tool_calls(("file_find", {"query_name": "a"}))))
    rc, data, err = review(repo, llm, monkeypatch, capsys, "--effort", "low", "--concurrency", "1",
                           "--max-tokens-budget", "250000", OCR_HOOK_GATE_ON_ERROR="block")
    # 100,000 tokens per answer (far more than a request's own reservation): main a (100k),
    # main a (200k), main a (300k ≥ 250k) — then nothing
    assert kinds(llm) == ["main", "main", "main"]
    assert data["summary"]["llm_calls"] == 3 and data["summary"]["input_tokens"] == 299_940
    assert reasons(data) == {p: (False, "budget") for p in ("a.py", "b.py", "c.py")}
    assert (rc, data["status"], data["verdict"]) == (3, "failed", "incomplete")
    assert "token budget of 250000 used up" in err


def test_no_retry_starts_after_another_group_used_up_the_budget(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    names = twelve_files(repo, 4)
    llm.reply(costly(openai_text(json.dumps([{"label": n, "files": [n]} for n in names]))),
              match=GROUPING)
    llm.reply({"error": {"message": "busy"}}, status=503, headers={"retry-after-ms": "1500"},
              match="value_m0_")
    llm.reply(costly(openai_tool_calls(DONE)), match="value_m1_")
    rc, data, _ = review(repo, llm, monkeypatch, capsys, "--effort", "low", "--concurrency", "2",
                         "--max-tokens-budget", "200000")
    # grouping (100k) + m01 (200k ≥ 200k): m00's retry, m02 and m03 never start
    assert sorted(kinds(llm)) == ["grouping", "main", "main"]
    assert reasons(data) == {names[0]: (False, "budget"), names[1]: (True, ""),
                             names[2]: (False, "budget"), names[3]: (False, "budget")}
    assert (rc, data["status"]) == (0, "partial")


def test_deadline_cancels_unfinished_groups_and_no_thread_outlives_the_run(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    names = twelve_files(repo, 4)
    llm.reply(openai_text(json.dumps([{"label": n, "files": [n]} for n in names])), match=GROUPING)
    llm.default = None
    llm.tool_calls(DONE, delay_s=30)  # the first group's answer never comes in time
    t0 = time.monotonic()
    rc, data, err = review(repo, llm, monkeypatch, capsys, "--effort", "low", "--concurrency", "1",
                           "--timeout", "1.5", OCR_HOOK_GATE_ON_ERROR="block")
    assert time.monotonic() - t0 < 15  # far from the model's 30 s
    assert (rc, data["status"], data["verdict"]) == (3, "failed", "incomplete")
    assert reasons(data) == {n: (False, "timeout") for n in names}
    assert kinds(llm) == ["grouping", "main"]  # queued groups never started
    messages = {w["file"]: w["message"] for w in data["warnings"] if w["type"] == "subtask_error"}
    assert messages[names[1]] == "review deadline reached before the group started"
    assert [t.name for t in threading.enumerate() if t.name.startswith("ocr-")] == []
    assert err.count("NOT REVIEWED") == 1
    assert "NOT REVIEWED: time limit of 1.5s reached (review.timeout_s, --timeout)" in err


def test_deadline_with_on_error_allow_exits_zero(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"app.py": pyfile("a", 10)})
    llm.tool_calls(DONE, delay_s=30)
    rc, data, _ = review(repo, llm, monkeypatch, capsys, "--effort", "low", "--timeout", "1")
    assert (rc, data["verdict"]) == (0, "incomplete")
    assert reasons(data) == {"app.py": (False, "timeout")}


def test_a_failing_group_is_isolated_and_all_failing_is_failed(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    names = twelve_files(repo, 4)
    per_file = json.dumps([{"label": n, "files": [n]} for n in names])
    llm.reply(openai_text(per_file), match=GROUPING)
    llm.reply({"error": {"message": "invalid api key"}}, status=401, match="value_m2_")
    rc, data, _ = review(repo, llm, monkeypatch, capsys, "--effort", "low")
    assert (rc, data["status"]) == (0, "partial")
    assert reasons(data)[names[2]] == (False, "llm_error")
    assert [reasons(data)[n][0] for n in names] == [True, True, False, True]
    [w] = [w for w in data["warnings"] if w["type"] == "subtask_error"]
    assert w["file"] == names[2] and "HTTP 401" in w["message"]

    llm.requests.clear()
    llm.default = None
    llm.reply(openai_text(per_file), match=GROUPING)
    for _ in range(4):
        llm.reply({"error": {"message": "invalid api key"}}, status=401)
    rc, data, _ = review(repo, llm, monkeypatch, capsys, "--effort", "low")
    assert (rc, data["status"], data["verdict"]) == (0, "failed", "incomplete")
    assert len(llm.requests) == 5


# --- Ctrl-C (spec §6.4: exit 130, the repository untouched) -----------------------------------


def test_ctrl_c_exits_130_promptly_and_leaves_the_repository_untouched(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    names = twelve_files(repo, 4)
    llm.reply(openai_text(json.dumps([{"label": n, "files": [n]} for n in names])), match=GROUPING)
    llm.default = None
    for _ in range(4):
        llm.tool_calls(DONE, delay_s=60)
    before = repo.state()
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    exe = GIT_OCR
    env = {**repo.env, **llm.env(), "TMPDIR": str(tmp),
           "PATH": f"{exe.parent}:{os.environ['PATH']}"}
    proc = subprocess.Popen([str(exe), "review", "--format", "json", "--no-cache"], cwd=repo.path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while sum(k == "main" for k in kinds(llm)) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sum(k == "main" for k in kinds(llm)) == 4  # four groups wait on the slow model
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        rc = proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    elapsed = time.monotonic() - t0
    _, err = proc.communicate()
    assert rc == 130, err
    assert elapsed < 5, elapsed  # spec §6.4; bench/bench_concurrency.py measures it
    assert "interrupted" in err.decode() and "Traceback" not in err.decode()
    assert repo.state() == before
    assert list(tmp.iterdir()) == []  # no private index copy left behind


@pytest.mark.parametrize(("causes", "line"), [
    ([(2, "LLM server error (HTTP 500): boom")], "NOT REVIEWED: LLM server error (HTTP 500): boom"),
    ([(1, "a"), (1, "a")], "NOT REVIEWED: a"),
    ([(1, "a")], "NOT REVIEWED: 1 of 2 files: a"),
    ([(1, "a"), (1, "b"), (1, "c"), (1, "d"), (1, "a")],
     "NOT REVIEWED: 5 of 9 files: a; b; c; and 1 more (see the warnings)"),
])
def test_not_reviewed_line_names_distinct_reasons_once(
    causes: list[tuple[int, str]], line: str,
) -> None:
    selected = 9 if len(causes) == 5 else 2
    assert not_reviewed_line(causes, selected) == line


@pytest.mark.parametrize(("stop", "err", "why"), [
    ("no_tool_calls", "", "the model made no tool calls (3 replies in a row without one; check"
                          " the model and server with `git ocr llm test`)"),
    ("empty_rounds", "", "the model's tool calls failed 3 rounds in a row"),
    ("task_failed", "", "the model gave up on the review (task_done FAILED)"),
    ("timeout", "review deadline reached before the group started",
     "time limit of 90s reached (review.timeout_s, --timeout)"),
    ("budget", "token budget of 5 used up (7 tokens)",
     "token budget of 5 used up (review.max_tokens_budget, --max-tokens-budget)"),
    ("llm_error", "LLM returned no choices", "LLM returned no choices"),
])
def test_stop_reasons_become_words(stop: str, err: str, why: str) -> None:
    assert not_reviewed_cause(stop, err, timeout_s=90, budget_tokens=5) == why
