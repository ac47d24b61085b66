"""The built-in rule map's globs as regular expressions, shipped with it: resolving a path
against the built-in layer needs no pathspec import (which would cost more than the rest of a
cache hit's rule work), because pathspec's own translation of each glob is stored in
``config/rules/rule_map_regex.json`` and matched with ``re``.

The file holds, for each entry of ``rule_map.json`` and each of its patterns, the regexes of the
pattern's brace expansions, lower-cased, as pathspec's ``GitIgnoreSpec`` builds them
(:func:`glob_regexes`); ``python -m tests.support.rule_map_regexes`` writes it, and the tests
fail when it differs from what the installed pathspec builds (a changed rule map or pathspec
version). Every built-in pattern includes (none starts with ``!``), so a path matches
a pattern list when one of its regexes matches, as pathspec decides for such a list. User and
repository rule layers are still matched by pathspec.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from .. import util

RESOURCE = "rules/rule_map_regex.json"  # inside package ocr_hook.builtin
_GROUP_NAME = re.compile(r"\(\?P<\w+>")  # pathspec names a group; an alternation repeats it

Regexes = tuple[tuple[str, ...], ...]  # per pattern of an entry: the regexes of its expansions


def glob_regexes(globs: Sequence[str]) -> tuple[str, ...]:
    """pathspec's regex of each gitignore glob (as given: the caller expands braces and
    lower-cases). Imports pathspec; for generating and checking RESOURCE. Raises ValueError for
    a glob that excludes (``!``) or that pathspec turns into no pattern (a comment, a blank)."""
    import pathspec

    out = []
    for glob in globs:
        patterns = pathspec.GitIgnoreSpec.from_lines([glob]).patterns
        regex = getattr(patterns[0], "regex", None) if len(patterns) == 1 else None
        if regex is None or patterns[0].include is not True:
            raise ValueError(f"{RESOURCE}: glob {glob!r} does not include paths")
        out.append(regex.pattern)
    return tuple(out)


@functools.cache
def builtin() -> tuple[Regexes, ...]:
    """The regexes of RESOURCE: per entry of the rule map, per pattern, per expansion. Raises
    ValueError when the file is malformed (a packaging bug)."""
    data = util.load_builtin_json(RESOURCE)
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not all(
            isinstance(e, list) and all(
                isinstance(p, list) and p and all(isinstance(r, str) for r in p) for p in e)
            for e in entries):
        raise ValueError(f"{RESOURCE}: expected entries: [[[regex, ...] per pattern] per entry]")
    return tuple(tuple(tuple(p) for p in e) for e in entries)


@functools.lru_cache(maxsize=1024)
def compiled(regexes: tuple[str, ...]) -> re.Pattern[str]:
    """One alternation of ``regexes`` (their group names made plain); ``match`` it against a
    lower-cased repository path."""
    return re.compile("|".join(f"(?:{_GROUP_NAME.sub('(?:', r)})" for r in regexes))
