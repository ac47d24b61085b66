"""Provider prompt caching in whole reviews (spec §13.6): Anthropic ``cache_control``
breakpoints on the tools, the system prompt, the stable head of the user message and the latest
message; rounds that share their prefix byte for byte; the cache counts a server reports, in
the text and JSON totals and the session log; OpenAI's ``prompt_cache_key`` only where the
preset documents it. Real: git repositories, HTTP, JSON, the review pipeline; fake: the
model's replies (tests/support/scripted_llm.py)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tests.support.cli import run_cli
from tests.support.gitrepo import GitRepo
from tests.support.samples import APP_PY, sql_comment
from tests.support.scripted_llm import ScriptedLLM, anthropic_tool_calls, openai_tool_calls

EPHEMERAL = {"type": "ephemeral"}


def _with_usage(body: dict[str, Any], **usage: int) -> dict[str, Any]:
    body["usage"] = {"input_tokens": 50, "output_tokens": 20, **usage}
    return body


def _marks(body: Any) -> list[str]:
    """Where ``cache_control`` sits in a Messages request: ``tools[i]``, ``system[i]`` and
    ``messages[i][j]``."""
    out = [f"tools[{i}]" for i, t in enumerate(body.get("tools") or []) if "cache_control" in t]
    system = body.get("system")
    if isinstance(system, list):
        out += [f"system[{i}]" for i, b in enumerate(system) if "cache_control" in b]
    for i, m in enumerate(body["messages"]):
        out += [f"messages[{i}][{j}]" for j, b in enumerate(m["content"])
                if isinstance(b, dict) and "cache_control" in b]
    return out


def _unmarked(value: Any) -> Any:
    """``value`` without any ``cache_control`` field (what the provider's cache compares)."""
    value = copy.deepcopy(value)
    for m in value:
        for b in m["content"]:
            b.pop("cache_control", None)
    return value


def test_anthropic_rounds_carry_breakpoints_share_their_prefix_and_report_cache_counts(
    repo: GitRepo, anthropic_llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({"app.py": APP_PY})
    anthropic_llm.reply(_with_usage(anthropic_tool_calls(
        ("file_read", {"file_path": "app.py", "start_line": 1, "end_line": 5})),
        cache_creation_input_tokens=3000))
    anthropic_llm.reply(_with_usage(anthropic_tool_calls(
        ("code_comment", sql_comment()), ("task_done", {"state": "DONE"})),
        cache_read_input_tokens=3000, cache_creation_input_tokens=400))
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review", "--format", "json"], anthropic_llm.env(), capsys)
    data = json.loads(out)
    assert rc == 1, err
    assert [c["start_line"] for c in data["comments"]] == [12]
    first, second = anthropic_llm.requests
    # breakpoints: the last tool, the system prompt, the checklist head of the user message and
    # the latest message (round 1: the user message's last part; round 2: the tool result)
    last_tool = f"tools[{len(first['tools']) - 1}]"
    assert _marks(first) == [last_tool, "system[0]", "messages[0][0]", "messages[0][1]"]
    assert _marks(second) == [last_tool, "system[0]", "messages[0][0]", "messages[2][0]"]
    assert first["messages"][0]["content"][0]["text"].startswith("<review_checklist>")
    assert "<review_files>" in first["messages"][0]["content"][1]["text"]
    assert second["messages"][2]["content"][0]["type"] == "tool_result"
    assert first["system"][0]["cache_control"] == EPHEMERAL
    # the second round starts with the first round's whole prompt, byte for byte, up to where
    # the moving breakpoint sat
    assert json.dumps(second["tools"]) == json.dumps(first["tools"])
    assert json.dumps(second["system"]) == json.dumps(first["system"])
    assert (json.dumps(_unmarked(second["messages"][:1]))
            == json.dumps(_unmarked(first["messages"])))
    # what the server reported, in the totals: JSON, text and the session log
    summary = data["summary"]
    assert (summary["cache_read_tokens"], summary["cache_write_tokens"]) == (3000, 3400)
    assert summary["input_tokens"] == 50 + 50 + 3000 + 3400
    sid = data["session_id"]
    log = (repo.path / ".git" / "ocr-hook" / "sessions" / f"{sid}.jsonl").read_text()
    records = [json.loads(line) for line in log.splitlines()]
    usage = [r["usage"] for r in records if r["type"] == "llm_response"]
    assert [(u["cache_read"], u["cache_write"]) for u in usage] == [(0, 3000), (3000, 400)]
    [stats] = [r for r in records if r["type"] == "llm_stats"]
    assert (stats["usage"]["cache_read"], stats["usage"]["cache_write"]) == (3000, 3400)
    [end] = [r for r in records if r["type"] == "end"]
    assert (end["input_tokens"], end["cache_read_tokens"], end["cache_write_tokens"]) == (
        100, 3000, 3400)


def test_text_summary_shows_the_cache_counts(
    repo: GitRepo, anthropic_llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({"app.py": APP_PY})
    anthropic_llm.reply(_with_usage(anthropic_tool_calls(("task_done", {"state": "DONE"})),
                                    cache_read_input_tokens=1200, cache_creation_input_tokens=7))
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review", "--no-cache"], anthropic_llm.env(), capsys)
    assert rc == 0, err
    assert "tokens in/out 1257/20 (cache read 1200, written 7);" in out + err


def test_prompt_caching_false_sends_no_breakpoint(
    repo: GitRepo, anthropic_llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({"app.py": APP_PY})
    monkeypatch.chdir(repo.path)
    env = anthropic_llm.env(OCR_HOOK_LLM_PROMPT_CACHING="false")
    rc, _, err = run_cli(["review", "--format", "json", "--no-cache"], env, capsys)
    assert rc == 0, err
    [body] = anthropic_llm.requests
    assert _marks(body) == [] and isinstance(body["system"], str)


@pytest.mark.parametrize(("provider", "sent"), [("openai", True), ("", False)])
def test_prompt_cache_key_only_where_the_preset_documents_it(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], provider: str, sent: bool,
) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({"app.py": APP_PY})
    llm.reply(openai_tool_calls(("file_read", {"file_path": "app.py", "end_line": 3})))
    llm.reply(openai_tool_calls(("task_done", {"state": "DONE"})))
    monkeypatch.chdir(repo.path)
    env = llm.env()
    if provider:  # the openai preset, at the loopback URL
        env.update(OCR_HOOK_LLM_PROVIDER=provider, OPENAI_BASE_URL=llm.url,
                   OPENAI_API_KEY="sk-test")
        env.pop("OCR_LLM_URL")
    rc, _, err = run_cli(["review", "--format", "json", "--no-cache"], env, capsys)
    assert rc == 0, err
    keys = [r.get("prompt_cache_key") for r in llm.requests]
    if not sent:
        assert keys == [None, None]
        return
    # one key for the group's conversation: every round routes to the same cache
    assert len(keys) == 2 and keys[0] == keys[1]
    assert keys[0].startswith("ocr-hook-") and len(keys[0]) == len("ocr-hook-") + 16
    # the user message starts with the checklist; the date is a day, after it
    user = llm.requests[0]["messages"][1]["content"]
    assert user.startswith("<review_checklist>")
    head, _, rest = user.partition("Today is ")
    assert "<review_files>" not in head and rest[10] == "."
