"""The argument parser of ``git ocr`` / ``ocr-hook``: every subcommand and flag (SPEC §1). Only
argparse is imported here, so ``git ocr -h`` stays fast (SPEC §15)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..exitcodes import Exit


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"git ocr: error: {message}", file=sys.stderr)
        raise SystemExit(Exit.USAGE)


def _add_review_flags(p: argparse.ArgumentParser, hook: bool = False) -> None:
    g = p.add_argument_group("review options")
    if not hook:
        g.add_argument("--commit", metavar="REF", help="review REF against its first parent")
        g.add_argument("--from", dest="from_ref", metavar="A", help="review merge-base(A,B)..B")
        g.add_argument("--to", dest="to_ref", metavar="B", help="end of the range (with --from)")
        g.add_argument("--preview", action="store_true",
                       help="show which files would be reviewed; no LLM call")
    g.add_argument("--format", choices=("text", "json", "sarif", "html"), default=None,
                   help="output format (default text); html: a self-contained review page")
    g.add_argument("--output", metavar="FILE", help="write the result to FILE instead of stdout")
    g.add_argument("--effort", choices=("low", "medium", "high"),
                   help="review rounds: low 1, medium 2, high 3")
    g.add_argument("--concurrency", type=int, metavar="N", help="groups reviewed in parallel")
    g.add_argument("--timeout", type=float, metavar="S", help="whole-run time limit in seconds")
    g.add_argument("--max-tokens-budget", type=int, metavar="N",
                   help="input+output token budget for the run (0 = unlimited)")
    g.add_argument("--max-tools", type=int, metavar="N", help="tool rounds per group")
    g.add_argument("--tools", metavar="FILE",
                   help="tools.json-format file that drops tools or rewrites descriptions")
    g.add_argument("--no-cache", action="store_true", help="ignore and do not write the cache")
    g.add_argument("--no-filter", action="store_true",
                   help="skip the LLM review filter that drops comments the diff proves wrong")
    g.add_argument("--exclude", action="append", metavar="GLOBS",
                   help="gitignore-style globs to exclude (comma-separated, repeatable)")
    g.add_argument("--rule", metavar="FILE",
                   help="rule file (rule.json format, or a Markdown checklist for every file)")
    g.add_argument("--background", metavar="TEXT", help="requirement background for the reviewer")
    g.add_argument("--background-file", metavar="FILE", help="read the background from FILE")
    g.add_argument("--provider", metavar="NAME", help="LLM provider preset")
    g.add_argument("--model", metavar="NAME", help="LLM model")
    g.add_argument("--mode", choices=("blocking", "advisory"), help="gate mode")
    g.add_argument("--fail-on", choices=("critical", "high", "medium", "low"),
                   help="lowest severity that blocks")
    g.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="git ocr",
        description="AI code review of the staged snapshot (or a commit, range or push) with "
        "findings pinned to exact lines and a severity gate.",
        epilog="Use `git ocr -h` (git turns --help into a man-page lookup).",
    )
    from .. import __version__

    p.add_argument("--version", action="version", version=f"ocr-hook {__version__}")
    # before the command, for every command (its own -v would reset a shared dest to False)
    p.add_argument("-v", "--verbose", dest="verbose_all", action="store_true",
                   help="debug logging on stderr (any command: `git ocr -v COMMAND …`)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    r = sub.add_parser("review", help="review the staged snapshot (default), a commit or a range")
    _add_review_flags(r)
    ru = sub.add_parser("rules", help="inspect review rules")
    rus = ru.add_subparsers(dest="rules_cmd", metavar="ACTION", parser_class=Parser)
    rc = rus.add_parser("check",
                        help="show which rule layer and pattern apply to PATH, and the text")
    rc.add_argument("path", metavar="PATH")
    rc.add_argument("--rule", metavar="FILE", help="rule file to include as the top layer")
    h = sub.add_parser("hook", help="entry points for git hooks and the pre-commit framework")
    hs = h.add_subparsers(dest="hook", metavar="HOOK", parser_class=Parser)
    for name, what in (("pre-commit", "review what is being committed"),
                       ("pre-merge-commit", "review what a merge brings into the current branch")):
        hpc = hs.add_parser(name, help=what)
        _add_review_flags(hpc, hook=True)
        hpc.add_argument(
            "files", nargs="*", metavar="FILE",
            help="only review these of the staged files (the pre-commit framework passes the"
            " file names; a name that is not staged is ignored, never \"review everything\")")
    hpp = hs.add_parser(
        "pre-push", help="review the commits being pushed (native hook: refs on stdin)",
        description="Native pre-push hook: `git ocr hook pre-push REMOTE URL` with git's ref "
        "lines on stdin. Without arguments (pre-commit framework, hook ocr-review-push) the "
        "range comes from PRE_COMMIT_FROM_REF/PRE_COMMIT_TO_REF.",
    )
    hpp.add_argument("remote", nargs="?", help="remote name (git passes it as argument 1)")
    hpp.add_argument("url", nargs="?", help="remote URL (git passes it as argument 2)")
    _add_review_flags(hpp, hook=True)
    _add_maintenance_commands(sub)
    _add_dismiss_command(sub)
    _add_config_commands(sub)
    _add_llm_commands(sub)
    return p


def _add_maintenance_commands(sub: Any) -> None:
    """``install``/``uninstall`` (native hooks), ``cache`` and ``session`` subcommands."""
    ins = sub.add_parser("install", help="install native git hooks (chains an existing hook)")
    ins.add_argument("--pre-commit", action="store_true", help="the pre-commit hook (default)")
    ins.add_argument("--pre-push", action="store_true", help="the pre-push hook")
    ins.add_argument("--pre-merge-commit", action="store_true",
                     help="the pre-merge-commit hook (reviews clean merges)")
    ins.add_argument("--force", action="store_true",
                     help="replace an existing hook instead of running it first")
    uns = sub.add_parser("uninstall", help="remove the native hooks, restoring earlier ones")
    uns.add_argument("--pre-commit", action="store_true", help="only the pre-commit hook")
    uns.add_argument("--pre-push", action="store_true", help="only the pre-push hook")
    uns.add_argument("--pre-merge-commit", action="store_true",
                     help="only the pre-merge-commit hook")
    ca = sub.add_parser("cache", help="inspect or empty the result cache")
    cas = ca.add_subparsers(dest="cache_cmd", metavar="ACTION", parser_class=Parser)
    cas.add_parser("stats", help="entries, size and location of the cache")
    cas.add_parser("clear", help="delete every cache entry")
    cap = cas.add_parser("prune", help="shrink the cache to cache.max_mb (oldest first)")
    cap.add_argument("--max-mb", type=int, metavar="N", help="prune to N MiB instead")
    se = sub.add_parser("session", help="list or show review sessions")
    ses = se.add_subparsers(dest="session_cmd", metavar="ACTION", parser_class=Parser)
    sl = ses.add_parser("list", help="the recorded sessions, newest first")
    sl.add_argument("--json", action="store_true", help="one JSON object per session")
    ss = ses.add_parser("show", help="the records of one session")
    ss.add_argument("id", metavar="ID", help="session id (a unique prefix is enough)")
    ss.add_argument("--json", action="store_true", help="raw JSON lines")
    ss.add_argument("--html", action="store_true",
                    help="the session's review page (self-contained HTML) instead")
    ss.add_argument("--output", metavar="FILE", help="with --html: write the page to FILE")


def _add_dismiss_command(sub: Any) -> None:
    """``dismiss ID [--reason TEXT] [--shared] | --list | --undo ID`` (issue 19)."""
    d = sub.add_parser(
        "dismiss", help="record that a finding is not a problem (it no longer blocks)",
        description="Dismiss a finding by the id shown with it: it no longer counts for the"
        " gate and is listed as dismissed. The dismissal is keyed on the path, the code the"
        " finding is anchored to and its category, so it survives moved lines, amend, rebase"
        " and reworded findings. Personal by default (kept under the git directory);"
        " --shared writes .ocr-hook-dismissed.json for the team to commit (read from HEAD).")
    d.add_argument("id", nargs="?", metavar="ID", help="the finding's id (a unique prefix)")
    d.add_argument("--reason", metavar="TEXT", help="why it is not a problem")
    d.add_argument("--shared", action="store_true",
                   help="write the committed file .ocr-hook-dismissed.json instead")
    d.add_argument("--list", action="store_true", help="list personal and shared dismissals")
    d.add_argument("--undo", metavar="ID", help="remove a dismissal (its id or the finding's)")
    d.add_argument("--json", action="store_true", help="--list as JSON lines")


def _add_config_commands(sub: Any) -> None:
    """``config allow-mcp|allow-endpoint|list|get|set|unset|path``. Settings are layered:
    flags > environment > ``.ocr-hook.toml`` at HEAD > user file > defaults; set/unset change
    the user file."""
    co = sub.add_parser("config", help="configuration commands")
    cs = co.add_subparsers(dest="config_cmd", metavar="ACTION", parser_class=Parser)
    cs.add_parser("allow-mcp", help="allow the MCP servers of .ocr-hook.toml (at HEAD) to run")
    cs.add_parser("allow-endpoint",
                  help="trust the endpoint settings (llm.provider/protocol/base_url/extra_*) of"
                       " .ocr-hook.toml (at HEAD)")
    cl = cs.add_parser("list", help="every key with its effective value")
    cl.add_argument("--show-origin", action="store_true", help="also show where it comes from")
    cg = cs.add_parser("get", help="the effective value of KEY (exit 1 when unset)")
    cg.add_argument("key", metavar="KEY", help="section.name, e.g. llm.model")
    cg.add_argument("--show-secret", action="store_true",
                    help="print llm.api_key in full (it is masked by default)")
    cset = cs.add_parser("set", help="set KEY in the user file (VALUE - reads stdin)")
    cset.add_argument("key", metavar="KEY")
    cset.add_argument("value", metavar="VALUE")
    cu = cs.add_parser("unset", help="remove KEY from the user file")
    cu.add_argument("key", metavar="KEY")
    cs.add_parser("path", help="the user file's path")


def _add_llm_commands(sub: Any) -> None:
    """``llm test|providers``."""
    lp = sub.add_parser("llm", help="check the LLM endpoint or list provider presets")
    ls = lp.add_subparsers(dest="llm_cmd", metavar="ACTION", parser_class=Parser)
    lt = ls.add_parser("test", help="send one review-shaped request (tools included); exit 0"
                       " tools work, 1 the model does not call tools, 2 no endpoint, 3 failed")
    lt.add_argument("--provider", metavar="NAME", help="provider preset")
    lt.add_argument("--model", metavar="NAME", help="model")
    lt.add_argument("--json", action="store_true", help="one JSON object on stdout")
    lt.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")
    lpr = ls.add_parser("providers", help="the built-in provider presets")
    lpr.add_argument("--json", action="store_true", help="the presets as JSON")
