"""The main tool loop (spec §6.2) and context compression (spec §6.3) against the real loopback
model server through the real OpenAI client. Fake: the model's replies (ScriptedLLM) and one
context tool's handler (a fixed text, so token counts are exact). Real: HTTP, JSON, the
registry, the Meter's budget/deadline checks inside the client's retry loop."""

from __future__ import annotations

import time
from concurrent.futures import Future
from typing import Any

from ocr_hook.agent.loop import ContextPolicy, run_loop
from ocr_hook.agent.meter import Meter
from ocr_hook.agent.tasks import summary_call
from ocr_hook.llm.openai import OpenAIClient
from ocr_hook.llm.types import Endpoint, Message
from ocr_hook.tools.builtin import TOOLS
from ocr_hook.tools.builtin.code_comment import code_comment_handler
from ocr_hook.tools.registry import Registry, ToolResult, build_registry, parse_tools_json
from tests.support.scripted_llm import ScriptedLLM, openai_text

FOUND = "F" * 400  # what file_find answers: 400 characters


def registry(result: str = FOUND) -> Registry:
    return build_registry(parse_tools_json(), {"file_find": lambda a: ToolResult(result)})


def client(llm: ScriptedLLM, meter: Meter, timeout_s: float = 30.0) -> OpenAIClient:
    ep = Endpoint(url=llm.url, model="scripted-model", api_key="k", timeout_s=timeout_s,
                  max_retries=2)
    return OpenAIClient(ep, before_attempt=meter.before_attempt)


def start(user: str = "review app.py") -> list[Message]:
    return [Message("system", "You review code."), Message("user", user)]


def loop(llm: ScriptedLLM, meter: Meter | None = None, **kw: Any):  # type: ignore[no-untyped-def]
    meter = meter or Meter()
    comments: list[Any] = []
    local = {"code_comment": code_comment_handler(comments.extend, "g")}
    res = run_loop(client(llm, meter, kw.pop("timeout_s", 30.0)), kw.pop("reg", None) or registry(),
                   kw.pop("messages", None) or start(), local=local, meter=meter, **kw)
    return res, meter, comments


def tool_names(body: dict[str, Any]) -> list[str]:
    return sorted(t["function"]["name"] for t in body.get("tools", []))


FIND = ("file_find", {"query_name": "app"})


def test_task_done_ends_the_loop_after_one_request(llm: ScriptedLLM) -> None:
    llm.tool_calls(("task_done", {"state": "DONE"}))
    res, meter, _ = loop(llm)
    assert (res.stop_reason, res.rounds, len(llm.requests)) == ("task_done", 1, 1)
    assert (meter.llm_calls, meter.attempts, meter.usage.total) == (1, 1, 120)


def test_round_cap_then_one_grace_round_with_two_tools(llm: ScriptedLLM) -> None:
    for _ in range(3):
        llm.tool_calls(FIND)
    res, _, _ = loop(llm, max_rounds=2)
    assert (res.stop_reason, len(llm.requests)) == ("max_rounds", 3)
    assert tool_names(llm.requests[0]) == sorted(TOOLS)
    grace = llm.requests[2]
    assert tool_names(grace) == ["code_comment", "task_done"]
    assert grace["messages"][-1]["role"] == "user"
    assert "final turn" in grace["messages"][-1]["content"]
    # a tool outside the grace set called in the grace round is answered with an error
    assert res.messages[-1].is_error and res.messages[-1].name == "file_find"


def test_three_replies_without_tool_calls_stop_the_loop(llm: ScriptedLLM) -> None:
    for _ in range(5):
        llm.text("I think the code looks fine.")
    res, meter, _ = loop(llm)
    assert (res.stop_reason, len(llm.requests), meter.llm_calls) == ("no_tool_calls", 3, 3)
    nudges = [m for m in llm.requests[2]["messages"] if m["role"] == "user"][1:]
    assert len(nudges) == 2 and all("no tool call" in m["content"] for m in nudges)


