"""Program entry of ``git ocr`` / ``ocr-hook``: parse, set up logging, dispatch to a command
module, and map every failure to an exit code (spec §9). This is the one error boundary: the
command modules return an ``Exit`` code or raise; only :func:`main` catches.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import os
import signal
import sys
from collections.abc import Mapping, Sequence

from .. import util
from ..errors import OcrError
from ..exitcodes import Exit
from ..util import TYPE_CHECKING
from .common import hook_words, log_formatter
from .parser import parse, top_parser

if TYPE_CHECKING:
    import logging

CONFIG_ACTIONS = ("list", "get", "set", "unset", "path", "allow-mcp", "allow-endpoint")


def setup_logging(verbose: bool) -> logging.Logger:
    """Log ``ocr-hook: <message>`` lines on stderr (stdout carries the result alone); returns
    the ``ocr_hook`` logger. logging is imported here: ``-h`` and a skipped hook never need it."""
    import logging

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(log_formatter("ocr-hook: %(message)s"))  # control characters escaped
    root = logging.getLogger("ocr_hook")
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    root.propagate = False
    return root


def _hook_error_hint(hook: str, env: Mapping[str, str]) -> str:
    """The second stderr line of a hook that stops with a usage or configuration error (exit
    2): how to let this one commit or push through (e.g. the commit that fixes a typo in
    ``.ocr-hook.toml``, which is read from HEAD), the one way that works under what runs the
    hook (``hooks.hook_host``) plus ``OCR_HOOK_SKIP=1``."""
    from .. import hooks

    what, hook_id = hook_words(hook)
    host = hooks.hook_host(hook, env)
    if host == "framework":
        hook_id = hooks.framework_skip_id(hook_id, hook)
    if host in ("range", "ci"):
        return f"to pass anyway, {hooks.bypass_clause(host, what, hook_id)}"
    return f"to {what} anyway, " + hooks.bypass_clause(host, what, hook_id,
                                                      "bypass the review once:")


def _details_hint(args: argparse.Namespace) -> str:
    """How to see the traceback of an internal error: ``-v`` (the debug log), added to this
    command; a hook is rerun by hand as the review it does."""
    if getattr(args, "verbose", False) or getattr(args, "verbose_all", False):
        return "traceback below"
    if args.command == "hook":
        return "for details, run the review by hand with -v: `git ocr -v review`"
    return f"run again as `git ocr -v {args.command} …` for details"


def _dispatch(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Run the chosen command; returns its exit code. Commands are imported in their branch."""
    command = args.command
    if command == "hook" and args.hook == "cursor":
        from .hooks_cmd import run_cursor_hook

        return run_cursor_hook(env)  # always 0: Cursor reads the answer on stdout
    if command == "hook" and args.hook == "post-commit":
        from .hooks_cmd import run_post_commit_hook

        return run_post_commit_hook()  # always 0: a note never fails a commit
    if command == "status":
        from .review_cmd import run_status_command

        return run_status_command(args, env)
    if command == "hook" and args.hook in ("claude-code", "codex"):
        from .hooks_cmd import run_claude_code_hook

        return run_claude_code_hook(args, env)  # 0 or 2 only: Claude Code's exit codes
    if command == "review" or command == "hook":
        from .. import git
        from .review_cmd import run_review_command

        stage = "review" if command == "review" else args.hook
        with git.run_scope():  # git's answers remembered for this one run
            return run_review_command(args, env, stage)
    if command == "scan":
        from .. import git
        from .scan_cmd import run_scan_command

        with git.run_scope():
            return run_scan_command(args, env)
    if command == "rules" and getattr(args, "rules_cmd", None) == "check":
        from .rules_cmd import rules_check

        return rules_check(args, env)
    if command == "config" and getattr(args, "config_cmd", None) in CONFIG_ACTIONS:
        from .config_cmd import run_config_command

        return run_config_command(args, env)
    if command == "llm":
        from .llm_cmd import run_llm_command

        return run_llm_command(args, env)
    if command == "dismiss":
        from .dismiss_cmd import run_dismiss_command

        return run_dismiss_command(args, env)
    if command in ("install", "uninstall"):
        from .hooks_cmd import run_hooks_command

        return run_hooks_command(args)
    if command == "cache":
        from .cache_cmd import run_cache_command

        return run_cache_command(args, env)
    if command in ("delegate", "tool"):
        from .. import git

        with git.run_scope():
            if command == "tool":
                from .tool_cmd import run_tool_command

                return run_tool_command(args, env)
            from .delegate_cmd import run_delegate_command

            return run_delegate_command(args, env)
    if command == "session":
        from .session_cmd import run_session_command

        return run_session_command(args)
    top_parser().print_help(sys.stderr)
    return Exit.USAGE


