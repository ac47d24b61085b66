"""Regenerate ``config/rules/rule_map_regex.json`` from ``config/rules/rule_map.json`` with the
installed pathspec (``ocr_hook.change.rule_globs``): run ``python -m tests.support.rule_map_regexes``
after changing the rule map or upgrading pathspec; ``tests/change/test_rules.py`` compares the
shipped file with :func:`expected`."""

from __future__ import annotations

import json
from typing import Any

from ocr_hook.change.rule_globs import glob_regexes
from ocr_hook.change.rules import expand_braces
from tests.support.paths import ROOT

RULES_DIR = ROOT / "config" / "rules"
SOURCE_NOTE = ("generated from rule_map.json (each pattern's brace expansions, lower-cased) by "
               "pathspec's GitIgnoreSpec: python -m tests.support.rule_map_regexes; "
               "tests/change/test_rules.py checks it")


def expected() -> dict[str, Any]:
    """The file's content for the current rule map and pathspec."""
    rule_map = json.loads((RULES_DIR / "rule_map.json").read_text(encoding="utf-8"))
    return {"_source": SOURCE_NOTE,
            "entries": [[list(glob_regexes([g.lower() for g in expand_braces(p)]))
                         for p in entry["patterns"]] for entry in rule_map]}


if __name__ == "__main__":
    (RULES_DIR / "rule_map_regex.json").write_text(json.dumps(expected(), indent=1) + "\n",
                                                  encoding="utf-8")