def test_three_rounds_of_only_error_results_stop_the_loop(llm: ScriptedLLM) -> None:
    for _ in range(4):
        llm.tool_calls(("no_such_tool", {}))
    res, _, _ = loop(llm)
    assert (res.stop_reason, len(llm.requests)) == ("empty_rounds", 3)


def test_a_usable_result_resets_the_empty_round_count(llm: ScriptedLLM) -> None:
    for reply in ("bad", "bad", "find", "bad", "bad", "done"):
        if reply == "bad":
            llm.tool_calls(("no_such_tool", {}))
        elif reply == "find":
            llm.tool_calls(FIND)
        else:
            llm.tool_calls(("task_done", {}))
    res, _, _ = loop(llm)
    assert (res.stop_reason, len(llm.requests)) == ("task_done", 6)


def test_no_request_starts_once_the_budget_is_used_up(llm: ScriptedLLM) -> None:
    for _ in range(6):
        llm.tool_calls(FIND)  # each answer reports 100 + 20 tokens
    res, meter, _ = loop(llm, Meter(budget_tokens=250))
    # 0 → 120 → 240 (< 250, a third call may start) → 360: the fourth never starts
    assert (res.stop_reason, len(llm.requests), meter.attempts) == ("budget", 3, 3)
    assert meter.usage.total == 360
    assert "token budget of 250 used up" in res.error


def test_the_deadline_ends_a_call_in_flight_and_no_retry_starts(llm: ScriptedLLM) -> None:
    llm.tool_calls(FIND, delay_s=20)
    t0 = time.monotonic()
    res, meter, _ = loop(llm, Meter(deadline=time.monotonic() + 0.5))
    assert res.stop_reason == "timeout"
    assert len(llm.requests) == 1 and meter.attempts == 1  # the read timed out; no retry
    assert time.monotonic() - t0 < 10  # far below the 20 s the model takes


def test_a_cancelled_run_makes_no_request(llm: ScriptedLLM) -> None:
    meter = Meter()
    meter.cancel()
    res, _, _ = loop(llm, meter)
    assert (res.stop_reason, len(llm.requests)) == ("cancelled", 0)


def test_comments_reach_the_sink_and_the_model_hears_back(llm: ScriptedLLM) -> None:
    llm.tool_calls(("code_comment", {"comments": [{
        "path": "app.py", "content": "x is None here", "existing_code": "x.y",
        "severity": "urgent", "category": "bug"}]}))
    llm.tool_calls(("task_done", {"state": "FAILED"}))
    res, _, comments = loop(llm)
    assert res.stop_reason == "task_failed"
    assert [(c.path, c.severity.label) for c in comments] == [("app.py", "low")]
    tool_msg = llm.requests[1]["messages"][-1]
    assert tool_msg["content"].startswith("Successfully commented.")
    assert "unknown severity 'urgent' recorded as low" in tool_msg["content"]


# --- compression (spec §6.3) -------------------------------------------------------------
# Token counter = characters, so the arithmetic is exact: context 2000 → background at 1200,
# blocking at 1600, kept zone ≤ 1000 − frozen − reserve (200).


def chars(text: str) -> int:
    return len(text)


def run_now(job: Any) -> Future[str]:
    """A background runner that finishes the job before returning (deterministic order)."""
    fut: Future[str] = Future()
    try:
        fut.set_result(job())
    except Exception as e:  # noqa: BLE001 - handed to the loop like a pool would
        fut.set_exception(e)
    return fut


def policy(llm: ScriptedLLM, meter: Meter, spawn: Any = None) -> ContextPolicy:
    c = client(llm, meter)
    return ContextPolicy(
        context_tokens=2000, count_tokens=chars,
        summarize=lambda text: summary_call(c, text, language="English", max_output_tokens=200,
                                            meter=meter, record=lambda k, d: None, label="g"),
        spawn=spawn, summary_max_tokens=200)


SUMMARY = "Reported issues: none. Tool findings: app is defined in app.py."


def summary_requests(llm: ScriptedLLM) -> list[dict[str, Any]]:
    return [r for r in llm.requests if "Condense this part" in r["messages"][-1]["content"]]


