"""Run-wide accounting shared by all worker threads (spec §6.4): usage, LLM call count, the
token budget, the run deadline and cancellation.

One Meter per run. :meth:`Meter.before_attempt` is wired into the LLM clients' ``before_attempt``
hook, so the budget and deadline are checked before every HTTP attempt, retries included, and
no attempt starts once the budget is used up, the deadline has passed or the run is cancelled
(Ctrl-C). Calls already running finish; their usage still counts. Thread-safe.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ..errors import BudgetExhausted, DeadlineExceeded
from ..llm import Usage

# spec §13.7, ``pipeline.spend.SpendGuard``: (the run's answered usage, the (input estimate,
# maximum output) of each other request in flight, the next request's input tokens and maximum
# output) → raises SpendCapExceeded to stop the next request
SpendCheck = Callable[[Usage, list[tuple[int, int]], int, int], None]


class Cancelled(DeadlineExceeded):
    """The run was cancelled (Ctrl-C or the caller gave up); no new LLM call may start."""


class Meter:
    """``budget_tokens``: input + output tokens for the run, 0 = unlimited. ``deadline``: a
    ``time.monotonic()`` value or None. ``attempts`` counts HTTP attempts that were allowed to
    start; ``llm_calls`` counts answered calls (usage recorded). Shared by the worker threads:
    the counters change under its lock. ``spend_check`` (a money cap, :data:`SpendCheck`) is
    called under the lock by :meth:`reserve` before each request."""

    def __init__(self, budget_tokens: int = 0, deadline: float | None = None,
                 spend_check: SpendCheck | None = None) -> None:
        self.budget_tokens = budget_tokens
        self.spend_check = spend_check
        self.deadline = deadline
        self.usage = Usage()
        self.llm_calls = 0
        self.attempts = 0
        self.cancelled = threading.Event()
        self._lock = threading.Lock()
        # tokens held by the request each thread has in flight (agent.budget.BudgetedClient)
        self._reserved: dict[int, int] = {}
        # the (input estimate, maximum output) of each thread's request in flight
        self._inputs: dict[int, tuple[int, int]] = {}

    def check(self) -> None:
        """Raise Cancelled / DeadlineExceeded / BudgetExhausted when no new LLM call may start."""
        if self.cancelled.is_set():
            raise Cancelled("review cancelled")
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise DeadlineExceeded("review deadline reached")
        with self._lock:
            if self.budget_tokens and self.usage.total >= self.budget_tokens:
                raise BudgetExhausted(
                    f"token budget of {self.budget_tokens} used up ({self.usage.total} tokens)"
                )

    def before_attempt(self, _attempt: int = 0) -> float | None:
        """The clients' per-attempt hook: :meth:`check`, count the attempt, and return the
        seconds left before the deadline (the HTTP layer caps its timeouts and retry waits by
        it), or None without a deadline."""
        self.check()
        with self._lock:
            self.attempts += 1
        left = self.remaining_s()
        return None if left is None else max(left, 0.001)

    def reserve(self, tokens: int, output_tokens: int = 0) -> None:
        """Hold ``tokens`` (a request's input estimate + maximum output ``output_tokens``) for
        this thread's next request. Raises BudgetExhausted, holding nothing, when they do not
        fit in the budget beside the usage so far and the other threads' reservations, and
        SpendCapExceeded when ``spend_check`` refuses the request. The request is counted as in
        flight (:meth:`settled`) until its usage is added or it fails."""
        me = threading.get_ident()
        with self._lock:
            self._reserved.pop(me, None)
            self._inputs.pop(me, None)
            left = self.budget_tokens - self.usage.total - sum(self._reserved.values())
            if self.budget_tokens and tokens > left:
                raise BudgetExhausted(
                    f"token budget of {self.budget_tokens}: the next request may need"
                    f" {tokens} tokens (input estimate + max output), {max(left, 0)} left")
            if self.spend_check is not None:
                self.spend_check(self.usage, list(self._inputs.values()), tokens - output_tokens,
                                 output_tokens)
            self._reserved[me] = tokens
            self._inputs[me] = (tokens - output_tokens, output_tokens)

    def settled(self) -> tuple[Usage, int]:
        """The run's usage and requests for the ledger: the answered calls, plus the input
        estimate of each request still in flight (an interrupted run: sent, perhaps billed;
        ``estimated``)."""
        with self._lock:
            flying = sum(i for i, _out in self._inputs.values())
            usage = self.usage + Usage(input_tokens=flying, estimated=True)
            return (usage if flying else self.usage), self.llm_calls + len(self._inputs)

    def release(self) -> None:
        """Drop this thread's reservation (its request failed, or its usage was added)."""
        with self._lock:
            self._reserved.pop(threading.get_ident(), None)
            self._inputs.pop(threading.get_ident(), None)

    def exhausted(self) -> bool:
        """True when the token budget is used up (no check of deadline or cancellation)."""
        with self._lock:
            return bool(self.budget_tokens) and self.usage.total >= self.budget_tokens

    def add(self, usage: Usage) -> None:
        """Count one answered call and its usage; this thread's reservation ends."""
        with self._lock:
            self._reserved.pop(threading.get_ident(), None)
            self._inputs.pop(threading.get_ident(), None)
            self.usage = self.usage + usage
            self.llm_calls += 1

    def cancel(self) -> None:
        """Stop every later attempt (Ctrl-C)."""
        self.cancelled.set()

    def remaining_s(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()
