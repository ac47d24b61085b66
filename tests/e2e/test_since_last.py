"""Findings across reviews (spec §12.2, §12.3): ``git ocr session compare`` of a blocked review
and its fixed re-review, and the pre-commit hook's re-review of a blocked commit reporting
since the last blocked review (the model shown the earlier finding; resolved, persisting, new;
the chain ended by a pass), through ``cli.main`` and through a real ``git commit`` firing the
installed native hook; and what the model did not look at is carried, never resolved (an
unrelated commit, the endpoint down, a cached answer), a labelled re-raise persists, a
dismissed one is counted apart, secrets stay out of the prompt's list.

Real: git, the session logs, the state file, HTTP, the installed ``git-ocr``. Fake: the model's
replies (the loopback scripted server)."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from tests.support.cli import run_cli, run_json
from tests.support.gitrepo import GitRepo
from tests.support.samples import APP_PY, SQL_LINE, sql_comment
from tests.support.scripted_llm import ScriptedLLM

FIXED = APP_PY.replace(SQL_LINE, 'query = "SELECT id, email FROM users WHERE name = ?"')
MOVED = "import logging\n" + APP_PY  # the SQL line unchanged, now line 13
CONTENT = sql_comment()["comments"][0]["content"]
HOOK = ["hook", "pre-commit", "--format", "json"]
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"  # git and sh, not the venv: the hook finds git-ocr


def blocked_first(repo: GitRepo, llm: ScriptedLLM,
                  capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """A first commit, then APP_PY staged and blocked by the scripted SQL finding: the hook
    run's JSON."""
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({"app.py": APP_PY})
    llm.tool_calls(("code_comment", sql_comment()), ("task_done", {"state": "DONE"}))
    rc, first, err = run_json(HOOK, llm.env(), capsys)
    assert rc == 1, err
    return first


def blocked_then(repo: GitRepo, llm: ScriptedLLM, capsys: pytest.CaptureFixture[str],
                 second: dict[str, str], *calls: tuple[str, Any],
                 args: list[str] = HOOK) -> tuple[dict[str, Any], int, str, str]:
    """A blocked hook run on APP_PY, then ``second`` staged and reviewed with the model's
    ``calls`` (then task_done). Returns (the first run's JSON, second exit code, stdout,
    stderr) and leaves only the second run's requests in ``llm.requests``."""
    first = blocked_first(repo, llm, capsys)
    assert "since_last" not in first  # no earlier blocked review
    llm.requests.clear()
    repo.stage(second)
    llm.tool_calls(*calls, ("task_done", {"state": "DONE"}))
    rc, out, err = run_cli(args, llm.env(), capsys)
    return first, rc, out, err


