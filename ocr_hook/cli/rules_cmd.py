"""``git ocr rules check PATH``: which review rules apply to a path (spec §5)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path

from .. import config, git
from ..exitcodes import Exit
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
    print(f"path:    {rel}")
    print(f"layer:   {m.layer}")
    print(f"pattern: {m.pattern}")
    print(f"source:  {m.origin or 'inline'}")
    print()
    print(m.text)
    return Exit.OK
