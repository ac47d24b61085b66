r"""Text shown to people and to the model: repository paths that are not UTF-8, control
characters spelled out, user-supplied names kept on one line, byte counts in binary units.
Pure: no I/O.

Paths: git prints them as raw bytes; ``os.fsdecode`` turns each byte that is not UTF-8 into a
lone surrogate ``U+DC80``–``U+DCFF`` (PEP 383 ``surrogateescape``), so ``str`` paths stay exact
inside ocr-hook. Such a string cannot be encoded as UTF-8, so wherever a path leaves as text
(prompts, tool results, JSON, SARIF, the terminal) it is shown with each raw byte as ``\xNN``
(two lower-case hex digits), the form git's ``core.quotePath`` uses in octal. :func:`real_path`
maps that form back, so a path the model echoes from a prompt or tool result names the real
file. JSON output also carries the exact bytes as base64 (``path_bytes_b64``).

Control characters: one spelling everywhere, :func:`escape_char` (``\t``, ``\n``, ``\r``,
``\xNN`` for a raw byte, ``\uXXXX``, ``\UXXXXXXXX`` beyond the BMP). A terminal gets every
character that is not printable (``str.isprintable``: C0 and C1 controls such as ESC and
U+009B CSI, format characters such as the bidi override U+202E, line and paragraph
separators) in that spelling (:func:`display_text`, :func:`display_path`, :func:`one_line`),
so repository or model text cannot move the cursor, retitle the window, reorder what is shown
or forge a line. A prompt keeps the text as it is except for line breaks other than ``\n``
(:func:`prompt_text`): CR, VT, FF, FS/GS/RS, NEL, U+2028 and U+2029 split a line for many
tokenizers and editors, so inside a content line they are spelled out and only ``\n`` ends a
line the model reads.
"""

from __future__ import annotations

import os
import re

_RAW = re.compile("[\udc80-\udcff]")
_ESCAPED = re.compile(r"\\x([89a-fA-F][0-9a-fA-F])")


def has_raw_bytes(text: str) -> bool:
    """True when ``text`` holds a byte that was not UTF-8 (a lone surrogate U+DC80–U+DCFF)."""
    return _RAW.search(text) is not None


