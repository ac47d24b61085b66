"""The gate inside Cursor's agent: its ``beforeShellExecution`` hook.

Cursor runs each command of ``.cursor/hooks.json`` (``{"version": 1, "hooks":
{"beforeShellExecution": [{"command": …}]}}``) before the agent's shell command, with one JSON
object on stdin (``hook_event_name``, ``command``, ``cwd``, ``workspace_roots``, …), and reads
one JSON object from stdout: ``{"permission": "allow" | "deny" | "ask", "user_message",
"agent_message"}`` (Cursor's hooks documentation, cursor.com/docs/agent/hooks). The review is
the Claude Code gate's (:mod:`.agents`): this module translates the event into that gate's
``PreToolUse`` event and its exit code (0 runs, 2 blocks, with the findings on stderr) into
Cursor's answer, and merges our entry into (or out of) a project's ``.cursor/hooks.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .. import util
from ..errors import UsageError
from .agents import _read_settings, _write_settings

CURSOR_HOOKS = Path(".cursor") / "hooks.json"
CURSOR_COMMAND = "git ocr hook cursor"  # on PATH: the hooks file is shared
CURSOR_EVENT = "beforeShellExecution"


def claude_event(data: bytes) -> bytes:
    """Cursor's hook input → the ``PreToolUse`` event of ``git ocr hook claude-code`` (UTF-8
    JSON): a ``beforeShellExecution`` command becomes a ``Bash`` call in the same ``cwd`` (the
    first workspace root when none is given); any other event, a call nothing is reviewed for.
    Raises UsageError for input that is not a JSON object."""
    try:
        event = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise UsageError(f"the hook input is not a JSON object: {util.one_line(str(e))}") from e
    if not isinstance(event, dict):
        raise UsageError("the hook input is not a JSON object")
    roots = event.get("workspace_roots")
    cwd = event.get("cwd") or (roots[0] if isinstance(roots, list) and roots else "")
    shell = event.get("hook_event_name", CURSOR_EVENT) == CURSOR_EVENT
    command = event.get("command", "") if shell else ""
    return json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash" if shell else "",
                       "tool_input": {"command": command}, "cwd": cwd}).encode()


def cursor_answer(code: int, report: str) -> dict[str, str]:
    """Cursor's answer for the gate's exit ``code`` and its stderr ``report``: ``deny`` with the
    report for the agent when the gate blocked (2), else ``allow``."""
    if code != 2:
        return {"permission": "allow"}
    return {"permission": "deny",
            "user_message": "ocr-hook blocked this git commit: see the findings the agent got",
            "agent_message": report.strip()}


def _entries(data: dict[str, Any], path: Path) -> list[Any]:
    hooks = data.get("hooks", {})
    entries = hooks.get(CURSOR_EVENT, []) if isinstance(hooks, dict) else None
    if not isinstance(entries, list):
        raise UsageError(f'{path}: "hooks"."{CURSOR_EVENT}" is not a list; fix it first')
    return entries


def _ours(entry: object) -> bool:
    return isinstance(entry, dict) and str(entry.get("command", "")).strip().endswith(
        "hook cursor")


def install_cursor(repo: Path) -> tuple[Path, str]:
    """Merge our ``beforeShellExecution`` entry into ``repo/.cursor/hooks.json``, keeping every
    other key and hook. Returns (path, ``installed``|``unchanged``). Raises UsageError for a
    file that is not a JSON object (left untouched) or cannot be written."""
    path = repo / CURSOR_HOOKS
    data = _read_settings(path)
    entries = _entries(data, path)
    if any(_ours(e) for e in entries):
        return path, "unchanged"
    data.setdefault("version", 1)
    hooks = data.setdefault("hooks", {})
    hooks[CURSOR_EVENT] = [*entries, {"command": CURSOR_COMMAND}]
    _write_settings(path, data)
    return path, "installed"


def uninstall_cursor(repo: Path) -> tuple[Path, str]:
    """Remove our entry from ``repo/.cursor/hooks.json`` (an event list left empty goes too);
    everything else stays. Returns (path, ``removed``|``absent``)."""
    path = repo / CURSOR_HOOKS
    data = _read_settings(path)
    entries = _entries(data, path) if data else []
    if not any(_ours(e) for e in entries):
        return path, "absent"
    kept = [e for e in entries if not _ours(e)]
    if kept:
        data["hooks"][CURSOR_EVENT] = kept
    else:
        del data["hooks"][CURSOR_EVENT]
    _write_settings(path, data)
    return path, "removed"
