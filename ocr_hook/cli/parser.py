"""The argument parser of ``git ocr`` / ``ocr-hook``: every subcommand and flag (spec §1). Only
argparse is imported here (not even ``typing``), so ``git ocr -h`` stays fast (spec §15). The
choices of ``--format`` are the names of ``report.OUTPUT_FORMATS``, read when a review or hook
parser is built; reading them imports the registry alone, no renderer.

A run parses with the parser of its own command only (:func:`parse`): building all
29 parsers costs several milliseconds and ~90 gettext lookups on every commit. That narrow
parser never prints what would need the others (an error, or a help that lists commands): it
raises :class:`_Narrowed` instead, and the full parser (:func:`build_parser`) parses the same
arguments again, so help, errors, abbreviations and exit codes are exactly the full parser's.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from .. import __version__
from ..exitcodes import Exit

# Each command's line in the top-level help, in its order (the full and the top-only parser).
COMMAND_HELP = {
    "review": "review the staged snapshot (default), a commit or a range",
    "scan": "review whole tracked files (PATH… or --all) at HEAD, or as staged",
    "rules": "inspect review rules",
    "hook": "entry points for git hooks and the pre-commit framework",
    "install": "install native git hooks (chains an existing hook)",
    "uninstall": "remove the native hooks, restoring earlier ones",
    "cache": "inspect or empty the result cache",
    "session": "list, show, compare review sessions or serve them in a local viewer",
    "dismiss": "record that a finding is not a problem (it no longer blocks)",
    "config": "configuration commands",
    "llm": "check the LLM endpoint, list provider presets or show the recorded spend (usage)",
    "delegate": "print a review task for your own agent; `delegate submit FILE` records its"
                " findings",
    "tool": "the reviewer's read-only tools on the reviewed snapshot (for a delegated review)",
    "status": "list the branch's unpushed commits that have no review note",
}


def terminal_columns() -> int:
    """The width help text is wrapped to, as ``shutil.get_terminal_size().columns`` gives it
    (``$COLUMNS``, else the terminal of stdout, else 80), without importing ``shutil``: argparse
    builds a formatter for every argument it adds, and ``shutil`` (with its compression
    modules) costs ~3 ms of start-up."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        stdout = sys.__stdout__
        try:
            columns = os.get_terminal_size(stdout.fileno()).columns if stdout else 0
        except (AttributeError, ValueError, OSError):
            columns = 0
        columns = columns or 80
    return columns


class Formatter(argparse.HelpFormatter):
    """argparse's formatter, its default width from :func:`terminal_columns`."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         terminal_columns() - 2 if width is None else width)


class Parser(argparse.ArgumentParser):
    def _get_formatter(self) -> argparse.HelpFormatter:
        if self.formatter_class is argparse.HelpFormatter:  # the default: without shutil
            return Formatter(prog=self.prog)
        return super()._get_formatter()

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        from ..util import one_line  # an argument may hold control characters

        print(f"git ocr: error: {one_line(message)}", file=sys.stderr)
        raise SystemExit(Exit.USAGE)


class _Narrowed(Exception):
    """Raised by a narrow parser where the full one would print an error or a list of
    commands the narrow one lacks; :func:`parse` then parses again with the full parser."""


class _NarrowParser(Parser):
    """A parser of the narrow tree: errors go to the full parser; so does its help when
    ``narrowed`` (some of its subcommands were left out)."""

    narrowed = False

    def error(self, message: str) -> None:  # type: ignore[override]
        raise _Narrowed(message)

    def format_help(self) -> str:
        if self.narrowed:
            raise _Narrowed("help")
        return super().format_help()


class _CommandsNotBuilt(argparse._SubParsersAction):  # type: ignore[type-arg]
    """The commands of the top-only parser: listed (their help line) but not built, so any
    use of one goes to the full parser."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: object = None) -> None:
        raise _Narrowed("command")


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """``argv`` (without the program name) parsed as the full parser parses it. Raises
    SystemExit as argparse does: 0 after ``-h``/``--version``, ``Exit.USAGE`` (2) after a usage
    error, whose message is on stderr."""
    words = list(argv)
    path = command_path(words)
    try:  # no command named: the top-level parser alone (-h, --version, nothing at all)
        return (build_parser(path) if path else top_parser()).parse_args(words)
    except _Narrowed:
        return build_parser().parse_args(words)


