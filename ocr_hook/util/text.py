r"""Text shown to people: repository paths that are not UTF-8, user-supplied names kept on one
line, byte counts in binary units. Pure: no I/O.

Paths: git prints them as raw bytes; ``os.fsdecode`` turns each byte that is not UTF-8 into a
lone surrogate ``U+DC80``–``U+DCFF`` (PEP 383 ``surrogateescape``), so ``str`` paths stay exact
inside ocr-hook. Such a string cannot be encoded as UTF-8, so wherever a path leaves as text
(prompts, tool results, JSON, SARIF, the terminal) it is shown with each raw byte as ``\xNN``
(two lower-case hex digits), the form git's ``core.quotePath`` uses in octal. :func:`real_path`
maps that form back, so a path the model echoes from a prompt or tool result names the real
file. JSON output also carries the exact bytes as base64 (``path_bytes_b64``).
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


def one_line(text: str) -> str:
    """``text`` with every line break escaped (``\\n``, ``\\r``…): user-supplied names (file
    names, values) inside an error message cannot split it into several lines."""
    if not any(ch in text for ch in _LINE_BREAKS):
        return text
    return "".join(ch.encode("unicode_escape").decode("ascii") if ch in _LINE_BREAKS else ch
                   for ch in text)


def human_bytes(n: int) -> str:
    """``512 B``, ``64.0 KiB``, ``50.0 MiB`` (binary units)."""
    if n < 1024:
        return f"{n} B"
    if n < 1000 * 1024:  # 1023.9 KiB reads better as 1.0 MiB
        return f"{n / 1024:.1f} KiB"
    return f"{n / (1 << 20):.1f} MiB"
