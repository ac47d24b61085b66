"""``git ocr install|uninstall [--pre-commit] [--pre-merge-commit] [--pre-push]``: the native git
hooks (spec §1.1), one line printed per change."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import git, hooks
from ..exitcodes import Exit
from ..util import display_text


def run_hooks_command(args: argparse.Namespace) -> int:
    """Install or uninstall the chosen hooks (``pre-commit`` when none is named for install,
    every hook of ocr-hook for uninstall) in the repository around the working directory.
    A refused install (a hook manager runs the hooks here) prints ``ocr-hook: not installed:
    <reasons>`` and then, verbatim, the lines to add to the manager's configuration, on
    stderr; exit 2."""
    repo = git.find_toplevel(Path.cwd())
    chosen = [h for h, on in (("pre-commit", args.pre_commit),
                              ("pre-merge-commit", args.pre_merge_commit),
                              ("pre-push", args.pre_push)) if on]
    if args.command == "install":
        try:
            changes = hooks.install(repo, chosen or ["pre-commit"], force=args.force)
        except hooks.ManagedElsewhere as e:
            advice = hooks.paste_order(e.refusals)  # bottom-up: each "after line N" holds
            lines = [f"ocr-hook: {e}"] + [x for r in advice for x in r.advice]
            print("\n".join(display_text(x) for x in lines), file=sys.stderr)
            return Exit.USAGE
    else:
        changes = hooks.uninstall(repo, chosen or list(hooks.HOOK_TYPES))
    for c in changes:
        print(display_text(c.describe()))  # paths of the repository
    return Exit.OK
