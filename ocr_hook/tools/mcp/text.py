"""MCP results and failures as text (spec §7.3): a ``CallToolResult`` for the model, one line
for a failure, the last stderr line of a server, and the tests that tell a closed session or a
line that was not JSON-RPC. Used by :mod:`.bridge`; imports ``anyio``/``mcp_types``
only inside the functions that need them.
"""

from __future__ import annotations

import json
import re
from typing import IO, Any

RESULT_MAX_CHARS = 128 * 1024  # MCP result text cap, as code_search's output cap
CUT_BACKOFF_MAX_CHARS = 4096  # how far the cap's cut moves back to a safe place (ours)
# A character a token, key or password could be made of, and a run of them up to the cut.
_VALUE_CHAR = r"""[^\s"'`,;<>()\[\]{}]"""
_VALUE_RUN = _VALUE_CHAR + r"*\Z"


def result_text(result: Any) -> tuple[str, bool]:
    """An MCP ``CallToolResult`` → (text for the model, is_error). Text blocks verbatim;
    embedded text resources as ``[resource <uri>]`` + text; images, audio, binary resources
    and resource links as a one-line placeholder; ``structured_content`` as compact JSON when
    no block gave text; ``(no output)`` when empty. Cut at 128 KiB with a note, at a safe
    place (:func:`safe_cut`)."""
    parts: list[str] = []
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            parts.append(f"[{kind} content ({getattr(block, 'mime_type', '')}) omitted]")
        elif kind == "resource_link":
            parts.append(f"[resource link: {getattr(block, 'name', '')} {block.uri}]")
        elif kind == "resource":
            res = block.resource
            text = getattr(res, "text", None)
            if isinstance(text, str):
                parts.append(f"[resource {res.uri}]\n{text}")
            else:
                mime = getattr(res, "mime_type", "")
                parts.append(f"[binary resource {res.uri} ({mime}) omitted]")
        else:
            parts.append(f"[{kind or 'unknown'} content omitted]")
    structured = getattr(result, "structured_content", None)
    if not any(p.strip() for p in parts) and structured is not None:
        parts = [json.dumps(structured, ensure_ascii=False, separators=(",", ":"))]
    text = "\n".join(parts) if parts else "(no output)"
    if len(text) > RESULT_MAX_CHARS:
        text = safe_cut(text, RESULT_MAX_CHARS) + (
            f"\nNote: result truncated to {RESULT_MAX_CHARS} chars.")
    return text, bool(getattr(result, "is_error", False))


def safe_cut(text: str, limit: int) -> str:
    """``text[:limit]``, kept when the next character is a separator; else moved back to its
    last line break, else to the start of the run of
    value characters (no space, quote, bracket, comma or semicolon) the cut goes through,
    when either is within CUT_BACKOFF_MAX_CHARS of the cut. The result is redacted later
    (the run's redactor, spec §14.2), which knows a secret only whole: a cut through
    ``ghp_…`` would leave a prefix no rule recognises, so a value is kept whole or dropped."""
    head = text[:limit]
    if not re.match(_VALUE_CHAR, text[limit:limit + 1]):
        return head  # the cut is at a line break or another separator already
    floor = max(0, limit - CUT_BACKOFF_MAX_CHARS)
    line_break = head.rfind("\n", floor)
    if line_break != -1:
        return head[:line_break]
    run = re.search(_VALUE_RUN, head[floor:])
    start = floor + run.start() if run else limit
    return head[:start] if start > floor else head


class ServerFailed(Exception):
    """A server start-up failure whose message is already the whole explanation."""


def describe(e: BaseException) -> str:
    """One line for a failure, unwrapping exception groups to their first leaf."""
    if isinstance(e, ServerFailed):
        return str(e)
    while isinstance(getattr(e, "exceptions", None), (list, tuple)) and e.exceptions:  # type: ignore[attr-defined]
        e = e.exceptions[0]  # type: ignore[attr-defined]
    if isinstance(e, FileNotFoundError):
        return f"command not found: {e.filename or e}"
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def bad_line(e: Exception) -> str:
    """The start of the line a JSON-RPC parse error (pydantic ValidationError) rejected."""
    errors = getattr(e, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
        except (IndexError, TypeError):
            first = {}
        if isinstance(first.get("input"), str):
            return repr(first["input"][:80])
    return describe(e)[:200]


def session_closed(e: BaseException) -> bool:
    """True when ``e`` (or the first leaf of an exception group) says the MCP session is over:
    the SDK's CONNECTION_CLOSED error, or a closed/broken stream."""
    import anyio
    from mcp_types import CONNECTION_CLOSED

    while isinstance(getattr(e, "exceptions", None), (list, tuple)) and e.exceptions:  # type: ignore[attr-defined]
        e = e.exceptions[0]  # type: ignore[attr-defined]
    if getattr(getattr(e, "error", None), "code", None) == CONNECTION_CLOSED:
        return True
    return isinstance(e, (anyio.ClosedResourceError, anyio.BrokenResourceError,
                          anyio.EndOfStream))


def stderr_tail(errlog: IO[bytes]) -> str:
    """``; stderr: <last non-empty line>`` of a server's captured stderr, or ""."""
    try:
        errlog.flush()
        errlog.seek(0)
        lines = [ln.strip() for ln in errlog.read()[-4096:].decode("utf-8", "replace").splitlines()]
    except (OSError, ValueError):
        return ""
    last = next((ln for ln in reversed(lines) if ln), "")
    return f"; stderr: {last[:300]}" if last else ""
