"""Text for people: user-supplied names kept on one line, byte counts in binary units."""

from __future__ import annotations

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
