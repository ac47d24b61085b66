"""Text that is safe to show: the helpers every output format shares.

A terminal gets colour only when it should (:func:`use_color`, the ANSI codes below); a path or
a model's text never carries a control character that could move the cursor, clear the screen
or forge a line (:func:`display_path`, :func:`display_text`); and JSON-like data always encodes
as strict UTF-8 (:func:`utf8_safe`), whatever bytes git gave for a path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TextIO

from ..util import has_raw_bytes, path_bytes_b64, shown_text
from ..vocabulary import Severity

# ANSI SGR codes of the text output: one colour per severity, dim for locations, and the reset.
SEVERITY_COLORS = {
    Severity.CRITICAL: "\033[1;31m",
    Severity.HIGH: "\033[31m",
    Severity.MEDIUM: "\033[33m",
    Severity.LOW: "\033[34m",
}
RESET = "\033[0m"
DIM = "\033[2m"
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


def _escape_char(ch: str) -> str:
    """One non-printable character as text: ``\\t``, ``\\n``, ``\\r``, ``\\x..`` for an
    undecodable byte (os.fsdecode's surrogate escape), else ``\\uXXXX`` (ESC is ``\\u001b``)."""
    if ch in "\t\n\r":
        return {"\t": "\\t", "\n": "\\n", "\r": "\\r"}[ch]
    if "\udc80" <= ch <= "\udcff":
        return f"\\x{ord(ch) - 0xDC00:02x}"
    return f"\\u{ord(ch):04x}"


def display_path(path: str) -> str:
    """A path for text output (the ``--preview`` table, findings, the coverage lines): control
    characters (TAB, newline, ESC…) and backslashes escaped as git's C quoting does,
    undecodable bytes as ``\\x..``; everything else as is."""
    if path.isprintable() and "\\" not in path:
        return path
    return "".join("\\\\" if ch == "\\" else ch if ch.isprintable() else _escape_char(ch)
                   for ch in path)


def display_text(text: str, keep: str = "") -> str:
    """Model or server text (comment content, suggestions, error messages) for a terminal: every
    non-printable character except those in ``keep`` (``"\\n\\t"`` for a multi-line body) is
    escaped as :func:`display_path` escapes it, so ``\\x1b[2J`` cannot clear the screen or
    colour the output, and a line break cannot forge a line. Backslashes stay as they are (code
    is full of them); CRLF counts as one newline."""
    if "\r\n" in text and "\n" in keep:
        text = text.replace("\r\n", "\n")
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch in keep else _escape_char(ch) for ch in text)