GC_FIRST_GENERATION = 50_000  # allocations between first-generation collections (default 700)


def _prepare_process() -> None:
    """Settings for a real process (console script), not an in-process call by a test."""
    # The cyclic collector: almost everything a run allocates lives to the end (modules,
    # classes, compiled patterns, the configuration) and our data holds few cycles, so the
    # collector's default first generation (700 allocations) mostly re-scans live objects
    # while modules load. A larger one keeps garbage bounded (tens of thousands of small
    # objects at most) and lets a run go without those passes (bench/bench_overhead.py:
    # 2-3 % of the instructions of every path). At exit, gc.freeze skips the final
    # collections over every object the imports created; exit handlers still run, and the
    # run's files and child processes are closed explicitly before this point, never left to
    # the collector.
    gc.set_threshold(GC_FIRST_GENERATION, *gc.get_threshold()[1:])
    atexit.register(gc.freeze)
    # pydantic looks up third-party plugins in every installed distribution's entry points
    # on first use (~20 ms); ocr-hook validates its own config and uses none.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    # SIGTERM (a CI job cancelled, `timeout`) ends a run like Ctrl-C: its `finally` blocks run
    # (the usage ledger, spec §13.7; locks and temporary files), exit 130
    signal.signal(signal.SIGTERM, _interrupt)


def _interrupt(_signum: int, _frame: object) -> None:
    # once: a second SIGTERM (a cancel, then `timeout`) must not cut the cleanup short
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Program entry. Returns the exit code (spec §9, a plain int from ``Exit``); never lets a
    traceback reach the user. ``argv`` None means a real process (the console scripts,
    ``python -m ocr_hook.cli``): arguments from ``sys.argv``, process settings applied."""
    return int(_main(argv, os.environ if environ is None else environ))


def _main(argv: Sequence[str] | None, env: Mapping[str, str]) -> int:
    if argv is None:
        _prepare_process()
    try:
        args = parse(sys.argv[1:] if argv is None else argv)
    except SystemExit as e:
        return int(e.code or 0)
    if args.command is None or (args.command == "hook" and not getattr(args, "hook", None)):
        top_parser().print_help(sys.stderr if args.command else sys.stdout)
        return Exit.OK if args.command is None else Exit.USAGE
    if args.command == "hook" and env.get("OCR_HOOK_SKIP", "").strip() in ("1", "true", "yes"):
        print("ocr-hook: skipped (OCR_HOOK_SKIP=1)", file=sys.stderr)
        return Exit.OK
    log = setup_logging(bool(getattr(args, "verbose", False)
                             or getattr(args, "verbose_all", False)))
    on_error_block = env.get("OCR_HOOK_GATE_ON_ERROR", "").strip().lower() == "block"
    try:
        code = _dispatch(args, env)
        from ..report import to_stdout  # here: `-h` and a skipped hook load no stage package

        problem = to_stdout(lambda: None)  # what a command printed is flushed here, not at exit
        if problem and problem != "closed":
            log.error("cannot write to stdout: %s", problem)
            return max(int(code), int(Exit.USAGE))
        return code
    except OcrError as e:
        log.error("%s", util.one_line(str(e)))
        if args.command == "hook":  # a bad committed setting must not trap every commit
            log.error("%s", _hook_error_hint(args.hook, env))
        return Exit.USAGE
    except KeyboardInterrupt:
        print("ocr-hook: interrupted", file=sys.stderr)
        return Exit.INTERRUPTED
    except BrokenPipeError:  # stdout closed early (e.g. `| head`): not an error of the review
        from ..report import stdout_to_devnull

        stdout_to_devnull()
        return Exit.OK
    except Exception as e:  # noqa: BLE001 - a bug means an incomplete review, not a traceback
        log.error("NOT REVIEWED: internal error %s: %s (%s)", type(e).__name__,
                  util.one_line(str(e)), _details_hint(args))
        log.debug("traceback", exc_info=True)
        return Exit.INCOMPLETE if on_error_block else Exit.OK
