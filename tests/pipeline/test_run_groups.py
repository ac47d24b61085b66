"""``pipeline.llm_stage.run_groups``: each group's ``on_done`` as it finishes, outcomes in group
order (spec §6.1 step 3), crashes and the deadline (spec §6.4).

Real: the group pool's threads, the futures, the deadline wait. Fake: the group reviews (plain
functions that block on events the test sets) and the meter (only ``remaining_s`` and
``cancel`` are used). Nothing sleeps: every wait is on an event, bounded.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from ocr_hook.agent import Group
from ocr_hook.pipeline import llm_stage
from ocr_hook.pipeline.llm_stage import run_groups
from ocr_hook.report import GroupOutcome, GroupReport
from ocr_hook.util import WorkerPool
from ocr_hook.vocabulary import StopReason


class FakeMeter:
    """The run's meter as ``run_groups`` uses it: seconds left (None: no deadline)."""

    def __init__(self, left: float | None) -> None:
        self.left = left
        self.cancelled = False

    def remaining_s(self) -> float | None:
        return self.left

    def cancel(self) -> None:
        self.cancelled = True


class PassesAsAStarts(FakeMeter):
    """The deadline passes just as the first group starts: its worker sees time left, the
    run (and every later look) sees none."""

    def __init__(self) -> None:
        super().__init__(0.0)
        self.group_started = False

    def remaining_s(self) -> float | None:
        if threading.current_thread().name.startswith("ocr-group") and not self.group_started:
            self.group_started = True
            return 0.5
        return 0.0


def done_outcome(g: Group) -> GroupOutcome:
    return GroupOutcome(StopReason.TASK_DONE, "", GroupReport(g.label, [], [StopReason.TASK_DONE]))


class Calls:
    """``on_done``'s calls as (label, stop), guarded: they come from the group threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: list[tuple[str, str]] = []
        self.outcomes: list[GroupOutcome] = []

    def __call__(self, g: Group, o: GroupOutcome) -> None:
        with self.lock:
            self.seen.append((g.label, o.stop))
            self.outcomes.append(o)


def test_each_group_is_reported_as_it_finishes_and_outcomes_stay_in_group_order() -> None:
    """Concurrency 2: group b finishes first (a waits until b's on_done), c crashes. on_done sees
    b, then a, and c's ``error`` outcome; the list returned is in group order, the same
    outcome objects on_done was given."""
    groups = [Group(n, []) for n in ("a", "b", "c")]
    b_reported = threading.Event()
    calls = Calls()

    def on_done(g: Group, o: GroupOutcome) -> None:
        calls(g, o)
        if g.label == "b":
            b_reported.set()

    def review(g: Group, rank: int) -> GroupOutcome:
        if g.label == "a":
            assert b_reported.wait(10)
        if g.label == "c":
            raise RuntimeError("boom")
        return done_outcome(g)

    out = run_groups(groups, review, concurrency=2, meter=FakeMeter(None),
                     background=WorkerPool(1, "test-bg"), on_done=on_done)
    assert [(o.report.label, o.stop) for o in out] == [
        ("a", "task_done"), ("b", "task_done"), ("c", "error")]
    assert out[2].error == "internal error: RuntimeError: boom"
    assert calls.seen[0] == ("b", "task_done")  # as it finished, before a
    assert sorted(calls.seen) == [("a", "task_done"), ("b", "task_done"), ("c", "error")]
    assert sorted(map(id, calls.outcomes)) == sorted(map(id, out))


def test_groups_cut_off_by_the_deadline_are_reported_once_as_timeouts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Deadline already reached, concurrency 1: a is running (it waits for the test), b is
    queued. Both come back as ``timeout`` and are reported so, in group order, before
    run_groups returns; when a finishes later, nothing more is reported."""
    monkeypatch.setattr(llm_stage, "DEADLINE_GRACE_S", 0.1)
    groups = [Group(n, []) for n in ("a", "b")]
    started, go, returned = threading.Event(), threading.Event(), threading.Event()
    calls = Calls()

    def review(g: Group, rank: int) -> GroupOutcome:
        started.set()
        go.wait(10)
        returned.set()
        return done_outcome(g)

    meter: Any = PassesAsAStarts()
    try:
        out = run_groups(groups, review, concurrency=1, meter=meter,
                         background=WorkerPool(1, "test-bg"), on_done=calls)
    finally:
        go.set()
    assert started.is_set()
    assert [(o.report.label, o.stop, o.error) for o in out] == [
        ("a", "timeout", "review deadline reached while the group was running"),
        ("b", "timeout", "review deadline reached before the group started")]
    assert returned.wait(10)
    for t in threading.enumerate():  # a's thread: done with a, it ends (the pool is shut down)
        if t.name.startswith("ocr-group-"):
            t.join(10)
    with calls.lock:
        assert calls.seen == [("a", "timeout"), ("b", "timeout")]


def test_a_group_taken_from_the_queue_after_the_deadline_is_not_started() -> None:
    """The first group ends as the deadline passes and its worker takes the next one before
    the run can cancel it: that group is not reviewed and says it never started."""
    groups = [Group(n, []) for n in ("a", "b")]
    meter: Any = FakeMeter(0.5)
    reviewed: list[str] = []

    def review(g: Group, rank: int) -> GroupOutcome:
        reviewed.append(g.label)
        meter.left = 0.0  # a's request ended on the deadline
        return done_outcome(g)

    out = run_groups(groups, review, concurrency=1, meter=meter,
                     background=WorkerPool(1, "test-bg"))
    assert reviewed == ["a"]
    assert [(o.report.label, o.stop, o.error) for o in out] == [
        ("a", "task_done", ""),
        ("b", "timeout", "review deadline reached before the group started")]


def test_an_on_done_that_raises_changes_no_outcome() -> None:
    groups = [Group("a", [])]

    def on_done(g: Group, o: GroupOutcome) -> None:
        raise ValueError("reporting failed")

    out = run_groups(groups, lambda g, rank: done_outcome(g), concurrency=1,
                     meter=FakeMeter(None), background=WorkerPool(1, "test-bg"), on_done=on_done)
    assert [o.stop for o in out] == ["task_done"]