def test_hook_after_a_blocked_commit_reports_the_fixed_finding_as_resolved(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(repo.path)
    first, rc, out, err = blocked_then(repo, llm, capsys, {"app.py": FIXED})
    [c] = first["comments"]
    assert rc == 0, err
    data = json.loads(out)
    assert data["verdict"] == "pass"
    assert data["since_last"] == {"session": first["session_id"], "resolved": [c["id"]],
                                  "persisting": [], "new": [], "carried": [],
                                  "dismissed": []}
    # the model was shown the earlier finding, after the stable head and the diffs
    [body] = llm.requests
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    line = f"- E1 app.py:12 [critical] {CONTENT}"
    assert line in user
    assert user.index("<review_checklist>") < user.index("</review_files>") < user.index(line)
    assert "repeats" in _comment_item(body)  # the label of an earlier finding it files again
    state = json.loads((repo.path / ".git" / "ocr-hook" / "since_last.json").read_text())
    assert state == {"version": 2, "blocked": {}}  # the pass ended the chain
    # the chain is over: the next review reports nothing since a blocked one
    llm.requests.clear()
    repo.stage({"app.py": FIXED + "# end\n"})
    llm.tool_calls(("task_done", {"state": "DONE"}))
    rc, third, _ = run_json(HOOK, llm.env(), capsys)
    assert rc == 0 and "since_last" not in third
    assert "<earlier_findings>" not in json.dumps(llm.requests)
    # nothing earlier to repeat: code_comment has no repeats (fewer tokens in every request)
    assert list(_comment_item(llm.requests[0])) == [
        "path", "content", "existing_code", "suggestion_code", "severity", "category", "line",
        "preexisting"]


def _comment_item(body: dict[str, Any]) -> dict[str, Any]:
    """The properties of one comment in ``code_comment``'s definition in request ``body``."""
    [tool] = [t for t in body["tools"] if t["function"]["name"] == "code_comment"]
    return tool["function"]["parameters"]["properties"]["comments"]["items"]["properties"]


def test_hook_text_prints_the_since_line_and_a_moved_finding_persists(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(repo.path)
    quote = "        " + SQL_LINE
    new = {"comments": [{**sql_comment()["comments"][0], "content": "Still injectable SQL."}]}
    other = {"comments": [{"path": "app.py", "content": "The module imports logging unused.",
                           "existing_code": "import logging", "suggestion_code": "",
                           "severity": "low", "category": "maintainability"}]}
    first, rc, out, err = blocked_then(
        repo, llm, capsys, {"app.py": MOVED}, ("code_comment", new), ("code_comment", other),
        args=["hook", "pre-commit"])
    assert quote.strip() in APP_PY
    assert rc == 1, err
    assert "Since the last blocked review: 0 resolved, 1 persisting, 1 new\n" in out
    [path] = [p for p in (repo.path / ".git" / "ocr-hook" / "sessions").glob("*.jsonl")
              if p.stem != first["session_id"]]  # the second run's (ids sort by the second)
    rec = [json.loads(ln) for ln in path.read_text().splitlines()]
    [since] = [r for r in rec if r["type"] == "since_last"]
    assert since["session"] == first["session_id"] and len(since["persisting"]) == 1
    # blocked again: the chain goes on from this review
    state = json.loads((repo.path / ".git" / "ocr-hook" / "since_last.json").read_text())
    assert [v["session"] for v in state["blocked"].values()] == [path.stem]
    rc, cmp, _ = run_json(["session", "compare", "previous", "last", "--json"], {}, capsys)
    assert rc == 0 and cmp["resolved"] == []
    [kept] = cmp["persisting"]
    assert (kept["earlier_id"], kept["start_line"], kept["content"]) == (
        first["comments"][0]["id"], 13, "Still injectable SQL.")
    assert [(f["start_line"], f["severity"]) for f in cmp["new"]] == [(1, "low")]


def test_session_compare_of_a_blocked_review_and_its_fixed_re_review(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(repo.path)
    first, rc, out, err = blocked_then(repo, llm, capsys, {"app.py": FIXED},
                                       args=["review", "--format", "json"])
    assert rc == 0, err
    second = json.loads(out)["session_id"]
    [c] = first["comments"]
    rc, data, err = run_json(["session", "compare", "previous", "last", "--json"],
                             {}, capsys)
    assert rc == 0, err
    assert data == {"a": first["session_id"], "b": second, "persisting": [], "new": [],
                    "dismissed": [], "resolved": [{"id": c["id"], "path": "app.py", "start_line": 12,
                                  "end_line": 12, "severity": "critical",
                                  "category": "security", "content": CONTENT}]}
    rc, out, _ = run_cli(["session", "compare", first["session_id"][:20], second], {}, capsys)
    assert rc == 0
    assert out == (f"{first['session_id']} → {second}: 1 resolved, 0 persisting, 0 new\n"
                   f"resolved:\n  app.py:12 critical {CONTENT} (id {c['id']})\n")
    rc, out, err = run_cli(["session", "compare", "nosuch", "last"], {}, capsys)
    assert (rc, out) == (2, "")
    assert err.strip().splitlines() == [
        "ocr-hook: no session 'nosuch' (see `git ocr session list`)"]


def test_git_commit_through_the_native_hook_reports_the_resolved_finding(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    monkeypatch.chdir(repo.path)
    assert run_cli(["install"], {}, capsys)[0] == 0
    env = {**repo.env, **llm.env(), "PATH": SYSTEM_PATH}
    env.pop("VIRTUAL_ENV", None)

    def commit(message: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "commit", "-q", "-m", message], cwd=repo.path, env=env,
                              capture_output=True, text=True, timeout=60)

    repo.stage({"app.py": APP_PY})
    llm.tool_calls(("code_comment", sql_comment()), ("task_done", {"state": "DONE"}))
    p = commit("blocked")
    assert p.returncode == 1, p.stderr
    assert "Since the last blocked review" not in p.stderr
    llm.requests.clear()
    repo.stage({"app.py": FIXED})
    llm.tool_calls(("task_done", {"state": "DONE"}))
    p = commit("fixed")
    assert p.returncode == 0, p.stderr
    assert "Since the last blocked review: 1 resolved, 0 persisting, 0 new" in p.stderr
    assert f"- E1 app.py:12 [critical] {CONTENT}" in json.dumps(llm.requests)


def test_range_review_after_a_blocked_range_of_the_branch_reports_since_last(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = repo.commit({"README.md": "hello\n"}, "init")
    repo.commit({"app.py": APP_PY}, "the bug")
    monkeypatch.chdir(repo.path)
    rng = ["review", "--from", base, "--to", "HEAD", "--format", "json"]
    llm.tool_calls(("code_comment", sql_comment()), ("task_done", {"state": "DONE"}))
    rc, first, err = run_json(rng, llm.env(), capsys)
    assert rc == 1, err
    [c] = first["comments"]
    # a staged review of the same branch is another chain: it is not reported against the range
    repo.stage({"other.py": "x = 1\n"})
    llm.tool_calls(("task_done", {"state": "DONE"}))
    rc, staged, _ = run_json(["review", "--format", "json"], llm.env(), capsys)
    assert rc == 0 and "since_last" not in staged
    repo.commit({"app.py": FIXED}, "the fix")
    llm.requests.clear()
    llm.tool_calls(("task_done", {"state": "DONE"}))
    rc, data, err = run_json(rng, llm.env(), capsys)
    assert rc == 0, err
    assert data["since_last"] == {"session": first["session_id"], "resolved": [c["id"]],
                                  "persisting": [], "new": [], "carried": [],
                                  "dismissed": []}
    assert f"- E1 app.py:12 [critical] {CONTENT}" in json.dumps(llm.requests)


def test_ndjson_verdict_line_carries_since_last(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(repo.path)
    first, rc, out, err = blocked_then(repo, llm, capsys, {"app.py": FIXED},
                                       args=["hook", "pre-commit", "--format", "ndjson"])
    assert rc == 0, err
    verdict = json.loads(out.splitlines()[-1])
    assert verdict["type"] == "verdict"
    assert verdict["since_last"] == {"session": first["session_id"],
                                     "resolved": [first["comments"][0]["id"]],
                                     "persisting": [], "new": [], "carried": [],
                                  "dismissed": []}


def test_session_compare_escapes_model_text_of_hand_written_sessions(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    folder = repo.path / ".git" / "ocr-hook" / "sessions"
    folder.mkdir(parents=True)
    rec = {"type": "comment", "id": "0123456789ab", "path": "a.py", "side": "new",
           "start_line": 3, "end_line": 3, "severity": "high", "category": "bug",
           "content": "bad\x1b]0;owned\x07 value\u202e", "code": "x = 1", "source": "llm"}
    for sid, ts, recs in (("20261203-100000-aaaaaa", 2.0, [rec]),
                          ("20261203-100000-bbbbbb", 1.0, [])):  # b started first
        lines = [{"type": "start", "ts": ts}, *recs, {"type": "end", "ts": ts}]
        (folder / f"{sid}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    monkeypatch.chdir(repo.path)
    rc, out, _ = run_cli(["session", "compare", "previous", "last"], {}, capsys)
    assert rc == 0
    assert out == ("20261203-100000-bbbbbb → 20261203-100000-aaaaaa: 0 resolved, 0 persisting,"
                   " 1 new\nnew:\n  a.py:3 high bad\\u001b]0;owned\\u0007 value\\u202e"
                   " (id 0123456789ab)\n")
    rc, out, _ = run_cli(["session", "compare", "last", "previous", "--json"], {}, capsys)
    assert "\x1b" not in out and "\u202e" not in out
    assert json.loads(out)["resolved"][0]["content"] == rec["content"]


GUARDED = APP_PY.replace("    # build the query\n",
                         "    if \"'\" in name:\n        raise ValueError(name)\n"
                         "    # build the query\n")  # the SQL line itself unchanged


def state_of(repo: GitRepo) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (repo.path / ".git" / "ocr-hook" / "since_last.json").read_text())
    return data


def test_a_guard_above_the_unchanged_line_resolves_it_and_a_re_raise_persists_in_comments(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(repo.path)
    assert SQL_LINE in GUARDED and GUARDED.splitlines()[13].strip() == SQL_LINE
    first, rc, out, err = blocked_then(repo, llm, capsys, {"app.py": GUARDED},
                                       args=["hook", "pre-commit"])
    assert rc == 0, err  # the model was shown E1, checked it and did not file it again
    assert "Since the last blocked review: 1 resolved, 0 persisting, 0 new\n" in out
    assert state_of(repo) == {"version": 2, "blocked": {}}


def test_a_reworded_re_raise_naming_its_label_persists_and_compare_agrees(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(repo.path)
    # other lines, other words, other category: only `repeats` ties it to E1
    again = {"comments": [{"path": "app.py", "existing_code": "    cursor.execute(query)",
                           "content": "The executed query still carries raw input.",
                           "severity": "high", "category": "bug", "repeats": "E1"}]}
    first, rc, out, err = blocked_then(repo, llm, capsys, {"app.py": GUARDED},
                                       ("code_comment", again))
    assert rc == 1, err
    data = json.loads(out)
    [c] = data["comments"]
    assert c["start_line"] == 15
    assert data["since_last"] == {"session": first["session_id"], "resolved": [],
                                  "persisting": [c["id"]], "new": [], "carried": [],
                                  "dismissed": []}
    rc, cmp, _ = run_json(["session", "compare", "previous", "last", "--json"], {}, capsys)
    assert rc == 0 and (cmp["resolved"], cmp["new"]) == ([], [])
    assert [(p["id"], p["earlier_id"]) for p in cmp["persisting"]] == [
        (c["id"], first["comments"][0]["id"])]


def test_an_unreachable_model_resolves_nothing_and_keeps_the_chain(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(repo.path)
    blocked_first(repo, llm, capsys)
    before = state_of(repo)
    repo.stage({"app.py": FIXED})
    down = llm.env(OCR_LLM_URL="http://127.0.0.1:9/v1")  # nothing listens on port 9
    rc, out, err = run_cli(["hook", "pre-commit"], down, capsys)
    assert "NOT REVIEWED" in out + err
    assert "Since the last blocked review" not in out + err
    assert state_of(repo) == before


def test_an_unrelated_commit_carries_the_finding_and_the_chain_goes_on(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(repo.path)
    first = blocked_first(repo, llm, capsys)
    [c] = first["comments"]
    repo.git("restore", "--staged", "app.py")
    repo.stage({"other.py": "x = 1\n"})
    llm.requests.clear()
    llm.tool_calls(("task_done", {"state": "DONE"}))
    rc, out, err = run_cli(["hook", "pre-commit"], llm.env(), capsys)
    assert rc == 0, err
    assert "Since the last blocked review: 0 resolved, 0 persisting, 0 new, 1 carried\n" in out
    assert "<earlier_findings>" not in json.dumps(llm.requests)  # not on other.py's group
    [(name, entry)] = state_of(repo)["blocked"].items()
    assert name == "staged refs/heads/main"
    assert entry == {"session": first["session_id"],
                     "open": [[first["session_id"], c["id"]]]}
    repo.git("commit", "-q", "-m", "other")
    # the next review of app.py is still reported against the blocked one
    repo.stage({"app.py": FIXED})
    llm.tool_calls(("task_done", {"state": "DONE"}))
    rc, data, err = run_json(HOOK, llm.env(), capsys)
    assert rc == 0, err
    assert data["since_last"] == {"session": first["session_id"], "resolved": [c["id"]],
                                  "persisting": [], "new": [], "carried": [],
                                  "dismissed": []}
    assert state_of(repo) == {"version": 2, "blocked": {}}


def test_a_repeats_label_on_another_file_is_not_a_re_raise(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(repo.path)
    other = {"comments": [{"path": "other.py", "existing_code": "run(x)",
                           "content": "Runs unchecked input.", "severity": "high",
                           "category": "security", "repeats": "E1"}]}  # E1 is on app.py
    first, rc, out, err = blocked_then(repo, llm, capsys,
                                       {"app.py": FIXED, "other.py": "run(x)\n"},
                                       ("code_comment", other))
    assert rc == 1, err
    data = json.loads(out)
    [earlier] = first["comments"]
    [c] = data["comments"]
    assert c["path"] == "other.py"
    assert data["since_last"] == {"session": first["session_id"], "resolved": [earlier["id"]],
                                  "persisting": [], "new": [c["id"]], "carried": [],
                                  "dismissed": []}


def test_a_carried_finding_on_a_file_that_is_gone_is_resolved(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(repo.path)
    first = blocked_first(repo, llm, capsys)  # app.py staged, never committed
    [c] = first["comments"]
    repo.git("reset", "-q", "--hard")
    assert not (repo.path / "app.py").exists()
    repo.stage({"other.py": "x = 1\n"})
    llm.tool_calls(("task_done", {"state": "DONE"}))
    rc, data, err = run_json(HOOK, llm.env(), capsys)
    assert rc == 0, err
    assert data["since_last"] == {"session": first["session_id"], "resolved": [c["id"]],
                                  "persisting": [], "new": [], "carried": [],
                                  "dismissed": []}
    assert state_of(repo) == {"version": 2, "blocked": {}}  # the chain is over


def test_a_dismissed_earlier_finding_is_dismissed_in_since_last_and_compare(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(repo.path)
    first = blocked_first(repo, llm, capsys)
    [c] = first["comments"]
    rc, _, err = run_cli(["dismiss", c["id"], "--reason", "trusted input"], {}, capsys)
    assert rc == 0, err
    repo.stage({"app.py": APP_PY + "# touched\n"})
    llm.tool_calls(("code_comment", sql_comment()), ("task_done", {"state": "DONE"}))
    rc, data, err = run_json(HOOK, llm.env(), capsys)
    assert rc == 0, err
    assert data["comments"] == []
    assert data["since_last"] == {"session": first["session_id"], "resolved": [],
                                  "persisting": [], "new": [], "carried": [],
                                  "dismissed": [c["id"]]}
    rc, out, _ = run_cli(["session", "compare", "previous", "last"], {}, capsys)
    assert rc == 0
    assert out.splitlines()[0].endswith(": 0 resolved, 0 persisting, 0 new, 1 dismissed")


def test_session_list_sorts_by_start_time_then_id(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    folder = repo.path / ".git" / "ocr-hook" / "sessions"
    folder.mkdir(parents=True)
    for sid, ts in (("20261203-100000-ffffff", 1.0), ("20261203-100000-000000", 3.0),
                    ("20261203-100000-aaaaaa", 2.0)):
        recs = [{"type": "start", "ts": ts}, {"type": "end", "ts": ts}]
        (folder / f"{sid}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    monkeypatch.chdir(repo.path)
    rc, out, _ = run_cli(["session", "list", "--json"], {}, capsys)
    assert rc == 0
    assert [json.loads(ln)["id"] for ln in out.splitlines()] == [
        "20261203-100000-000000", "20261203-100000-aaaaaa", "20261203-100000-ffffff"]
    rc, out, _ = run_cli(["session", "compare", "previous", "last"], {}, capsys)
    assert out.startswith("20261203-100000-aaaaaa → 20261203-100000-000000:")


def test_a_secret_finding_stays_out_of_the_earlier_findings(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(repo.path)
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({"app.py": APP_PY + f'KEY = "{key}"\n'})
    llm.tool_calls(("code_comment", sql_comment()), ("task_done", {"state": "DONE"}))
    rc, first, err = run_json(HOOK, llm.env(), capsys)
    assert rc == 1, err
    secret = [f for f in first["comments"] if f["content"] != CONTENT]  # the scanner's
    assert len(secret) == 1
    llm.requests.clear()
    repo.stage({"app.py": FIXED + f'KEY = "{key}"\n'})
    llm.tool_calls(("task_done", {"state": "DONE"}))
    rc, data, err = run_json(HOOK, llm.env(), capsys)
    assert rc == 1, err
    sent = json.dumps(llm.requests)
    assert "- E" in sent and "AKIA" not in sent.split("<earlier_findings>")[1]
    assert data["since_last"]["persisting"] == [secret[0]["id"]]


def test_a_cached_answer_resolves_nothing_it_carries_the_earlier_finding(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(repo.path)
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({"app.py": FIXED})  # reviewed (and cached) before any block
    llm.tool_calls(("task_done", {"state": "DONE"}))
    assert run_json(HOOK, llm.env(), capsys)[0] == 0
    repo.stage({"app.py": APP_PY})
    llm.tool_calls(("code_comment", sql_comment()), ("task_done", {"state": "DONE"}))
    rc, first, err = run_json(HOOK, llm.env(), capsys)
    assert rc == 1, err
    [c] = first["comments"]
    llm.requests.clear()
    repo.stage({"app.py": FIXED})  # the same snapshot as the cached pass: no model call
    rc, data, err = run_json(HOOK, llm.env(), capsys)
    assert rc == 0, err
    assert data["summary"]["cache_hits"] == 1 and llm.requests == []
    assert data["since_last"] == {"session": first["session_id"], "resolved": [],
                                  "persisting": [], "new": [], "carried": [c["id"]],
                                  "dismissed": []}
    assert state_of(repo)["blocked"]["staged refs/heads/main"]["open"] == [
        [first["session_id"], c["id"]]]


def test_a_version_1_state_entry_still_names_all_of_its_sessions_findings(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(repo.path)
    first = blocked_first(repo, llm, capsys)
    (repo.path / ".git" / "ocr-hook" / "since_last.json").write_text(json.dumps(
        {"version": 1, "blocked": {"staged refs/heads/main": first["session_id"]}}))
    repo.stage({"app.py": FIXED})
    llm.tool_calls(("task_done", {"state": "DONE"}))
    rc, data, err = run_json(HOOK, llm.env(), capsys)
    assert rc == 0, err
    assert data["since_last"]["resolved"] == [first["comments"][0]["id"]]
    assert state_of(repo) == {"version": 2, "blocked": {}}


def test_earlier_findings_past_the_cap_are_carried_not_resolved(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """35 earlier findings on one file: the model is shown 30 (E1…E30) and files none again,
    so 30 are resolved and the 5 it never saw are carried, the chain kept for them."""
    monkeypatch.chdir(repo.path)
    repo.commit({"README.md": "hello\n"}, "init")
    lines = [f"value_{i:02d} = eval(arg_{i:02d})" for i in range(35)]
    repo.stage({"calc.py": "".join(ln + "\n" for ln in lines)})
    llm.tool_calls(("code_comment", {"comments": [
        {"path": "calc.py", "existing_code": ln, "content": f"eval of input {ln[6:8]}",
         "severity": "high", "category": "security"} for ln in lines]}),
        ("task_done", {"state": "DONE"}))
    rc, first, err = run_json(HOOK, llm.env(), capsys)
    assert rc == 1 and len(first["comments"]) == 35, err
    repo.stage({"calc.py": "".join(ln.replace("eval", "int") + "\n" for ln in lines)})
    llm.requests.clear()
    llm.tool_calls(("task_done", {"state": "DONE"}))
    rc, data, err = run_json(HOOK, llm.env(), capsys)
    assert rc == 0, err
    sent = json.dumps(llm.requests)
    assert "- E30 " in sent and "- E31 " not in sent
    since = data["since_last"]
    assert (len(since["resolved"]), len(since["carried"]), since["persisting"]) == (30, 5, [])
    [(name, entry)] = state_of(repo)["blocked"].items()
    assert name == "staged refs/heads/main" and len(entry["open"]) == 5


def test_a_passing_range_review_ends_its_chain_even_with_findings_carried(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A range (or push) that passes ends its chain whatever it carries: what the ref holds has
    passed, now or at commit time. Here the fixed range is answered from the cache (no model
    shown the earlier finding): carried in this run's since_last, then the chain is gone, so
    a later range review is not reported against it."""
    base = repo.commit({"README.md": "hello\n"}, "init")
    monkeypatch.chdir(repo.path)
    rng = ["review", "--from", base, "--to", "HEAD", "--format", "json"]
    repo.commit({"app.py": FIXED}, "fixed first")
    llm.tool_calls(("task_done", {"state": "DONE"}))
    assert run_json(rng, llm.env(), capsys)[0] == 0  # cached: FIXED against base passes
    repo.git("reset", "-q", "--hard", base)
    repo.commit({"app.py": APP_PY}, "the bug")
    llm.tool_calls(("code_comment", sql_comment()), ("task_done", {"state": "DONE"}))
    rc, first, err = run_json(rng, llm.env(), capsys)
    assert rc == 1, err
    [c] = first["comments"]
    assert state_of(repo)["blocked"]["range refs/heads/main"]["session"] == first["session_id"]
    repo.commit({"app.py": FIXED}, "the fix")
    llm.requests.clear()
    rc, data, err = run_json(rng, llm.env(), capsys)
    assert rc == 0, err
    assert data["summary"]["cache_hits"] == 1 and llm.requests == []
    assert data["since_last"]["carried"] == [c["id"]]
    assert "range refs/heads/main" not in state_of(repo).get("blocked", {})
    repo.commit({"b.py": "b = 2\n"}, "more")
    llm.tool_calls(("task_done", {"state": "DONE"}))
    rc, later, err = run_json(rng, llm.env(), capsys)
    assert rc == 0 and "since_last" not in later, err
