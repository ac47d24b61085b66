"""The secret rules (spec §14) as data: parsed from `config/secret_patterns.json`, each regex
compiled on first need, with the cheap tests that say a text cannot match a rule. Pure: no
processes, no environment, no network; `redaction` runs the rules.

`config/secret_patterns.json` (read via `util.resources`) is a JSON list of `{"type", "regex",
"group", "keywords", "assignment", "min_entropy", "description"}` objects, tried in file order
(specific rules first, so when two rules cover the same characters the earlier rule names the
hit):

- `type`: the placeholder name, `[REDACTED:<type>]`.
- `regex`: a Python `re` pattern applied to the whole text (a match may span lines: PEM blocks).
  Written with its literal start first: `re` finds a pattern that starts with a character or a
  small class by a fast search, and tries every position of the text for one that starts with a
  lookbehind, so a boundary check goes after the first character (`h(?<![a-z]h)vs[.]`, not
  `(?<![a-z])hvs[.]`: the same matches).
- `group`: 0 for the whole match; 1 for "the value": the first capturing group that took part in
  the match (a rule whose value can be written in several forms gives each form its own group).
- `keywords` (optional): lower-case strings of which every match holds at least one (ignoring
  case); a text that holds none of them is not searched with the rule at all (the cost of a
  scan is mostly rules run over text they cannot match: a lock file holds no `ghp_`).
- `assignment` (optional, default false): every match holds one of `keywords` followed later on
  the same line by `:` or `=` (a name given a value: `password = "..."`, `"token": ...`,
  `API_KEY=...`); a text where no keyword is followed on its line by either is not searched.
  Prose that talks about secrets ("passwords or keys") is the common case it skips: the review's
  own prompts, which every review redacts.
- `min_entropy`: None for rules whose format is distinctive (`AKIA...`, `ghp_...`). A number
  marks a heuristic rule (secret-like name = literal): the value must reach that Shannon entropy
  and must not read as code or plain data (`values`).

A rule's regex is compiled on the first text that passes these tests (`Rule.pattern`): `re`
compiles in pure Python, so compiling every rule up front is slow, and most texts can match a
few at most.
"""

from __future__ import annotations

import functools
import json
import re
from typing import NamedTuple

from .. import util

RULES_RESOURCE = "secret_patterns.json"  # built-in data, read through ocr_hook.util.resources
# regex text -> compiled pattern, filled by Rule.pattern (a plain dict: threads that compile the
# same rule at once each store an equal pattern)
_COMPILED: dict[str, re.Pattern[str]] = {}


class Rule(NamedTuple):
    """One entry of RULES_RESOURCE (fields as described in the module docstring); `where`
    names the entry in errors ("secret_patterns.json[3] (aws-access-key)")."""

    where: str
    type: str
    regex: str
    group: int
    min_entropy: float | None
    keywords: tuple[str, ...]  # lower case; the rule runs only on a text holding one of them
    assignment: bool = False  # a keyword is followed on its line by ":" or "=" in every match

    @property
    def pattern(self) -> re.Pattern[str]:
        """`regex` compiled (once per process, on first use). Raises ValueError on a bad regex
        or a group 1 without a capturing group (a packaging bug; the tests compile every
        rule)."""
        pattern = _COMPILED.get(self.regex)
        if pattern is None:
            try:
                pattern = re.compile(self.regex)
            except re.error as e:
                raise ValueError(f"{self.where}: bad regex: {e}") from e
            if self.group == 1 and pattern.groups == 0:
                raise ValueError(f"{self.where}: group 1 needs a capturing group")
            _COMPILED[self.regex] = pattern
        return pattern

    def may_match(self, lowered: str, present: dict[str, bool] | None = None) -> bool:
        """False when the rule cannot match a text whose `str.lower()` is `lowered`: none of
        its keywords occurs in it, or (an `assignment` rule) none is followed on its line by
        `:` or `=`. Substring searches only: no regex is compiled. `present` (keyword →
        whether it occurs in `lowered`) is filled and reused when given: rules that share
        keywords then search a large text for each keyword once."""
        if not self.keywords:
            return True
        if present is None:
            found = [k for k in self.keywords if k in lowered]
        else:
            found = []
            for k in self.keywords:
                hit = present.get(k)
                if hit is None:
                    hit = present[k] = k in lowered
                if hit:
                    found.append(k)
                    if not self.assignment:
                        break
        if not self.assignment:
            return bool(found)
        return any(_assigned(lowered, k) for k in found)

    def is_compiled(self) -> bool:
        """Whether `pattern` has been compiled in this process (for tests and benches)."""
        return self.regex in _COMPILED


def _assigned(lowered: str, keyword: str) -> bool:
    """Whether some occurrence of `keyword` in `lowered` is followed on its line by ":" or
    "=". Each line is searched once: the last operator of the line is found the first time an
    occurrence falls on it."""
    at = lowered.find(keyword)
    line_end = -1
    last_op = -1  # offset of the last ":" or "=" of the line ending at line_end
    while at != -1:
        if at > line_end:
            line_end = lowered.find("\n", at)
            if line_end == -1:
                line_end = len(lowered)
            line_start = lowered.rfind("\n", 0, at) + 1
            last_op = max(lowered.rfind(":", line_start, line_end),
                          lowered.rfind("=", line_start, line_end))
        if last_op >= at + len(keyword):
            return True
        at = lowered.find(keyword, at + 1)
    return False


@functools.cache
def rules() -> tuple[Rule, ...]:
    """The rules of RULES_RESOURCE in file order, each compiled on first use. Raises ValueError
    on a malformed entry (a packaging bug, not user input)."""
    return parse_rules(util.read_builtin_text(RULES_RESOURCE))


def parse_rules(raw: str) -> tuple[Rule, ...]:
    """Parse the JSON rule list described in the module docstring (no regex is compiled here:
    `Rule.pattern`). Raises ValueError naming the first bad entry."""
    data = json.loads(raw)
    if not isinstance(data, list):
        raise ValueError(f"{RULES_RESOURCE}: expected a JSON list of rules")
    out: list[Rule] = []
    for index, entry in enumerate(data):
        where = f"{RULES_RESOURCE}[{index}]"
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: expected an object")
        type_, regex, group = entry.get("type"), entry.get("regex"), entry.get("group", 0)
        min_entropy = entry.get("min_entropy")
        if not isinstance(type_, str) or not all(
                w.isascii() and w.isalnum() and w == w.lower() for w in type_.split("-")):
            raise ValueError(f"{where}: type must be a lower-case-dashed name")
        where = f"{where} ({type_})"
        if not isinstance(regex, str):
            raise ValueError(f"{where}: regex must be a string")
        if group not in (0, 1):
            raise ValueError(f"{where}: group must be 0, or 1 with a capturing group")
        if min_entropy is not None and (
                isinstance(min_entropy, bool) or not isinstance(min_entropy, (int, float))):
            raise ValueError(f"{where}: min_entropy must be null or a number")
        keywords = entry.get("keywords", [])
        if not isinstance(keywords, list) or not all(
                isinstance(k, str) and k and k == k.lower() for k in keywords):
            raise ValueError(f"{where}: keywords must be a list of lower-case strings")
        assignment = entry.get("assignment", False)
        if not isinstance(assignment, bool) or (assignment and not keywords):
            raise ValueError(f"{where}: assignment must be true or false (true needs keywords)")
        out.append(Rule(where, type_, regex, group,
                        None if min_entropy is None else float(min_entropy), tuple(keywords),
                        assignment))
    return tuple(out)