def top_parser() -> argparse.ArgumentParser:
    """The top-level parser with every command listed but none built: its help is the full
    parser's; parsing a command, or an error, raises ``_Narrowed``."""
    return build_parser(("",))


def command_path(argv: Sequence[str]) -> tuple[str, ...]:
    """The command (and hook) a narrow parser can parse ``argv`` with: ``("review",)``,
    ``("hook", "pre-commit")``; ``()`` when only the full parser will do (no command, an
    unknown one, or any top-level option but ``-v``/``--verbose`` before it)."""
    words = iter(argv)
    for word in words:
        if word in ("-v", "--verbose"):
            continue
        if word not in COMMANDS:
            return ()
        if word == "hook":
            hook = next(words, "")
            return ("hook", hook) if hook in HOOKS else ("hook",)
        return (word,)
    return ()


def _add_review_flags(p: argparse.ArgumentParser, hook: bool = False) -> None:
    from ..report import DEFAULT_FORMAT, OUTPUT_FORMATS  # the registry's names: no renderer

    g = p.add_argument_group("review options")
    if not hook:
        g.add_argument("--commit", metavar="REF", help="review REF against its first parent")
        g.add_argument("--from", dest="from_ref", metavar="A", help="review merge-base(A,B)..B")
        g.add_argument("--to", dest="to_ref", metavar="B", help="end of the range (with --from)")
        g.add_argument("--preview", action="store_true",
                       help="show which files would be reviewed; no LLM call")
    g.add_argument("--format", choices=tuple(OUTPUT_FORMATS), default=None,
                   help=f"output format (default {DEFAULT_FORMAT});"
                   " html: a self-contained review page; ndjson: one JSON event per line"
                   " as the review runs")
    g.add_argument("--output", metavar="FILE", help="write the result to FILE instead of stdout")
    g.add_argument("--effort", choices=("low", "medium", "high"),
                   help="review rounds: low 1 (default), medium 2, high 3")
    g.add_argument("--concurrency", type=int, metavar="N", help="groups reviewed in parallel")
    g.add_argument("--timeout", type=float, metavar="S", help="whole-run time limit in seconds")
    g.add_argument("--max-tokens-budget", type=int, metavar="N",
                   help="input+output token budget for the run (0 = unlimited)")
    g.add_argument("--max-tools", type=int, metavar="N", help="tool rounds per group")
    g.add_argument("--tools", metavar="FILE",
                   help="tools.json-format file that drops tools or rewrites descriptions")
    g.add_argument("--no-cache", action="store_true", help="ignore and do not write the cache")
    g.add_argument("--filter", action="store_true",
                   help="run the LLM review filter that drops comments the diff proves wrong"
                        " (off by default)")
    g.add_argument("--no-filter", action="store_true",
                   help="skip the review filter even when review.filter is on")
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