def shown_text(text: str) -> str:
    r"""``text`` with each undecodable byte as ``\xNN`` (``caf\udce9.py`` → ``caf\xe9.py``);
    valid UTF-8 text is returned unchanged, so the result always encodes as UTF-8."""
    if not has_raw_bytes(text):
        return text
    return _RAW.sub(lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", text)


def real_path(text: str) -> str:
    r"""The inverse of :func:`shown_text` for a path typed back by the model: each ``\xNN`` with
    NN ≥ 80 becomes the raw byte it stands for (``caf\xe9.py`` → ``caf\udce9.py``). Bytes
    below 0x80 are ASCII and never escaped, so ``\x41`` stays literal text."""
    if "\\x" not in text:
        return text
    return _ESCAPED.sub(lambda m: chr(0xDC00 + int(m.group(1), 16)), text)


def path_bytes_b64(path: str) -> str:
    """The path's exact bytes (``os.fsencode``), base64-encoded (RFC 4648, with padding)."""
    import base64  # here, not at start-up: only a path that is not valid UTF-8 needs it

    return base64.b64encode(os.fsencode(path)).decode("ascii")

_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # what str.splitlines splits on
_INNER_BREAKS = _LINE_BREAKS[2:]  # the line breaks that are never part of a line ending
_LONE_CR = re.compile("\r(?!\n|\\Z)")  # a CR that ends no CRLF line (nor the text)
_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def escape_char(ch: str) -> str:
    """One character spelled out as text: ``\\t``, ``\\n``, ``\\r``; ``\\xNN`` for an
    undecodable byte (``os.fsdecode``'s surrogate escape); else ``\\uXXXX`` (ESC is
    ``\\u001b``), or ``\\UXXXXXXXX`` above U+FFFF. Lower-case hex, as Python writes them."""
    short = _SHORT.get(ch)
    if short is not None:
        return short
    n = ord(ch)
    if 0xDC80 <= n <= 0xDCFF:
        return f"\\x{n - 0xDC00:02x}"
    return f"\\u{n:04x}" if n <= 0xFFFF else f"\\U{n:08x}"


def display_text(text: str, keep: str = "") -> str:
    """Model or repository text (comment content, rule text, error messages, session records)
    for a terminal: every non-printable character except those in ``keep`` (``"\\n\\t"``
    for a multi-line body) spelled out by :func:`escape_char`, so ``\\x1b[2J`` cannot clear
    the screen, an OSC sequence cannot set the window title, U+202E cannot reverse what
    follows, and a CR or line separator cannot forge a line. Backslashes stay as they are
    (code is full of them); with ``"\\n"`` kept, CRLF counts as one newline."""
    if "\r\n" in text and "\n" in keep:
        text = text.replace("\r\n", "\n")
    if text.isprintable():
        return text
    if keep:  # a long multi-line body: checked at C speed, not character by character
        rest = text
        for ch in keep:
            rest = rest.replace(ch, "")
        if rest.isprintable():
            return text
    return "".join(ch if ch.isprintable() or ch in keep else escape_char(ch) for ch in text)


def display_path(path: str) -> str:
    """A path for text output (the ``--preview`` table, findings, coverage lines, command
    output): as :func:`display_text` with nothing kept, and each backslash doubled, as git's C
    quoting does, so ``a\\nb`` (a backslash and ``n``) never reads as ``a`` newline ``b``."""
    if path.isprintable() and "\\" not in path:
        return path
    return "".join("\\\\" if ch == "\\" else ch if ch.isprintable() else escape_char(ch)
                   for ch in path)


def one_line(text: str) -> str:
    """``text`` for a one-line message (file names, values, errors): :func:`display_text`
    with nothing kept, so no line break or control character of it reaches the terminal."""
    return display_text(text)


def prompt_text(text: str, *, one_line: bool = False) -> str:
    """``text`` for a prompt: each line break other than ``\\n`` inside a line (CR, VT, FF,
    FS, GS, RS, NEL, U+2028, U+2029) spelled out by :func:`escape_char`; a CR of a CRLF line
    ending (before ``\\n`` or at the end) stays. Line numbers stay those of ``\\n``: only
    ``\\n`` ends a line the model reads. ``one_line``: every line break, ``\\n`` and each CR
    included (a path, a name)."""
    for ch in _INNER_BREAKS:  # str.replace and a plain regex: a diff of megabytes costs ms
        if ch in text:
            text = text.replace(ch, escape_char(ch))
    if one_line:
        return text.replace("\r", "\\r").replace("\n", "\\n")
    return _LONE_CR.sub(r"\\r", text) if "\r" in text else text


def xml_attr(value: str) -> str:
    """Escape a value for a double-quoted XML-ish attribute in a prompt."""
    return (
        value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")
    )


def prompt_path(path: str) -> str:
    """A path as a prompt shows it: every line break spelled out (:func:`prompt_text` with
    ``one_line``: ``\\n``, ``\\r``, ``\\u2028``…), then XML-escaped (:func:`xml_attr`), so
    a file name can neither close a delimiter nor start a line of its own (spec §14.5)."""
    return xml_attr(prompt_text(path, one_line=True))


_SPELLED_BREAK = re.compile(r"\\(r|n|u000b|u000c|u001c|u001d|u001e|u0085|u2028|u2029)")


def unescape_prompt_path(value: str) -> str:
    """The inverse of :func:`prompt_path`: a model may copy ``a&amp;b.py`` or ``a\\nb.py``
    back verbatim; this gives ``a&b.py`` and ``a`` newline ``b.py``."""
    if "\\" in value:
        value = _SPELLED_BREAK.sub(
            lambda m: {"r": "\r", "n": "\n"}.get(m.group(1)) or chr(int(m.group(1)[1:], 16)),
            value)
    return (value.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"')
            .replace("&amp;", "&"))


def human_bytes(n: int) -> str:
    """``512 B``, ``64.0 KiB``, ``50.0 MiB`` (binary units)."""
    if n < 1024:
        return f"{n} B"
    if n < 1000 * 1024:  # 1023.9 KiB reads better as 1.0 MiB
        return f"{n / 1024:.1f} KiB"
    return f"{n / (1 << 20):.1f} MiB"