def test_background_compression_at_60_percent_keeps_the_newest_rounds(llm: ScriptedLLM) -> None:
    for _ in range(4):
        llm.tool_calls(FIND)
    llm.tool_calls(("task_done", {}))
    llm.reply(openai_text(SUMMARY), match="Condense this part")
    meter = Meter()
    res, _, _ = loop(llm, meter, context=policy(llm, meter, spawn=run_now))
    assert res.stop_reason == "task_done"
    assert res.compressions == 1
    [summ] = summary_requests(llm)
    assert "tools" not in summ
    # the summary covered the two oldest rounds only
    assert summ["messages"][-1]["content"].count('role="assistant"') == 2
    main = [r for r in llm.requests if r is not summ]
    assert len(main) == 5
    # started before request 4 (after 3 rounds ≥ 1200), applied before request 5
    assert all("previous_review_summary" not in r["messages"][1]["content"] for r in main[:4])
    last = main[4]["messages"]
    assert last[1]["content"] == (
        "review app.py\n\n<previous_review_summary>\n" + SUMMARY + "\n</previous_review_summary>")
    assert [m["role"] for m in last] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert meter.llm_calls == 6


def test_blocking_compression_at_80_percent_before_the_next_request(llm: ScriptedLLM) -> None:
    llm.tool_calls(FIND)
    llm.tool_calls(("task_done", {}))
    llm.reply(openai_text(SUMMARY), match="Condense this part")
    meter = Meter()
    res, _, _ = loop(llm, meter, reg=registry("G" * 1700), context=policy(llm, meter))
    assert (res.stop_reason, res.compressions) == ("task_done", 1)
    assert len(summary_requests(llm)) == 1
    second = llm.requests[-1]["messages"]
    assert [m["role"] for m in second] == ["system", "user"]
    assert "G" * 100 not in second[1]["content"] and SUMMARY in second[1]["content"]


def test_loop_stops_when_compression_cannot_get_under_80_percent(llm: ScriptedLLM) -> None:
    llm.tool_calls(FIND)
    llm.reply(openai_text(SUMMARY), match="Condense this part")
    meter = Meter()
    big_user = "U" * 1700  # the frozen zone alone is over the limit
    res, _, _ = loop(llm, meter, messages=start(big_user), context=policy(llm, meter))
    assert res.stop_reason == "compression_failed"
    assert len(llm.requests) == 2 and len(summary_requests(llm)) == 1


def test_failed_summary_keeps_the_messages_and_stops(llm: ScriptedLLM) -> None:
    llm.tool_calls(FIND)
    llm.reply({"error": {"message": "bad"}}, status=400, match="Condense this part")
    meter = Meter()
    res, _, _ = loop(llm, meter, reg=registry("G" * 1700), context=policy(llm, meter))
    assert res.stop_reason == "compression_failed"
    assert res.compressions == 0 and len(llm.requests) == 2


def test_small_conversations_never_count_tokens_exactly(llm: ScriptedLLM) -> None:
    counted: list[str] = []
    llm.tool_calls(FIND)
    llm.tool_calls(("task_done", {}))
    meter = Meter()
    p = policy(llm, meter)
    p = ContextPolicy(200_000, lambda s: counted.append(s) or len(s), p.summarize)
    res, _, _ = loop(llm, meter, context=p)
    assert res.stop_reason == "task_done" and counted == []


def test_task_done_with_undecodable_arguments_is_answered_with_an_error_not_run(
    llm: ScriptedLLM,
) -> None:
    llm.tool_calls(("task_done", "{not json"))
    llm.tool_calls(("task_done", {"state": "DONE"}))
    res, _, _ = loop(llm)
    assert (res.stop_reason, res.rounds, len(llm.requests)) == ("task_done", 2, 2)
    [tool_msg] = [m for m in llm.requests[1]["messages"] if m["role"] == "tool"]
    assert tool_msg["content"].startswith("Error parsing tool arguments for task_done:")
