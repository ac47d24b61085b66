"""TOML text for ``git ocr config``: :func:`toml_literal` renders one value for ``get``/``list``;
:func:`edit_toml` and :func:`dump_toml` edit and write the user file with tomlkit, so the
user's comments, key order and layout survive ``config set``/``unset``. tomlkit is imported
only inside those two functions (start-up stays lazy).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, MutableMapping
from typing import Any

from ..errors import ConfigError
from .layering import parse_toml

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(k: str) -> str:
    return k if _BARE_KEY.match(k) else _toml_str(k)


def _toml_str(s: str) -> str:
    """A TOML basic string (toml.io v1.0.0 §String): backslash, quote and control characters
    escaped."""
    out = []
    for ch in s:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_literal(value: Any) -> str:
    """One TOML value: string, boolean, integer, float, array or inline table."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _toml_str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_literal(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_toml_key(str(k))} = {toml_literal(v)}"
                               for k, v in value.items()) + "}"
    raise ConfigError(f"cannot write {type(value).__name__} to TOML")


def dump_toml(data: Mapping[str, Any]) -> str:
    """Nested dict → TOML text (tomlkit: one ``[table]`` per dict, scalars and arrays as
    literals); round-trips through ``tomllib``."""
    import tomlkit

    return tomlkit.dumps(data)


def _only_whitespace(table: Any) -> bool:
    """True when a tomlkit table holds no key and no comment (its header can go)."""
    from tomlkit.items import Null, Whitespace

    return len(table) == 0 and all(isinstance(item, (Whitespace, Null))
                                   for _, item in table.value.body)


def _toml_item(value: Any) -> Any:
    """``value`` for tomlkit, tables kept inline (``key = {a = 1}``) on the key's own line."""
    import tomlkit

    if isinstance(value, Mapping):
        table = tomlkit.inline_table()
        for k, v in value.items():
            table[str(k)] = _toml_item(v)
        return table
    if isinstance(value, (list, tuple)):
        array = tomlkit.array()
        array.extend(_toml_item(v) for v in value)
        return array
    return value


def _edit_doc(text: str, key: str, value: Any | None) -> str:
    """Set (``value``) or remove (None) ``key`` in the tomlkit document of ``text``: other
    keys, comments and blank lines stay where they were. A table left without keys or comments
    by a removal loses its header too; no blank lines are left at the end of the file."""
    import tomlkit
    from tomlkit.items import Table

    doc = tomlkit.parse(text)
    section, _, name = key.partition(".")
    table: Any = doc.get(section)
    if value is None:
        if isinstance(table, MutableMapping) and name in table:
            del table[name]
            if isinstance(table, Table) and _only_whitespace(table):
                del doc[section]
    else:
        if not isinstance(table, MutableMapping):
            if section in doc:
                del doc[section]
            table = tomlkit.table()
            doc.add(section, table)
        table[name] = _toml_item(value)
    out = tomlkit.dumps(doc).rstrip("\n")
    if not text.startswith("\n"):  # a removed first item leaves no blank line on top
        out = out.lstrip("\n")
    return out + "\n" if out.strip() else ""


def edit_toml(text: str, key: str, value: Any | None, source: str) -> str:
    """The user file's text with ``key`` (``section.name``) set to ``value`` (None: removed),
    edited with tomlkit so comments, key order and layout survive. When the edited text does
    not read back as the intended data, the file is written anew with :func:`dump_toml`.
    Raises ConfigError when ``text`` is not valid TOML."""
    data = parse_toml(text, source) if text.strip() else {}
    want = {k: dict(v) if isinstance(v, Mapping) else v for k, v in data.items()}
    section, _, name = key.partition(".")
    sect = want.get(section)
    if value is None:
        if isinstance(sect, dict):
            sect.pop(name, None)
            if not sect:  # no empty [section] left behind
                del want[section]
    else:
        if not isinstance(sect, dict):
            sect = want[section] = {}
        sect[name] = value
    from tomlkit.exceptions import TOMLKitError

    try:
        edited = _edit_doc(text, key, value)
        got = parse_toml(edited, source)
        if value is None:  # a table left with only comments keeps its (empty) header
            got = {k: v for k, v in got.items() if v != {} or k in want}
        if got == want:
            return edited
    except (ConfigError, TOMLKitError):
        pass
    return dump_toml(want)
