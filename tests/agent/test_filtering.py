"""The review filter (spec §8.4): the call itself through the real client against the scripted
loopback model, and whole reviews through ``cli.main``. Real: git, HTTP, JSON wire formats;
fake: the model's replies."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ocr_hook.agent.filtering import APPROVE_TOOL, REPORT_TOOL, review_filter
from ocr_hook.agent.meter import Meter
from ocr_hook.diff.model import FileDiff
from ocr_hook.findings import Finding, finding_id
from ocr_hook.llm import make_client
from ocr_hook.llm.types import Endpoint
from ocr_hook.vocabulary import Severity
from tests.support.cli import run_json
from tests.support.gitrepo import GitRepo
from tests.support.samples import APP, GUARD, staged
from tests.support.scripted_llm import ScriptedLLM, anthropic_tool_calls, openai_tool_calls

QUOTES = {
    "guard": "if item.price < 0:",
    "raise": 'raise ValueError("negative price")',
    "loop": "for item in items:",
}


def findings() -> list[Finding]:
    lines = {"guard": 13, "raise": 14, "loop": 12}
    out = []
    for name, quote in QUOTES.items():
        content = f"Comment about {name}."
        out.append(Finding(finding_id("app.py", "new", quote, content), "app.py", "new",
                           lines[name], lines[name], Severity.HIGH, "bug", content, quote, "",
                           "hunk_new"))
    return out


def run_filter(repo: GitRepo, llm: ScriptedLLM, meter: Meter | None = None
               ) -> tuple[Any, list[Finding], list[FileDiff]]:
    files, _, _ = staged(repo, {"app.py": APP}, {"app.py": GUARD})
    client = make_client(Endpoint(url=llm.url, model="scripted-model", api_key="k",
                                  protocol=llm.protocol, max_retries=0))
    fs = findings()
    out = review_filter(client, [files["app.py"]], fs, meter=meter or Meter(), label="app.py")
    return out, fs, [files["app.py"]]


def test_removes_exactly_the_reported_ids(repo: GitRepo, llm: ScriptedLLM) -> None:
    fs = findings()
    llm.tool_calls((REPORT_TOOL, {"comment_ids": [fs[1].id]}))
    out, fs, _ = run_filter(repo, llm)
    assert (out.removed_ids, out.ok, out.attempts) == (frozenset({fs[1].id}), True, 1)
    [req] = llm.requests
    assert {t["function"]["name"] for t in req["tools"]} == {REPORT_TOOL, APPROVE_TOOL}
    assert "tool_choice" not in req
    system, user = req["messages"][0]["content"], req["messages"][1]["content"]
    assert "falsification" in system
    shown = json.loads(user.split("<comments>\n", 1)[1].split("\n</comments>", 1)[0])
    assert [c["id"] for c in shown] == [f.id for f in fs]
    assert shown[0] == {"id": fs[0].id, "path": "app.py", "side": "new", "lines": "13-13",
                        "severity": "high", "category": "bug", "content": "Comment about guard.",
                        "existing_code": "if item.price < 0:"}
    assert '<file path="app.py">' in user and "13 +        if item.price < 0:" in user


def test_approve_all_removes_nothing(repo: GitRepo, llm: ScriptedLLM) -> None:
    llm.tool_calls((APPROVE_TOOL, {}))
    out, _, _ = run_filter(repo, llm)
    assert (out.removed_ids, out.ok, out.attempts) == (frozenset(), True, 1)


@pytest.mark.parametrize("text", [
    '```json\n["{id}"]\n```',
    '<think>the first one is fine</think>["{id}"]',
    'Remove these: ["{id}", "not-an-offered-id"]',
])
def test_text_json_array_is_accepted(repo: GitRepo, llm: ScriptedLLM, text: str) -> None:
    target_id = findings()[2].id
    llm.text(text.replace("{id}", target_id))
    out, _, _ = run_filter(repo, llm)
    assert (out.removed_ids, out.ok) == (frozenset({target_id}), True)
    assert len(llm.requests) == 1


def test_empty_text_array_approves(repo: GitRepo, llm: ScriptedLLM) -> None:
    llm.text("[]")
    out, _, _ = run_filter(repo, llm)
    assert (out.removed_ids, out.ok, out.attempts) == (frozenset(), True, 1)


def test_unknown_ids_are_ignored(repo: GitRepo, llm: ScriptedLLM) -> None:
    fs = findings()
    llm.tool_calls((REPORT_TOOL, {"comment_ids": ["c-0", fs[0].id, "deadbeef0000"]}))
    out, _, _ = run_filter(repo, llm)
    assert out.removed_ids == frozenset({fs[0].id})


@pytest.mark.parametrize("bad", [
    openai_tool_calls(("task_done", {"state": "DONE"})),  # not a filter tool
    openai_tool_calls((REPORT_TOOL, {"comment_ids": ["x"]}), (APPROVE_TOOL, {})),  # two decisions
    openai_tool_calls((REPORT_TOOL, {"ids": ["x"]})),  # wrong argument name
    openai_tool_calls((REPORT_TOOL, '{"comment_ids": [')),  # invalid JSON arguments
])
def test_malformed_answer_is_retried_once(repo: GitRepo, llm: ScriptedLLM,
                                          bad: dict[str, Any]) -> None:
    fs = findings()
    llm.reply(bad)
    llm.tool_calls((REPORT_TOOL, {"comment_ids": [fs[0].id]}))
    out, _, _ = run_filter(repo, llm)
    assert (out.removed_ids, out.ok, out.attempts) == (frozenset({fs[0].id}), True, 2)
    first, second = llm.requests
    assert second["messages"][:2] == first["messages"]
    assert second["messages"][2]["role"] == "user"
    assert second["messages"][2]["content"].startswith("Your previous answer could not be used")


@pytest.mark.parametrize("text", ["null", "All comments look right to me.", '{"ok": true}'])
def test_twice_malformed_keeps_every_comment(repo: GitRepo, llm: ScriptedLLM, text: str) -> None:
    llm.text(text)
    llm.text(text)
    out, _, _ = run_filter(repo, llm)
    assert (out.removed_ids, out.ok, out.attempts) == (frozenset(), False, 2)
    assert out.error.startswith("malformed answer")
    assert len(llm.requests) == 2


def test_transport_error_keeps_every_comment_without_retry(repo: GitRepo,
                                                           llm: ScriptedLLM) -> None:
    llm.reply({"error": {"message": "no", "type": "invalid_request_error"}}, status=400)
    out, _, _ = run_filter(repo, llm)
    assert (out.removed_ids, out.ok, out.attempts) == (frozenset(), False, 1)
    assert len(llm.requests) == 1


def test_exhausted_budget_keeps_every_comment_without_a_call(repo: GitRepo,
                                                             llm: ScriptedLLM) -> None:
    meter = Meter(budget_tokens=10)
    from ocr_hook.llm.types import Usage

    meter.add(Usage(input_tokens=50))
    out, _, _ = run_filter(repo, llm, meter)
    assert (out.removed_ids, out.ok) == (frozenset(), False)
    assert llm.requests == []


def test_anthropic_thinking_reply_with_tool_use(repo: GitRepo, anthropic_llm: ScriptedLLM) -> None:
    fs = findings()
    anthropic_llm.reply(anthropic_tool_calls((REPORT_TOOL, {"comment_ids": [fs[2].id]}),
                                             thinking="loop comment is contradicted by line 12"))
    out, _, _ = run_filter(repo, anthropic_llm)
    assert out.removed_ids == frozenset({fs[2].id})
    [req] = anthropic_llm.requests
    assert {t["name"] for t in req["tools"]} == {REPORT_TOOL, APPROVE_TOOL}
    assert "tool_choice" not in req


# ---- whole reviews ---------------------------------------------------------------------------

def comment(quote: str, content: str, severity: str = "high") -> dict[str, Any]:
    return {"path": "app.py", "content": content, "existing_code": quote,
            "severity": severity, "category": "bug"}


def review(repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
           capsys: pytest.CaptureFixture[str], *args: str, **env: str
           ) -> tuple[int, dict[str, Any], str]:
    repo.commit({"app.py": APP}, "init")
    repo.stage({"app.py": GUARD})
    monkeypatch.chdir(repo.path)
    return run_json(["review", "--format", "json", "--no-cache", *args], llm.env(**env), capsys)


def filtered(repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
             capsys: pytest.CaptureFixture[str], *args: str, **env: str
             ) -> tuple[int, dict[str, Any], str]:
    """A review with the opt-in review filter on (``--filter``)."""
    return review(repo, llm, monkeypatch, capsys, "--filter", *args, **env)


A = (QUOTES["guard"], "Zero prices are accepted; use <= 0.")
B = (QUOTES["raise"], "ValueError is never caught by the caller and crashes the request.")


def test_review_drops_exactly_the_reported_comment(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    drop = finding_id("app.py", "new", *A)
    llm.tool_calls(("code_comment", {"comments": [comment(*A), comment(*B)]}),
                   ("task_done", {"state": "DONE"}))
    llm.tool_calls((REPORT_TOOL, {"comment_ids": [drop]}), match=REPORT_TOOL)
    rc, data, _ = filtered(repo, llm, monkeypatch, capsys, "--effort", "low")
    assert rc == 1
    assert [(c["id"], c["start_line"], c["anchor"]) for c in data["comments"]] == [
        (finding_id("app.py", "new", *B), 14, "hunk_new")]
    assert len(llm.requests) == 2 and data["summary"]["llm_calls"] == 2
    offered = llm.requests[1]["messages"][1]["content"]
    assert drop in offered and finding_id("app.py", "new", *B) in offered


C = (QUOTES["loop"], "items may be None here; iterating it raises TypeError.")


def test_one_filter_call_per_group_sees_the_comments_of_every_round(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The filter runs once per group, after its rounds, on all of its comments."""
    a_id, b_id, c_id = (finding_id("app.py", "new", *x) for x in (A, B, C))
    llm.tool_calls(("code_comment", {"comments": [comment(*A)]}), ("task_done", {"state": "DONE"}))
    llm.tool_calls(("code_comment", {"comments": [comment(*B), comment(*C)]}),
                   ("task_done", {"state": "DONE"}))
    llm.tool_calls((REPORT_TOOL, {"comment_ids": [b_id]}), match=REPORT_TOOL)
    rc, data, _ = filtered(repo, llm, monkeypatch, capsys, "--effort", "high")
    assert rc == 1
    assert sorted(c["id"] for c in data["comments"]) == sorted([a_id, c_id])
    # round 1, round 2, round 3 (default reply: task_done, no comment), then one filter call
    assert len(llm.requests) == 4 and data["summary"]["llm_calls"] == 4
    kinds = ["filter" if len(r["tools"]) == 2 else "main" for r in llm.requests]
    assert kinds == ["main", "main", "main", "filter"]
    offered = llm.requests[3]["messages"][1]["content"]
    assert a_id in offered and b_id in offered and c_id in offered
    # rounds 2 and 3 are told what was found so far (before the filter)
    user3 = llm.requests[2]["messages"][1]["content"]
    assert "Zero prices are accepted" in user3 and "may be None" in user3


