"""``git ocr rules check PATH``: which review rules apply to a path (spec §5). The rules come
from the repository (its rule file at HEAD) as well as the user: the path passes
``util.display_path``, the layer, pattern and source ``util.display_text``, and the rule text
``util.display_text`` keeping its newlines and tabs."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path

from .. import config, git
from ..exitcodes import Exit
from ..util import display_path, display_text
from .review_cmd import rule_layers


def rules_check(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """``git ocr rules check PATH``: the rule layer, pattern and text that apply to PATH."""
    repo = git.find_toplevel(Path.cwd())
    cfg = config.load_config(repo, vars(args), environ)
    layers = rule_layers(repo, cfg, args, environ)
    rel = os.path.relpath(Path.cwd() / args.path, repo).replace(os.sep, "/")
    if rel.startswith("../"):
        rel = args.path
    m = layers.check(rel)
    print(f"path:    {display_path(rel)}")
    print(f"layer:   {display_text(m.layer)}")
    print(f"pattern: {display_text(m.pattern)}")
    print(f"source:  {display_text(m.origin or 'inline')}")
    print()
    print(display_text(m.text, keep="\n\t"))
    return Exit.OK
