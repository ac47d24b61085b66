"""The command line is parsed with the parser of the command being run only, and
says exactly what the full parser said: help texts, errors, abbreviations, exit codes.

``tests/data/cli/parser_golden.json`` holds what the parser printed and returned before it was
narrowed (captured from commit 3aec383 with ``COLUMNS=80``): for each argument list the exit
code, stdout and stderr, or the parsed namespace. After a deliberate change of the command line,
regenerate it from the full parser with ``OCR_HOOK_REGEN_GOLDENS=1 .venv/bin/python -m pytest
tests/cli/test_parser.py`` and review the diff.

Real: argparse, ``cli.main``. Nothing is faked; parsers built are counted by wrapping
``argparse.ArgumentParser.__init__``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
from typing import Any

import pytest

from ocr_hook.cli import parser
from ocr_hook.cli.parser import build_parser, command_path, parse
from tests.support.cli import run_cli
from tests.support.paths import DATA

GOLDEN = DATA / "cli" / "parser_golden.json"
REGEN = os.environ.get("OCR_HOOK_REGEN_GOLDENS") == "1"
CASES: list[dict[str, Any]] = json.loads(GOLDEN.read_text(encoding="utf-8"))


def run_parse(parse_fn: Any, argv: list[str]) -> dict[str, Any]:
    """What parsing ``argv`` printed and returned, in the golden file's shape."""
    out, err = io.StringIO(), io.StringIO()
    ns: dict[str, Any] | None = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            ns = vars(parse_fn(argv))
            rc = None
        except SystemExit as e:
            rc = int(e.code or 0)
    item: dict[str, Any] = {"argv": argv, "rc": rc, "stdout": out.getvalue(),
                            "stderr": err.getvalue()}
    if ns is not None:
        item["namespace"] = ns
    return item


@pytest.fixture(autouse=True)
def _columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")  # argparse wraps help to the terminal width


def test_golden_file_is_current() -> None:
    """The full parser still says what the golden file holds (regenerated on request)."""
    full = [run_parse(lambda a: build_parser().parse_args(a), c["argv"]) for c in CASES]
    if REGEN:
        GOLDEN.write_text(json.dumps(full, indent=1, ensure_ascii=False) + "\n",
                          encoding="utf-8")
    assert full == CASES


@pytest.mark.parametrize("case", CASES, ids=lambda c: " ".join(c["argv"]) or "(none)")
def test_narrow_parse_says_what_the_full_parser_said(case: dict[str, Any]) -> None:
    assert run_parse(parse, case["argv"]) == case


def test_examples_from_the_golden_file() -> None:
    """A few of the pinned texts spelled out, so the golden file is known to hold them."""
    by_argv = {" ".join(c["argv"]): c for c in CASES}
    typo = by_argv["revew"]
    assert typo["rc"] == 2 and typo["stdout"] == ""
    assert typo["stderr"] == (
        "usage: git ocr [-h] [--version] [-v] COMMAND ...\n"
        "git ocr: error: argument COMMAND: invalid choice: 'revew' (choose from 'review', 'scan',"
        " 'rules', 'hook', 'install', 'uninstall', 'cache', 'session', 'dismiss', 'config',"
        " 'llm', 'delegate', 'tool', 'status')\n")
    review_help = by_argv["review -h"]
    assert review_help["rc"] == 0 and review_help["stderr"] == ""
    assert review_help["stdout"].startswith("usage: git ocr review [-h] [--commit REF]")
    assert "  --preview             show which files would be reviewed; no LLM call\n" in (
        review_help["stdout"])
    assert by_argv["-v review --prev --no-c"]["namespace"]["preview"] is True
    assert by_argv["--ver"]["stderr"].endswith(
        "git ocr: error: ambiguous option: --ver could match --version, --verbose\n")


@pytest.mark.parametrize(("argv", "path"), [
    (["review", "--preview"], ("review",)),
    (["-v", "--verbose", "config", "get", "x"], ("config",)),
    (["hook", "pre-commit", "a.py"], ("hook", "pre-commit")),
    (["hook", "pre-push", "origin", "url"], ("hook", "pre-push")),
    (["hook", "-h"], ("hook",)),
    (["hook"], ("hook",)),
    ([], ()),
    (["-h", "review"], ()),
    (["--verb", "review"], ()),  # an abbreviation: the full parser decides
    (["revew"], ()),
    (["--", "review"], ()),
])
def test_command_path(argv: list[str], path: tuple[str, ...]) -> None:
    assert command_path(argv) == path


def count_parsers(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the ``prog`` of every ArgumentParser built from now on."""
    built: list[str] = []
    init = argparse.ArgumentParser.__init__

    def counting(self: argparse.ArgumentParser, *a: Any, **kw: Any) -> None:
        init(self, *a, **kw)
        built.append(self.prog)

    monkeypatch.setattr(argparse.ArgumentParser, "__init__", counting)
    return built


def test_a_run_builds_only_its_own_parsers(monkeypatch: pytest.MonkeyPatch) -> None:
    built = count_parsers(monkeypatch)
    ns = parse(["review", "--preview", "--format", "json"])
    assert (ns.command, ns.preview, ns.format) == ("review", True, "json")
    assert built == ["git ocr", "git ocr review"]
    built.clear()
    ns = parse(["hook", "pre-commit", "a.py"])
    assert (ns.command, ns.hook, ns.files) == ("hook", "pre-commit", ["a.py"])
    assert built == ["git ocr", "git ocr hook", "git ocr hook pre-commit"]
    built.clear()
    full = len(build_parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    assert full == len(parser.COMMANDS) == 14
    n_full = len(built)
    assert n_full == 40  # every command, action and hook
    built.clear()
    with contextlib.redirect_stdout(io.StringIO()) as out, pytest.raises(SystemExit):
        parse(["-h"])  # the top-level help: every command listed, none built
    assert out.getvalue() == next(c for c in CASES if c["argv"] == ["-h"])["stdout"]
    assert built == ["git ocr"] + [f"git ocr {name}" for name in parser.COMMANDS]
    built.clear()
    with contextlib.redirect_stderr(io.StringIO()), pytest.raises(SystemExit):
        parse(["revew"])  # no known command: the top-level parser, then the full one
    assert len(built) == 1 + len(parser.COMMANDS) + n_full
    built.clear()
    with contextlib.redirect_stderr(io.StringIO()), pytest.raises(SystemExit):
        parse(["--verb", "review", "--bogus"])  # a command behind an abbreviation: full
    assert len(built) == 1 + len(parser.COMMANDS) + n_full
    built.clear()
    with contextlib.redirect_stderr(io.StringIO()), pytest.raises(SystemExit):
        parse(["review", "--bogus"])  # an error: said by the full parser, after the narrow one
    assert built[:2] == ["git ocr", "git ocr review"] and len(built) == 2 + n_full


@pytest.mark.parametrize("argv", [["hook"], ["config"], ["rules"]])
def test_command_without_its_action_prints_the_full_help(
    argv: list[str], capsys: pytest.CaptureFixture[str],
) -> None:
    """``git ocr hook`` (no hook) and ``git ocr config`` (no action) print the top-level help
    on stderr with exit 2, listing every command although only one was parsed."""
    rc, out, err = run_cli(argv, {}, capsys, inherit=False)
    top_help = next(c for c in CASES if c["argv"] == ["-h"])["stdout"]
    assert (rc, out, err) == (2, "", top_help)


def test_no_command_prints_the_full_help_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run_cli([], {}, capsys, inherit=False)
    top_help = next(c for c in CASES if c["argv"] == ["-h"])["stdout"]
    assert (rc, out, err) == (0, top_help, "")