def test_a_group_whose_comments_are_all_removed_passes(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    b_id = finding_id("app.py", "new", *B)
    llm.tool_calls(("code_comment", {"comments": [comment(*B)]}), ("task_done", {"state": "DONE"}))
    llm.tool_calls((REPORT_TOOL, {"comment_ids": [b_id]}), match=REPORT_TOOL)
    rc, data, _ = filtered(repo, llm, monkeypatch, capsys, "--effort", "high")
    assert (rc, data["comments"], data["verdict"]) == (0, [], "pass")
    assert len(llm.requests) == 3  # rounds 1 and 2 (adds nothing: early stop), the filter


def test_group_without_comments_makes_no_filter_call(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    llm.tool_calls(("task_done", {"state": "DONE"}))
    rc, data, _ = filtered(repo, llm, monkeypatch, capsys, "--effort", "high")
    assert (rc, data["status"], len(llm.requests)) == (0, "complete", 1)


def test_the_filter_is_off_by_default_and_no_filter_beats_the_config_key(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    llm.tool_calls(("code_comment", {"comments": [comment(*A)]}), ("task_done", {"state": "DONE"}))
    rc, data, _ = review(repo, llm, monkeypatch, capsys, "--effort", "low")
    assert (len(data["comments"]), len(llm.requests)) == (1, 1)
    llm.requests.clear()
    llm.tool_calls(("code_comment", {"comments": [comment(*A)]}), ("task_done", {"state": "DONE"}))
    rc, data, _ = review(repo, llm, monkeypatch, capsys, "--effort", "low", "--no-filter",
                         OCR_HOOK_REVIEW_FILTER="true")
    assert (len(data["comments"]), len(llm.requests)) == (1, 1)


def test_review_filter_config_key_on_runs_the_call(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    llm.tool_calls(("code_comment", {"comments": [comment(*A)]}), ("task_done", {"state": "DONE"}))
    llm.tool_calls((APPROVE_TOOL, {}), match=REPORT_TOOL)
    rc, data, _ = review(repo, llm, monkeypatch, capsys, "--effort", "low",
                         OCR_HOOK_REVIEW_FILTER="true")
    kinds = ["filter" if len(r["tools"]) == 2 else "main" for r in llm.requests]
    assert (len(data["comments"]), kinds) == (1, ["main", "filter"])


def test_failing_filter_keeps_every_comment(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    llm.tool_calls(("code_comment", {"comments": [comment(*A), comment(*B)]}),
                   ("task_done", {"state": "DONE"}))
    llm.reply(openai_tool_calls(("task_done", {"state": "DONE"})), match=REPORT_TOOL)
    llm.reply({"error": {"message": "boom", "type": "server_error"}}, status=400,
              match=REPORT_TOOL)
    rc, data, err = filtered(repo, llm, monkeypatch, capsys, "--effort", "low")
    assert rc == 1
    assert len(data["comments"]) == 2
    assert len(llm.requests) == 3  # main, malformed filter answer, its one retry
    [w] = [w for w in data["warnings"] if w["type"] == "review_filter_failed"]
    assert w["file"] == "app.py"
    assert "review filter failed" in err


def test_hook_review_of_one_file_whose_model_files_and_finishes_in_one_reply_is_one_request(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The best case on the hook path (effort low): the model files its comment and
    finishes in one reply, so the whole review is that one request: no grouping, no plan, no
    filter (opt-in), no second round."""
    a_id = finding_id("app.py", "new", *A)
    repo.commit({"app.py": APP}, "init")
    repo.stage({"app.py": GUARD})
    llm.tool_calls(("code_comment", {"comments": [comment(*A)]}), ("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    rc, data, _ = run_json(["hook", "pre-commit", "--format", "json", "--no-cache"], llm.env(),
                           capsys)
    assert (rc, [c["id"] for c in data["comments"]]) == (1, [a_id])
    assert (len(llm.requests), data["summary"]["llm_calls"]) == (1, 1)
    assert len(llm.requests[0]["tools"]) > 2  # the main task's tools, not the filter's