def build_parser(path: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser of every command; with ``path`` (from :func:`command_path`) the narrow
    parser of that command alone (of that hook alone for ``("hook", NAME)``), which raises
    ``_Narrowed`` instead of printing an error or a help that lists commands; with ``("",)``
    the top-only parser (:func:`top_parser`)."""
    cls: type[Parser] = _NarrowParser if path else Parser
    p = cls(
        prog="git ocr",
        description="AI code review of the staged snapshot (or a commit, range or push) with "
        "findings pinned to exact lines and a severity gate.",
        epilog="Use `git ocr -h` (git turns --help into a man-page lookup).",
    )
    p.add_argument("--version", action="version", version=f"ocr-hook {__version__}")
    # before the command, for every command (its own -v would reset a shared dest to False)
    p.add_argument("-v", "--verbose", dest="verbose_all", action="store_true",
                   help="debug logging on stderr (any command: `git ocr -v COMMAND …`)")
    if path == ("",):  # top-only: the commands' help lines, no command built
        listed = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=cls,
                                  action=_CommandsNotBuilt)
        for name, line in COMMAND_HELP.items():
            listed.add_parser(name, help=line)
        return p
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=cls)
    if isinstance(p, _NarrowParser):
        p.narrowed = True  # the other commands are left out
        _COMMAND_ADDERS[path[0]](sub, path[1:])
    else:
        for add in _COMMAND_ADDERS.values():
            add(sub, ())
    return p


def _add_review(sub: argparse._SubParsersAction[Parser], _path: Sequence[str]) -> None:
    r = sub.add_parser("review", help=COMMAND_HELP["review"])
    _add_review_flags(r)


def _add_scan(sub: argparse._SubParsersAction[Parser], _path: Sequence[str]) -> None:
    """``scan [PATH…] [--all] [--staged]`` with the review flags but the target ones."""
    s = sub.add_parser("scan", help=COMMAND_HELP["scan"])
    s.add_argument("paths", nargs="*", metavar="PATH", help="tracked files (pathspecs)")
    s.add_argument("--all", action="store_true", help="every tracked file selection keeps")
    s.add_argument("--staged", action="store_true", help="the index's version, not HEAD's")
    s.add_argument("--preview", action="store_true", help="which files would be scanned; no LLM")
    _add_review_flags(s, hook=True)


def _add_rules(sub: argparse._SubParsersAction[Parser], _path: Sequence[str]) -> None:
    ru = sub.add_parser("rules", help=COMMAND_HELP["rules"])
    rus = ru.add_subparsers(dest="rules_cmd", metavar="ACTION", parser_class=type(ru))
    rc = rus.add_parser("check",
                        help="show which rule layer and pattern apply to PATH, and the text")
    rc.add_argument("path", metavar="PATH")
    rc.add_argument("--rule", metavar="FILE", help="rule file to include as the top layer")


def _add_hook(sub: argparse._SubParsersAction[Parser], path: Sequence[str]) -> None:
    """``hook pre-commit|pre-merge-commit|pre-push``; with ``path`` = (NAME,) that hook alone."""
    h = sub.add_parser("hook", help=COMMAND_HELP["hook"])
    hs = h.add_subparsers(dest="hook", metavar="HOOK", parser_class=type(h))
    if path and isinstance(h, _NarrowParser):
        h.narrowed = True  # the other hooks are left out
    for name, what in (("pre-commit", "review what is being committed"),
                       ("pre-merge-commit", "review what a merge brings into the current branch")):
        if path and path[0] != name:
            continue
        hpc = hs.add_parser(name, help=what)
        _add_review_flags(hpc, hook=True)
        hpc.add_argument(
            "files", nargs="*", metavar="FILE",
            help="only review these of the staged files (the pre-commit framework passes the"
            " file names; a name that is not staged is ignored, never \"review everything\")")
    if not path or path[0] == "claude-code":
        hcc = hs.add_parser(
            "claude-code", help="Claude Code PreToolUse hook: review what a `git commit` of the"
            " agent would commit (event JSON on stdin; exit 2 blocks)")
        _add_review_flags(hcc, hook=True)
    if not path or path[0] == "codex":
        hcx = hs.add_parser(
            "codex", help="Codex CLI PreToolUse hook: the Claude Code gate (same event and exit"
            " codes)")
        _add_review_flags(hcx, hook=True)
    if not path or path[0] == "post-commit":
        hs.add_parser("post-commit", help="write the review note of the commit just made")
    if not path or path[0] == "cursor":
        hs.add_parser("cursor", help="Cursor beforeShellExecution hook: the Claude Code gate for"
                      " Cursor's agent (event JSON on stdin; the answer JSON on stdout)")
    if path and path[0] != "pre-push":
        return
    hpp = hs.add_parser(
        "pre-push", help="review the commits being pushed (native hook: refs on stdin)",
        description="Native pre-push hook: `git ocr hook pre-push REMOTE URL` with git's ref "
        "lines on stdin. Without arguments (pre-commit framework, hook ocr-review-push) the "
        "range comes from PRE_COMMIT_FROM_REF/PRE_COMMIT_TO_REF.",
    )
    hpp.add_argument("remote", nargs="?", help="remote name (git passes it as argument 1)")
    hpp.add_argument("url", nargs="?", help="remote URL (git passes it as argument 2)")
    _add_review_flags(hpp, hook=True)


def _add_install(sub: argparse._SubParsersAction[Parser], _path: Sequence[str]) -> None:
    """``install`` of the native hooks."""
    ins = sub.add_parser("install", help=COMMAND_HELP["install"])
    ins.add_argument("--pre-commit", action="store_true", help="the pre-commit hook (default)")
    ins.add_argument("--pre-push", action="store_true", help="the pre-push hook")
    ins.add_argument("--pre-merge-commit", action="store_true",
                     help="the pre-merge-commit hook (reviews clean merges)")
    ins.add_argument("--force", action="store_true",
                     help="install even where a hook manager (lefthook, husky, the pre-commit"
                     " framework) is configured, and replace an existing hook instead of running"
                     " it first")
    ins.add_argument("--claude-code", action="store_true",
                     help="the Claude Code hook in .claude/settings.json (alone: no git hook)")
    ins.add_argument("--cursor", action="store_true",
                     help="the Cursor hook in .cursor/hooks.json (alone: no git hook)")
    ins.add_argument("--codex", action="store_true",
                     help="the Codex CLI hook in .codex/hooks.json (alone: no git hook)")


def _add_uninstall(sub: argparse._SubParsersAction[Parser], _path: Sequence[str]) -> None:
    """``uninstall`` of the native hooks."""
    uns = sub.add_parser("uninstall", help=COMMAND_HELP["uninstall"])
    uns.add_argument("--pre-commit", action="store_true", help="only the pre-commit hook")
    uns.add_argument("--pre-push", action="store_true", help="only the pre-push hook")
    uns.add_argument("--pre-merge-commit", action="store_true",
                     help="only the pre-merge-commit hook")
    uns.add_argument("--claude-code", action="store_true",
                     help="only the Claude Code hook in .claude/settings.json")
    uns.add_argument("--cursor", action="store_true",
                     help="only the Cursor hook in .cursor/hooks.json")
    uns.add_argument("--codex", action="store_true",
                     help="only the Codex CLI hook in .codex/hooks.json")


def _add_cache(sub: argparse._SubParsersAction[Parser], _path: Sequence[str]) -> None:
    """``cache stats|clear|prune``."""
    ca = sub.add_parser("cache", help=COMMAND_HELP["cache"])
    cas = ca.add_subparsers(dest="cache_cmd", metavar="ACTION", parser_class=type(ca))
    cas.add_parser("stats", help="entries, size and location of the cache")
    cas.add_parser("clear", help="delete every cache entry")
    cap = cas.add_parser("prune", help="shrink the cache to cache.max_mb (oldest first)")
    cap.add_argument("--max-mb", type=int, metavar="N", help="prune to N MiB instead")


def _add_session(sub: argparse._SubParsersAction[Parser], _path: Sequence[str]) -> None:
    """``session list|show|serve|compare``."""
    se = sub.add_parser("session", help=COMMAND_HELP["session"])
    ses = se.add_subparsers(dest="session_cmd", metavar="ACTION", parser_class=type(se))
    sl = ses.add_parser("list", help="the recorded sessions, newest first")
    sl.add_argument("--json", action="store_true", help="one JSON object per session")
    ss = ses.add_parser("show", help="the records of one session")
    ss.add_argument("id", metavar="ID", help="session id (a unique prefix is enough)")
    ss.add_argument("--json", action="store_true", help="raw JSON lines")
    ss.add_argument("--html", action="store_true",
                    help="the session's review page (self-contained HTML) instead")
    ss.add_argument("--output", metavar="FILE", help="with --html: write the page to FILE")
    from .session_cmd import add_compare_parser, add_serve_parser  # built only for `session`
    add_serve_parser(ses)
    add_compare_parser(ses)  # spec §12.2


def _add_dismiss(sub: argparse._SubParsersAction[Parser], _path: Sequence[str]) -> None:
    """``dismiss ID [--reason TEXT] [--shared] | --list | --undo ID``."""
    d = sub.add_parser(
        "dismiss", help=COMMAND_HELP["dismiss"],
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


def _add_config(sub: argparse._SubParsersAction[Parser], _path: Sequence[str]) -> None:
    """``config allow-mcp|allow-endpoint|list|get|set|unset|path``. Settings are layered:
    flags > environment > ``.ocr-hook.toml`` at HEAD > user file > defaults; set/unset change
    the user file."""
    co = sub.add_parser("config", help=COMMAND_HELP["config"])
    cs = co.add_subparsers(dest="config_cmd", metavar="ACTION", parser_class=type(co))
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


def _add_llm(sub: argparse._SubParsersAction[Parser], _path: Sequence[str]) -> None:
    """``llm test|providers|usage``."""
    lp = sub.add_parser("llm", help=COMMAND_HELP["llm"])
    ls = lp.add_subparsers(dest="llm_cmd", metavar="ACTION", parser_class=type(lp))
    lt = ls.add_parser("test", help="send one review-shaped request (tools included); exit 0"
                       " tools work, 1 the model does not call tools, 2 no endpoint, 3 failed")
    lt.add_argument("--provider", metavar="NAME", help="provider preset")
    lt.add_argument("--model", metavar="NAME", help="model")
    lt.add_argument("--json", action="store_true", help="one JSON object on stdout")
    lt.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")
    lpr = ls.add_parser("providers", help="the built-in provider presets")
    lpr.add_argument("--json", action="store_true", help="the presets as JSON")
    lu = ls.add_parser("usage", help="recorded model spend per UTC day and model, and the"
                       " budget caps (budget.daily_usd, budget.monthly_usd)")
    lu.add_argument("--json", action="store_true", help="the spend as JSON")


def _add_delegate(sub: argparse._SubParsersAction[Parser], _path: Sequence[str]) -> None:
    """``delegate [submit FILE|-]`` with the review flags (README "Delegation (no API
    key)")."""
    d = sub.add_parser("delegate", help=COMMAND_HELP["delegate"])
    d.add_argument("action", nargs="?", choices=("submit",),
                   help="submit: anchor, gate and store the findings of FILE")
    d.add_argument("file", nargs="?", metavar="FILE", help="the findings (JSON list); - stdin")
    _add_review_flags(d)


def _add_tool(sub: argparse._SubParsersAction[Parser], _path: Sequence[str]) -> None:
    """``tool NAME ARG…``: one confined tool call on the snapshot (``--commit``/``--from``)."""
    t = sub.add_parser("tool", help=COMMAND_HELP["tool"])
    t.add_argument("name", metavar="NAME", help="file_read, code_search or file_find")
    t.add_argument("args", nargs="*", metavar="ARG",
                   help="file_read PATH [START END]; code_search TEXT [PATHSPEC…]; file_find NAME")
    t.add_argument("--commit", metavar="REF", help="the snapshot of commit REF")
    t.add_argument("--from", dest="from_ref", metavar="A", help="the range's snapshot (with --to)")
    t.add_argument("--to", dest="to_ref", metavar="B", help="end of the range (with --from)")


def _add_status(sub: argparse._SubParsersAction[Parser], _path: Sequence[str]) -> None:
    from .review_cmd import add_status_parser  # spec §3.4.1: its flags live with the command

    add_status_parser(sub, COMMAND_HELP["status"])


# Every command in the order of the full parser's help; each adder takes the rest of the path.
_COMMAND_ADDERS: dict[str, Callable[[argparse._SubParsersAction[Parser], Sequence[str]], None]] = {
    "review": _add_review,
    "scan": _add_scan,
    "rules": _add_rules,
    "hook": _add_hook,
    "install": _add_install,
    "uninstall": _add_uninstall,
    "cache": _add_cache,
    "session": _add_session,
    "dismiss": _add_dismiss,
    "config": _add_config,
    "llm": _add_llm,
    "delegate": _add_delegate,
    "tool": _add_tool,
    "status": _add_status,
}
COMMANDS = tuple(_COMMAND_ADDERS)
HOOKS = ("pre-commit", "pre-merge-commit", "pre-push", "claude-code", "codex", "cursor",
         "post-commit")
