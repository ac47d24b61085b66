"""Review rules: repository path -> the rule text the model reviews that file against (spec §5).

Rules come in layers, highest precedence first: ``cli`` (``--rule FILE``), ``repo``
(``.ocr-hook.toml``'s ``[rules]`` or ``.opencodereview/rule.json``, read from HEAD by the caller),
``user`` (``rule.json`` in the config dir) and ``builtin`` (``config/rules/*.md`` mapped by
``config/rules/rule_map.json``). Within a layer the first matching entry wins, and the first layer
with a match wins. A user entry with ``merge_system_rule`` adds its text to the built-in text for
that path instead of replacing it.

Patterns are gitignore-style globs (pathspec ``GitIgnoreSpec``) matched case-insensitively on the
repository-relative POSIX path, after brace groups (``*.{js,ts}``) are expanded.

Pure: no processes, no environment, no clock. Rule files named inside a rule JSON are read only
through the ``read_md`` callable the caller passes (it confines reads to the repository at HEAD or
to the config dir). The built-in rules are read once through ``ocr_hook.util.resources``.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from .. import util
from ..errors import ConfigError
from . import rule_globs
from .selection import glob_needles

if TYPE_CHECKING:  # imported with the first pattern compiled
    import pathspec

LAYERS = ("cli", "repo", "user", "builtin")  # spec §5, highest precedence first
RULE_FILE_MAX_BYTES = 512 * 1024  # spec §5 (OCR readRuleFileSafe: 512 KB per rule file)
RULE_FILE_SUFFIXES = (".md", ".markdown", ".txt")  # OCR allowedRuleExts
MAX_BRACE_EXPANSIONS = 1024  # one pattern may not expand to more globs than this
BUILTIN_RULE_MAP = "rules/rule_map.json"  # inside package ocr_hook.builtin

# Keys of a rule JSON/TOML table besides include/exclude/rules that are accepted and ignored:
# `file` is `.ocr-hook.toml`'s `[rules] file` (handled by the caller); `$schema`, `_comment`...
_IGNORED_TOP_KEYS = frozenset({"file"})
_ENTRY_KEYS = frozenset({"path", "rule", "merge_system_rule"})
_LAYER_TITLES = {
    "cli": "from the --rule file",
    "repo": "from the repository",
    "user": "from the user rule file",
    "builtin": "built in",
}
_DRIVE_RE = re.compile(r"^[A-Za-z]:")

ReadMd = Callable[[str], "str | None"]
"""Reads a rule file by relative POSIX path; returns its text, or None when it does not exist."""


class RuleEntry(NamedTuple):
    """One pattern -> text entry of a layer, in declaration order (first match wins)."""

    patterns: tuple[str, ...]  # gitignore globs as written (brace groups allowed, any case)
    text: str  # rule text (Markdown); "" means "no rule of its own"
    merge_system_rule: bool = False  # True: append text to the built-in rule instead of replacing
    origin: str = ""  # where text came from: "python.md", "docs/team.md"; "" when inline
    # built-in entries: each pattern's regexes (rule_globs), matched without pathspec
    regexes: tuple[tuple[str, ...], ...] = ()


class RuleSource(NamedTuple):
    """One layer of rules. ``include``/``exclude`` are file-selection globs carried for
    ``selection`` (spec §4 user_include/user_exclude); ``resolve`` does not use them."""

    layer: str  # one of LAYERS
    entries: tuple[RuleEntry, ...]
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()


class RuleMatch(NamedTuple):
    """The rule chosen for one path. ``layer`` is "none" and all else "" when nothing matched
    (possible only when no builtin source was passed)."""

    layer: str  # layer of the winning entry (for a merge, the user layer)
    pattern: str  # the winning pattern as written in its source
    text: str  # final text (built-in + user text for a merge)
    origin: str = ""  # "python.md", "docs/team.md", "python.md + docs/team.md", "" when inline


NO_MATCH = RuleMatch("none", "", "", "")


def expand_braces(pattern: str) -> list[str]:
    r"""Expand brace groups, nested or in sequence: ``a/*.{js,ts{,x}}`` -> ``["a/*.js", "a/*.ts",
    "a/*.tsx"]``; ``{a,b}{c,d}`` -> ``["ac", "ad", "bc", "bd"]``. Order is left to right and
    duplicates are dropped. A group without a comma loses its braces (``{a}`` -> ``a``), as in
    doublestar. An unbalanced brace and a backslash-escaped one (``\{``, ``\}``, ``\,``) stay
    literal (the backslash is kept for the gitignore matcher). Raises ConfigError when the pattern
    expands to more than MAX_BRACE_EXPANSIONS globs."""
    out: dict[str, None] = {}
    _expand_into(pattern, out, pattern)
    return list(out)


def _expand_into(s: str, out: dict[str, None], original: str) -> None:
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            close = _matching_brace(s, i)
            if close is not None:
                for alt in _split_alternatives(s[i + 1 : close]):
                    _expand_into(s[:i] + alt + s[close + 1 :], out, original)
                return
        i += 1
    out[s] = None
    if len(out) > MAX_BRACE_EXPANSIONS:
        raise ConfigError(
            f"pattern {original!r} expands to more than {MAX_BRACE_EXPANSIONS} globs"
        )


def _matching_brace(s: str, open_at: int) -> int | None:
    depth = 0
    i = open_at
    while i < len(s):
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _split_alternatives(inner: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    start = 0
    i = 0
    while i < len(inner):
        c = inner[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
        i += 1
    parts.append(inner[start:])
    return parts


@functools.lru_cache(maxsize=1024)
def _compile(patterns: tuple[str, ...]) -> pathspec.GitIgnoreSpec:
    """Pure memo: lower-cased, brace-expanded gitignore spec of ``patterns``. Raises ConfigError
    on a pattern pathspec rejects."""
    import pathspec

    lines = [glob.lower() for p in patterns for glob in expand_braces(p)]
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except ValueError as e:  # pathspec's GitWildMatchPatternError is a ValueError
        raise ConfigError(f"invalid glob in {list(patterns)!r}: {e}") from e


@functools.lru_cache(maxsize=1024)
def _needles(patterns: tuple[str, ...]) -> tuple[str, ...] | None:
    """Pure memo: ``selection.glob_needles`` of the lower-cased, brace-expanded ``patterns``
    (a path without any of them matches none of the patterns)."""
    return glob_needles([glob.lower() for p in patterns for glob in expand_braces(p)])


def _matches(patterns: tuple[str, ...], lower_path: str,
             regexes: tuple[tuple[str, ...], ...] = ()) -> bool:
    """Whether the gitignore list ``patterns`` matches ``lower_path``. A path that holds none
    of the patterns' literal parts is no match without compiling them (the built-in rule map
    expands to many globs, and a path matches one entry). ``regexes`` (a built-in entry's,
    per pattern, all including): matched with ``re`` instead of pathspec."""
    needles = _needles(patterns)
    if needles is not None and not any(n in lower_path for n in needles):
        return False
    if regexes:
        joined = rule_globs.compiled(tuple(r for rs in regexes for r in rs))
        return joined.match(lower_path) is not None
    return bool(_compile(patterns).match_file(lower_path))


def _matching_pattern(entry: RuleEntry, lower_path: str) -> str | None:
    """The pattern of ``entry`` (as written) that matches, or None. With negations the whole
    list decides; the reported pattern is the first positive one that matches on its own."""
    if not _matches(entry.patterns, lower_path, entry.regexes):
        return None
    for i, p in enumerate(entry.patterns):
        if not p.startswith("!") and _matches((p,), lower_path, entry.regexes[i:i + 1]):
            return p
    return ", ".join(entry.patterns)


def resolve(path: str, sources: Sequence[RuleSource]) -> RuleMatch:
    """Rule for repository-relative POSIX ``path``. ``sources`` are ordered by precedence, highest
    first (cli, repo, user, builtin); the first entry that matches in the first layer that has one
    wins. Entries with empty text and no merge flag are skipped. A ``merge_system_rule`` entry
    outside the builtin layer yields the builtin text for ``path`` followed by its own text.
    Returns NO_MATCH when nothing matches. Raises ConfigError on an invalid glob in a hand-built
    source that ``path`` could match (parsed sources are validated when parsed)."""
    lower_path = path.lower()
    for source in sources:
        for entry in source.entries:
            if not entry.text and not entry.merge_system_rule:
                continue
            pattern = _matching_pattern(entry, lower_path)
            if pattern is None:
                continue
            if entry.merge_system_rule and source.layer != "builtin":
                base = resolve(path, [s for s in sources if s.layer == "builtin"])
                return RuleMatch(
                    source.layer,
                    pattern,
                    _merge_text(base.text, entry.text, source.layer),
                    _merge_origin(base.origin, entry.origin),
                )
            return RuleMatch(source.layer, pattern, entry.text, entry.origin)
    return NO_MATCH


def _merge_text(builtin_text: str, user_text: str, layer: str) -> str:
    if not builtin_text:
        return user_text
    if not user_text:
        return builtin_text
    title = _LAYER_TITLES.get(layer, layer)
    return (
        f"{builtin_text}\n\n## Additional rules ({title})\n\n"
        "These add to the checklist above and take precedence where they conflict.\n\n"
        f"{user_text}"
    )


def _merge_origin(builtin_origin: str, user_origin: str) -> str:
    parts = [o for o in (builtin_origin, user_origin or "inline") if o]
    return " + ".join(parts)


def group_rule_text(paths: Sequence[str], sources: Sequence[RuleSource]) -> str:
    """Rule text for a review group. If every path resolves to the same text, that text alone;
    otherwise one ``<rules for="a.py, b.py">\\n{text}\\n</rules>`` block per distinct non-empty
    text, in order of first appearance, joined by a blank line (each path in the attribute as
    every prompt shows it, ``util.prompt_path``: XML-escaped, on one line). Returns "" for no
    paths or when no path has a rule."""
    by_text: dict[str, list[str]] = {}
    for path in paths:
        by_text.setdefault(resolve(path, sources).text, []).append(path)
    if len(by_text) == 1:
        return next(iter(by_text))
    blocks = [
        f'<rules for="{", ".join(util.prompt_path(p) for p in group)}">\n{text}\n</rules>'
        for text, group in by_text.items()
        if text
    ]
    return "\n\n".join(blocks)


# --- user rule files: the reference project's rule.json format --------------------------------


def parse_rule_json(
    data: bytes, layer: str, read_md: ReadMd, *, name: str | None = None
) -> RuleSource:
    """Parse a rule file in the reference project's format (spec §5)::

        {"include": ["glob", ...], "exclude": ["glob", ...],
         "rules": [{"path": "glob" | ["glob", ...], "rule": "text" | "dir/file.md",
                    "merge_system_rule": false}]}

    ``data`` is UTF-8 JSON (a BOM is accepted). ``name`` (e.g. ".opencodereview/rule.json") is
    used in error messages. See parse_rule_mapping for the fields, rule file references and
    errors. Raises ConfigError on invalid JSON or a top level that is not an object."""
    where = name or f"{layer} rule file"
    try:
        obj = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ConfigError(f"{where}: invalid JSON: {e}") from e
    if not isinstance(obj, dict):
        raise ConfigError(f"{where}: expected a JSON object with include/exclude/rules")
    return parse_rule_mapping(obj, layer, read_md, name=where)


def parse_rule_mapping(
    mapping: Mapping[str, Any], layer: str, read_md: ReadMd, *, name: str | None = None
) -> RuleSource:
    """Build a RuleSource from an already decoded mapping (rule.json, or the ``[rules]`` table of
    ``.ocr-hook.toml`` with ``[[rules.rules]]`` entries). Fields:

    - ``include``/``exclude``: a glob or a list of globs (optional).
    - ``rules``: list of tables; ``path`` is a glob or a non-empty list of globs (required);
      ``rule`` is inline text or, when it is one word ending in .md/.markdown/.txt, a relative
      path read through ``read_md`` (optional, default ""); ``merge_system_rule`` a bool
      (optional, default false).
    - ``file`` and keys starting with "$" or "_" are ignored; any other key is an error.

    ``layer`` must be one of LAYERS (ValueError otherwise: a caller bug). Raises ConfigError
    naming ``name`` and the key for: a wrong type, an unknown key, an invalid glob, a rule file
    path that is absolute or contains "..", a rule file that ``read_md`` does not find, or rule
    text over RULE_FILE_MAX_BYTES (UTF-8)."""
    if layer not in LAYERS:
        raise ValueError(f"unknown rule layer {layer!r}; layers: {', '.join(LAYERS)}")
    where = name or f"{layer} rule file"
    for key in mapping:
        if key in ("include", "exclude", "rules") or key in _IGNORED_TOP_KEYS:
            continue
        if isinstance(key, str) and key.startswith(("$", "_")):
            continue
        raise ConfigError(f"{where}: unknown key {key!r}; allowed: include, exclude, rules")
    include = _glob_list(mapping.get("include", []), f"{where}: include")
    exclude = _glob_list(mapping.get("exclude", []), f"{where}: exclude")
    raw_rules = mapping.get("rules", [])
    if not isinstance(raw_rules, list):
        raise ConfigError(f"{where}: rules must be a list of {{path, rule}} tables")
    entries = tuple(
        _parse_entry(raw, f"{where}: rules[{i}]", read_md) for i, raw in enumerate(raw_rules)
    )
    return RuleSource(layer, entries, include, exclude)


def _glob_list(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ConfigError(f"{where} must be a glob or a list of non-empty globs")
    globs = tuple(value)
    try:
        _compile(globs)
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}") from e
    return globs


def _parse_entry(raw: Any, where: str, read_md: ReadMd) -> RuleEntry:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where} must be a table with path and rule")
    unknown = sorted(str(k) for k in raw if k not in _ENTRY_KEYS)
    if unknown:
        raise ConfigError(
            f"{where}: unknown key {unknown[0]!r}; allowed: path, rule, merge_system_rule"
        )
    if "path" not in raw:
        raise ConfigError(f"{where}: path is required")
    patterns = _glob_list(raw["path"], f"{where}.path")
    rule = raw.get("rule", "")
    if not isinstance(rule, str):
        raise ConfigError(f"{where}.rule must be text or the path of a .md file")
    merge = raw.get("merge_system_rule", False)
    if not isinstance(merge, bool):
        raise ConfigError(f"{where}.merge_system_rule must be true or false")
    origin = ""
    text = rule.strip()
    if _looks_like_rule_file(text):
        origin = _safe_relpath(text, f"{where}.rule")
        found = read_md(origin)
        if found is None:
            raise ConfigError(f"{where}.rule: rule file {origin!r} not found")
        text = found.strip()
    if len(text.encode("utf-8")) > RULE_FILE_MAX_BYTES:
        raise ConfigError(
            f"{where}.rule: rule text is over {RULE_FILE_MAX_BYTES // 1024} KB"
            + (f" ({origin})" if origin else "")
        )
    return RuleEntry(patterns, text, merge, origin)


def _looks_like_rule_file(value: str) -> bool:
    """One word ending in a rule file suffix (OCR looksLikeFilePath): "docs/py.md" is a file,
    "Follow team.md" is inline text."""
    return bool(value) and not any(c.isspace() for c in value) and (
        value.lower().endswith(RULE_FILE_SUFFIXES)
    )


def _safe_relpath(value: str, where: str) -> str:
    """Normalise a rule file reference to a relative POSIX path: backslashes become "/", "."
    and empty segments are dropped. Raises ConfigError for an absolute path (including "~" and
    drive letters) or any ".." segment."""
    posix = value.replace("\\", "/")
    if posix.startswith(("/", "~")) or _DRIVE_RE.match(posix):
        raise ConfigError(
            f"{where}: rule file {value!r} must be a relative path inside the repository"
        )
    parts = [p for p in posix.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ConfigError(f"{where}: rule file {value!r} must not contain '..'")
    if not parts:
        raise ConfigError(f"{where}: rule file {value!r} is not a file path")
    return "/".join(parts)


# --- built-in rules ------------------------------------------------------------------------------


def parse_rule_map(data: bytes, read_rule: Callable[[str], str]) -> RuleSource:
    """Build the builtin layer from ``config/rules/rule_map.json``: an ordered JSON list of
    ``{"patterns": [glob, ...], "rule": "<name>.md"}``, the last one matching ``**/*``.
    ``read_rule(name)`` returns the text of ``config/rules/<name>``. Raises ValueError when the
    shipped data is malformed (a packaging bug, not a user error)."""
    items = json.loads(data.decode("utf-8"))
    if not isinstance(items, list):
        raise ValueError(f"{BUILTIN_RULE_MAP}: expected a list")
    texts: dict[str, str] = {}
    entries: list[RuleEntry] = []
    for i, item in enumerate(items):
        patterns = item.get("patterns") if isinstance(item, dict) else None
        rule = item.get("rule") if isinstance(item, dict) else None
        if (
            not isinstance(patterns, list)
            or not patterns
            or not all(isinstance(p, str) and p for p in patterns)
            or not isinstance(rule, str)
            or not rule.endswith(".md")
            or "/" in rule
            or "\\" in rule
        ):
            raise ValueError(f"{BUILTIN_RULE_MAP}[{i}]: needs patterns and rule (<name>.md)")
        if rule not in texts:
            texts[rule] = read_rule(rule).strip()
        entries.append(RuleEntry(tuple(patterns), texts[rule], False, rule))
    return RuleSource("builtin", tuple(entries))


@functools.cache
def builtin_rules() -> RuleSource:
    """The builtin layer, loaded once from package ``ocr_hook.builtin`` (``rules/rule_map.json``
    and the ``rules/*.md`` it names), each entry with its patterns' regexes
    (``rule_globs``). Raises FileNotFoundError if the package data is missing, ValueError
    when the regexes do not fit the rule map."""
    source = parse_rule_map(
        util.read_builtin_text(BUILTIN_RULE_MAP).encode("utf-8"),
        lambda rule: util.read_builtin_text(f"rules/{rule}"),
    )
    regexes = rule_globs.builtin()
    if [len(e.patterns) for e in source.entries] != [len(r) for r in regexes]:
        raise ValueError(f"{rule_globs.RESOURCE} does not fit {BUILTIN_RULE_MAP}")
    return source._replace(entries=tuple(
        e._replace(regexes=r) for e, r in zip(source.entries, regexes, strict=True)))
