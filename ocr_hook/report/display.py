"""Text that is safe to show: the helpers every output format shares.

A terminal gets colour only when it should (:func:`use_color`, the ANSI codes below); a path or
a model's text never carries a control character that could move the cursor, clear the screen
or forge a line (:func:`display_path`, :func:`display_text`: the one escaping of the whole
program, defined in ``util.text`` and re-exported here; :func:`display_json` for JSON a command
prints); and JSON-like data always encodes as strict UTF-8 (:func:`utf8_safe`), whatever bytes
git gave for a path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TextIO

from ..util import display_path as display_path  # re-exported: the formats import them here
from ..util import display_text as display_text
from ..util import has_raw_bytes, path_bytes_b64, shown_text
from ..vocabulary import Severity

# ANSI SGR codes of the text output: one colour per severity, bold for a finding's location
# (``path:line``, the line a reader looks for first), and the reset.
SEVERITY_COLORS = {
    Severity.CRITICAL: "\033[1;31m",
    Severity.HIGH: "\033[31m",
    Severity.MEDIUM: "\033[33m",
    Severity.LOW: "\033[34m",
}
RESET = "\033[0m"
BOLD = "\033[1m"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def use_color(stream: TextIO, environ: Mapping[str, str]) -> bool:
    """Colour only on a TTY, never with NO_COLOR set or TERM=dumb."""
    if environ.get("NO_COLOR") or environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def utf8_safe(value: Any, *, b64_keys: bool = False) -> Any:
    """A JSON-able ``value`` (dicts, lists, scalars) whose every string encodes as UTF-8:
    non-UTF-8 path bytes (surrogateescape) as ``\\xNN``, any other lone surrogate (e.g. from
    a model's ``\\ud800`` escape) as U+FFFD. With ``b64_keys``, a ``path``/``old_path``
    string that had such bytes gains a ``<key>_bytes_b64`` sibling holding its exact bytes."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", shown_text(value))
    if isinstance(value, list):
        return [utf8_safe(v, b64_keys=b64_keys) for v in value]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out[k] = utf8_safe(v, b64_keys=b64_keys)
            if b64_keys and k in ("path", "old_path") and isinstance(v, str) and has_raw_bytes(v):
                out[f"{k}_bytes_b64"] = path_bytes_b64(v)
        return out
    return value


def json_escape(text: str) -> str:
    """JSON text with every character that is not printable, but the newline, written as a
    JSON escape (``\\u009b``; a UTF-16 surrogate pair above U+FFFF): the same JSON value,
    safe on a terminal. ``json.dumps`` escapes what is below U+0020 inside strings, so a raw
    newline left in its output is layout (``indent``) and stays."""
    if text.replace("\n", " ").isprintable():  # two passes in C, no Python loop
        return text
    return "\n".join(line if line.isprintable() else
                     "".join(ch if ch.isprintable() else _json_char(ch) for ch in line)
                     for line in text.split("\n"))


def _json_char(ch: str) -> str:
    n = ord(ch)
    if n <= 0xFFFF:
        return f"\\u{n:04x}"
    n -= 0x10000
    return f"\\u{0xD800 + (n >> 10):04x}\\u{0xDC00 + (n & 0x3FF):04x}"


def display_json(value: Any, **dumps_args: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, **dumps_args)`` through :func:`json_escape`:
    JSON a command prints (``--json``) carries no raw control, format or separator character
    of repository or model text."""
    import json  # only a command printing JSON needs it here

    return json_escape(json.dumps(value, ensure_ascii=False, **dumps_args))
