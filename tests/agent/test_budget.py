"""The token budget is checked before every request (spec §6.4): ``BudgetedClient`` reserves a
request's input estimate plus its maximum output in the run's ``Meter``, so requests in flight
at once can never add up past ``review.max_tokens_budget``.

Real: the OpenAI client, HTTP to the loopback scripted model, threads. Fake: the model's
replies (each reports 100 input + 20 output tokens).
"""

from __future__ import annotations

import threading
import time

import pytest

from ocr_hook.agent.budget import BudgetedClient, request_tokens
from ocr_hook.agent.meter import Meter
from ocr_hook.errors import BudgetExhausted, LlmError
from ocr_hook.llm.openai import OpenAIClient
from ocr_hook.llm.types import Endpoint, Message
from tests.support.scripted_llm import ScriptedLLM, openai_text

MAX_OUT = 1000
MESSAGES = [Message("system", "You review code."), Message("user", "review app.py\n" * 40)]


def budgeted(llm: ScriptedLLM, meter: Meter) -> BudgetedClient:
    ep = Endpoint(url=llm.url, model="scripted-model", api_key="k", max_retries=0,
                  max_output_tokens=MAX_OUT)
    return BudgetedClient(OpenAIClient(ep, before_attempt=meter.before_attempt), meter)


def call(client: BudgetedClient, meter: Meter) -> None:
    turn = client.complete(list(MESSAGES))
    meter.add(turn.usage)


def test_request_estimate_counts_bytes_over_three_plus_the_chat_overheads() -> None:
    text = "You review code.\n" + "review app.py\n" * 40
    assert request_tokens(MESSAGES, None) == (len(text.encode()) + 2) // 3 + 2 * 16


def test_a_request_that_may_not_fit_in_what_is_left_is_never_sent(llm: ScriptedLLM) -> None:
    need = request_tokens(MESSAGES, None) + MAX_OUT
    budget = need + 200
    meter = Meter(budget_tokens=budget)
    client = budgeted(llm, meter)
    call(client, meter)  # 0 used: fits
    call(client, meter)  # 120 used, need + 80 left: fits
    with pytest.raises(BudgetExhausted) as e:  # 240 used, need - 40 left: not sent
        call(client, meter)
    # a check of the tokens used so far alone would have sent it (240 < budget)
    assert len(llm.requests) == 2 and meter.usage.total == 240 < budget
    assert str(e.value) == (f"token budget of {budget}: the next request may need {need}"
                            f" tokens (input estimate + max output), {need - 40} left")
    assert llm.requests[0]["max_completion_tokens"] == MAX_OUT


def test_concurrent_requests_share_the_budget_through_reservations(llm: ScriptedLLM) -> None:
    need = request_tokens(MESSAGES, None) + MAX_OUT
    meter = Meter(budget_tokens=need + need // 2)  # room for one request in flight, not two
    client = budgeted(llm, meter)
    llm.reply(openai_text("slow"), delay_s=1.0)
    first = threading.Thread(target=call, args=(client, meter))
    first.start()
    deadline = time.monotonic() + 10
    while not llm.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(BudgetExhausted):  # nothing used yet, but the first holds `need`
        call(client, meter)
    first.join()
    assert len(llm.requests) == 1 and meter.usage.total == 120 and meter.llm_calls == 1
    call(client, meter)  # the first ended: its reservation became 120 used tokens
    assert len(llm.requests) == 2


def test_a_failed_request_gives_its_reservation_back(llm: ScriptedLLM) -> None:
    need = request_tokens(MESSAGES, None) + MAX_OUT
    meter = Meter(budget_tokens=need)
    client = budgeted(llm, meter)
    llm.reply({"error": {"message": "bad request"}}, status=400)
    with pytest.raises(LlmError):
        call(client, meter)
    call(client, meter)  # the whole budget is free again
    assert len(llm.requests) == 2 and meter.usage.total == 120
