"""Run-wide accounting shared by all worker threads: usage, LLM call count, token budget and
deadline (SPEC §6.4). Thread-safe; the budget is checked before every LLM attempt, retries
included."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from ..errors import BudgetExhausted, DeadlineExceeded
from ..llm.types import Usage


@dataclass
class Meter:
    """``budget_tokens`` 0 = unlimited; ``deadline`` is a ``time.monotonic()`` value or None."""

    budget_tokens: int = 0
    deadline: float | None = None
    usage: Usage = field(default_factory=Usage)
    llm_calls: int = 0
    attempts: int = 0
    cancelled: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def check(self, _attempt: int = 0) -> None:
        """Raise BudgetExhausted / DeadlineExceeded when no new LLM attempt may start."""
        if self.cancelled.is_set():
            raise DeadlineExceeded("review cancelled")
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise DeadlineExceeded("review deadline reached")
        with self._lock:
            if self.budget_tokens and self.usage.total >= self.budget_tokens:
                raise BudgetExhausted(
                    f"token budget of {self.budget_tokens} used up ({self.usage.total} tokens)"
                )
            self.attempts += 1

    def add(self, usage: Usage) -> None:
        with self._lock:
            self.usage = self.usage + usage
            self.llm_calls += 1

    def remaining_s(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()
