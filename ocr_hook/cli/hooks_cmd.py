"""``git ocr install|uninstall [--pre-commit] [--pre-merge-commit] [--pre-push]
[--claude-code] [--cursor] [--codex]``: the native git hooks (spec §1.1) and the coding
agents' hook entries, one line printed per change; ``git ocr hook claude-code|codex``: the
gate inside the coding agent."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from .. import git, hooks, util
from ..errors import GitError, OcrError
from ..exitcodes import Exit
from ..util import display_text

log = logging.getLogger("ocr_hook")
CLAUDE_BLOCK = 2  # the one exit code that stops a Claude Code tool call (stderr to the agent)
AGENT_TOKEN_BUDGET = 300_000  # the git hooks' default review.max_tokens_budget (spec §2)


def run_hooks_command(args: argparse.Namespace) -> int:
    """Install or uninstall the chosen hooks (``pre-commit`` when none is named for install,
    every hook of ocr-hook for uninstall) in the repository around the working directory.
    A refused install (a hook manager runs the hooks here) prints ``ocr-hook: not installed:
    <reasons>`` and then, verbatim, the lines to add to the manager's configuration, on
    stderr; exit 2. ``--claude-code`` alone touches only ``.claude/settings.json``."""
    repo = git.find_toplevel(Path.cwd())
    chosen = [h for h, on in (("pre-commit", args.pre_commit),
                              ("pre-merge-commit", args.pre_merge_commit),
                              ("pre-push", args.pre_push)) if on]
    cursor = bool(getattr(args, "cursor", False))
    codex = bool(getattr(args, "codex", False))
    agent = bool(getattr(args, "claude_code", False)) or cursor or codex
    lines = []
    if args.command == "install":
        if chosen or not agent:
            try:
                changes = hooks.install(repo, chosen or ["pre-commit"], force=args.force)
            except hooks.ManagedElsewhere as e:
                advice = hooks.paste_order(e.refusals)  # bottom-up: each "after line N" holds
                lines = [f"ocr-hook: {e}"] + [x for r in advice for x in r.advice]
                print("\n".join(display_text(x) for x in lines), file=sys.stderr)
                return Exit.USAGE
            lines = [c.describe() for c in changes]
        if getattr(args, "claude_code", False):
            path, action = hooks.install_claude_code(repo)
            lines.append(f"installed Claude Code hook (PreToolUse, Bash): {path}"
                         if action == "installed"
                         else f"Claude Code hook already installed: {path}")
        if cursor:
            path, action = hooks.install_cursor(repo)
            lines.append(f"installed Cursor hook (beforeShellExecution): {path}"
                         if action == "installed" else f"Cursor hook already installed: {path}")
        if codex:
            path, action = hooks.install_codex(repo)
            lines.append(f"installed Codex CLI hook (PreToolUse, Bash): {path}"
                         if action == "installed" else f"Codex CLI hook already installed: {path}")
    else:
        if chosen or not agent:
            lines = [c.describe() for c in hooks.uninstall(repo, chosen or list(hooks.HOOK_TYPES))]
        if getattr(args, "claude_code", False):
            path, action = hooks.uninstall_claude_code(repo)
            lines.append(f"removed Claude Code hook: {path}" if action == "removed"
                         else "Claude Code hook not installed")
        if cursor:
            path, action = hooks.uninstall_cursor(repo)
            lines.append(f"removed Cursor hook: {path}" if action == "removed"
                         else "Cursor hook not installed")
        if codex:
            path, action = hooks.uninstall_codex(repo)
            lines.append(f"removed Codex CLI hook: {path}" if action == "removed"
                         else "Codex CLI hook not installed")
    for line in lines:
        print(display_text(line))  # paths of the repository
    return Exit.OK


def _on_error_code(args: argparse.Namespace, environ: Mapping[str, str], repo: Path | None) -> int:
    """The exit code of an internal error under ``gate.on_error`` (the settings of ``repo``, or
    of the repository around the working directory, when they load, else
    ``OCR_HOOK_GATE_ON_ERROR``): 2 for ``block``, else 0. Never another code: Claude Code runs
    the command after any exit code but 2."""
    on_error = environ.get("OCR_HOOK_GATE_ON_ERROR", "").strip().lower()
    try:
        from .. import config

        repo = repo or git.find_toplevel(Path.cwd())  # Claude Code runs hooks in the project
        on_error = config.load_settings(repo, vars(args), environ)[0].gate.on_error
    except Exception:  # noqa: BLE001 - the settings are what failed: the environment decides
        pass
    return CLAUDE_BLOCK if on_error == "block" else int(Exit.OK)


def run_cursor_hook(environ: Mapping[str, str]) -> int:
    """``git ocr hook cursor``: Cursor's ``beforeShellExecution`` event on stdin, reviewed by
    ``git ocr hook claude-code`` in a child process (the event translated,
    ``hooks.claude_event``); Cursor's answer (``hooks.cursor_answer``: ``deny`` with the
    findings for the agent when the gate blocks) on stdout. Always exit 0: Cursor reads the
    answer. An input that is not JSON is answered ``allow`` or ``deny`` per gate.on_error, as
    the Claude Code gate answers it."""
    import json
    import subprocess

    data = sys.stdin.buffer.read() if sys.stdin is not None else b""
    try:
        event = hooks.claude_event(data)
    except OcrError as e:
        log.error("NOT REVIEWED: %s", util.one_line(str(e)))
        event = data  # the gate answers a malformed event per gate.on_error
    child = subprocess.run([sys.executable, "-m", "ocr_hook.cli", "hook", "claude-code"],
                           input=event, capture_output=True, env=dict(environ), check=False)
    report = child.stderr.decode("utf-8", "replace")
    sys.stderr.write(report)
    print(json.dumps(hooks.cursor_answer(child.returncode, report), ensure_ascii=False))
    return int(Exit.OK)


def run_claude_code_hook(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """``git ocr hook claude-code``: Claude Code's ``PreToolUse`` event on stdin. A Bash
    command that runs ``git commit`` gets what that commit would contain reviewed; a blocked
    gate exits 2 with the findings, how to dismiss them and what to do on stderr. Any other
    command exits 0 at once. An internal error (a malformed event included) exits 0 or 2 per
    ``gate.on_error``; this function never raises and never returns another code."""
    repo: Path | None = None
    try:
        data = sys.stdin.buffer.read() if sys.stdin is not None else b""
        event = hooks.parse_event(data, Path.cwd())
        calls = list(dict.fromkeys(c for c in hooks.commit_invocations(event.command, event.cwd)
                                   if not c.dry_run))
        for call in calls:
            try:
                repo = git.find_toplevel(call.cwd)
            except (GitError, OSError):
                continue  # not a repository: that git commit fails by itself
            code = _review_commit(args, environ, repo, call)
            if code:
                return code
        return int(Exit.OK)
    except Exception as e:  # noqa: BLE001 - any code but 0 and 2 would let the command run
        log.error("NOT REVIEWED: %s: %s", type(e).__name__, util.one_line(str(e)))
        log.debug("traceback", exc_info=True)
        return _on_error_code(args, environ, repo)


def _review_commit(args: argparse.Namespace, environ: Mapping[str, str], repo: Path,
                   call: hooks.CommitCall) -> int:
    """Review what ``call`` would commit (``hooks.prepare_commit``), its report on stderr;
    0 when the commit may run, 2 when the gate blocks it."""
    import contextlib

    from .review_cmd import run_review_command

    if call.unseen:  # what the commit would hold cannot be built for a review: never a PASS
        print(f"ocr-hook: NOT REVIEWED: `{display_text(call.unseen)}` before the commit"
              " changes the index in a way a review cannot replay; run it as a command of its"
              " own, then run the `git commit` again.", file=sys.stderr)
        return CLAUDE_BLOCK
    preview = hooks.prepare_commit(repo, call, environ)
    try:
        ns = argparse.Namespace(**vars(args))
        ns.commit, ns.from_ref, ns.to_ref, ns.preview, ns.files = (
            preview.commit or None, None, None, False, None)
        if getattr(ns, "max_tokens_budget", None) is None:  # a hook's budget, as git hooks have
            from .. import config

            settings = config.load_settings(repo, vars(args), preview.environ)[0]
            if settings.review.max_tokens_budget is None:
                ns.max_tokens_budget = AGENT_TOKEN_BUDGET
        os.chdir(repo)
        with contextlib.redirect_stdout(sys.stderr), git.run_scope():
            code = run_review_command(ns, preview.environ, "review")
    finally:
        preview.close()
    if code == Exit.FINDINGS:
        print("ocr-hook: the `git commit` did not run. Fix the findings above and commit again;"
              " a finding that is not a problem: `git ocr dismiss ID --reason '…'`, then commit"
              " again.", file=sys.stderr)
        return CLAUDE_BLOCK
    if code == Exit.INCOMPLETE:
        return CLAUDE_BLOCK  # gate.on_error = block: the review said why
    if code:
        return _on_error_code(args, environ, repo)
    return int(Exit.OK)


def run_post_commit_hook() -> int:
    """``git ocr hook post-commit`` (spec §3.4.1): attach the review note to the commit just
    made when the pre-commit hook reviewed exactly its tree on its parent
    (``git.note_new_commit``). Always 0; a failure is one ``ocr-hook: review note not
    written: …`` line on stderr."""
    try:
        git.note_new_commit(git.find_toplevel(Path.cwd()))
    except Exception as e:  # noqa: BLE001 - a note is never worth a failed commit
        log.error("review note not written: %s", util.one_line(str(e)) or type(e).__name__)
    return int(Exit.OK)
