"""``task_done`` (spec §7.1): ends a group's review as DONE or FAILED. The agent loop reads the
state itself (:func:`parse_task_done`); the handler gives the same answer through the registry.
"""

from __future__ import annotations

from typing import Any

from ..registry import Handler, ToolResult
from .common import ToolEnv

TASK_DONE = "Task completed successfully."


def parse_task_done(args: dict[str, Any]) -> tuple[str | None, str]:
    """``task_done`` arguments → (state DONE|FAILED or None when invalid, result text)."""
    state = args.get("state", "DONE")
    if state is None:
        state = "DONE"
    if not isinstance(state, str):
        return None, "Error: task_done state must be DONE or FAILED."
    s = state.strip().upper()
    if s not in ("DONE", "FAILED"):
        return None, f'Error: invalid task_done state "{state}"; expected DONE or FAILED.'
    return s, TASK_DONE


def task_done(args: dict[str, Any]) -> ToolResult:
    """The ``task_done`` result: ``Task completed successfully.``, or the error for a state
    other than DONE or FAILED."""
    state, text = parse_task_done(args)
    return ToolResult(text, state is None)


def make_handler(env: ToolEnv) -> Handler:
    """``task_done`` (it needs nothing from ``env``)."""
    return task_done
