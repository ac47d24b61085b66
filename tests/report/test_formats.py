"""The output-format registry (``report.formats``, spec §11) is the only list of formats: the
parser offers exactly its names, no other module lists them, every registered writer has the
one signature and renders a sample result as its format (JSON parses, SARIF validates against
the OASIS schema, HTML is a page), a lookup imports that writer's module alone, and a format
added as one module plus one entry is offered and written by ``git ocr review`` with no other
change.

Real: the package's writers and parser, ``cli.main`` on a real git repository (``--preview``, no
LLM), a new interpreter for the import check. Fake: the added format's module (put into
``sys.modules``, not written into the package).
"""

from __future__ import annotations

import argparse
import ast
import inspect
import io
import json
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, TextIO

import jsonschema
import pytest

from ocr_hook import cli
from ocr_hook.agent import Group
from ocr_hook.cli.parser import build_parser
from ocr_hook.comments import DismissedFinding
from ocr_hook.diff import FileDiff, Hunk, Line
from ocr_hook.findings import Finding
from ocr_hook.gate import GateOptions, decide
from ocr_hook.report import DEFAULT_FORMAT, OUTPUT_FORMATS, format_writer, verdict_line
from ocr_hook.report.result import FileOutcome, ReviewResult
from ocr_hook.vocabulary import Severity
from tests.support.cli import cli_environ, run_cli, run_python
from tests.support.gitrepo import GitRepo
from tests.support.paths import DATA, ROOT

PACKAGE = ROOT / "ocr_hook"
REGISTRY = PACKAGE / "report" / "formats.py"
SCHEMA_PATH = DATA / "sarif-schema-2.1.0.json"


def sample_result() -> ReviewResult:
    """A blocked review of two files: an anchored finding in the shown diff, an unanchored one,
    a dismissed one, a file left unreviewed, and a path with a control character."""
    diff = FileDiff(status="modified", old_path="app.py", new_path="app.py", hunks=(
        Hunk(1, 2, 1, 2, "@@ -1,2 +1,2 @@", (
            Line(" ", "import os", 1, 1), Line("-", "x = 1", 2, None),
            Line("+", "x = eval(input())", None, 2))),), insertions=1, deletions=1)
    findings = [
        Finding(id="a1", path="app.py", side="new", start_line=2, end_line=2,
                severity=Severity.CRITICAL, category="security",
                content="eval of user input <script>", existing_code="x = eval(input())",
                suggestion_code="x = int(input())", anchor="hunk_new"),
        Finding(id="b2", path="tab\there.py", side="new", start_line=0, end_line=0,
                severity=Severity.LOW, category="style", content="naming",
                existing_code="", suggestion_code="", anchor="none"),
    ]
    dismissed = Finding(id="c3", path="app.py", side="new", start_line=1, end_line=1,
                        severity=Severity.MEDIUM, category="bug", content="unused import",
                        existing_code="import os", suggestion_code="", anchor="hunk_new")
    files = [FileOutcome("app.py", "app.py", "modified", True, "", 1, 1, True),
             FileOutcome("tab\there.py", "tab\there.py", "added", False, "timeout", 3, 0, True)]
    gate = GateOptions()
    return ReviewResult(
        status="partial", decision=decide(findings, True, gate), gate=gate, findings=findings,
        files=files, groups=[Group("app.py", [diff])], warnings=[],
        input={"mode": "staged", "base": "HEAD", "head": "(index)", "snapshot_tree": "abc"},
        llm={"provider": "custom", "model": "m"}, session_id="s1",
        dismissed=[DismissedFinding(dismissed, "shared", "kept on purpose")],
        incomplete_reasons=["NOT REVIEWED: 1 of 2 files: the review's time limit was reached"],
    )


def render(name: str, result: ReviewResult) -> str:
    out = io.StringIO()
    format_writer(name)(result, out, {"NO_COLOR": "1"})
    return out.getvalue()


def check_text(out: str, result: ReviewResult) -> None:
    assert out.rstrip("\n").endswith(verdict_line(result))
    assert "BLOCKING app.py:2 [critical · security] id a1" in out
    assert "tab\\there.py" in out and "\t" not in out  # the path escaped for the terminal


def check_json(out: str, result: ReviewResult) -> None:
    data = json.loads(out)
    assert (data["schema_version"], data["status"], data["verdict"]) == ("1", "partial",
                                                                           "findings")
    assert [c["id"] for c in data["comments"]] == ["a1", "b2"]
    assert [d["id"] for d in data["dismissed"]] == ["c3"]


def check_sarif(out: str, result: ReviewResult) -> None:
    log = json.loads(out)
    validator = jsonschema.Draft4Validator(json.loads(SCHEMA_PATH.read_bytes()))
    assert list(validator.iter_errors(log)) == []
    [run] = log["runs"]
    assert [(r["ruleId"], "suppressions" in r) for r in run["results"]] == [
        ("security/critical", False), ("style", False), ("bug", True)]


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))


def check_html(out: str, result: ReviewResult) -> None:
    assert out.startswith("<!DOCTYPE html>") and out.rstrip().endswith("</html>")
    tags = _Tags()
    tags.feed(out)
    assert "script" not in {t for t, _ in tags.tags}  # model text escaped, never markup
    assert "eval of user input &lt;script&gt;" in out
    rows = [a for t, a in tags.tags if t == "tr" and "data-finding-id" in a]
    assert [(a["data-finding-id"], a["data-dismissed"]) for a in rows] == [
        ("c3", "yes"), ("a1", "no")]  # inline under lines 1 and 2 of the shown diff


def check_ndjson(out: str, result: ReviewResult) -> None:
    events = [json.loads(ln) for ln in out.splitlines()]
    assert [e["type"] for e in events] == ["start", "finding", "finding", "verdict"]
    assert [e["comment"]["id"] for e in events[1:3]] == ["a1", "b2"]
    assert (events[-1]["status"], events[-1]["verdict"]) == ("partial", "findings")


# The content check of each shipped format; a format added later is held to the generic
# checks of test_every_registered_writer_renders_the_sample_result until it has its own.
CONTENT_CHECKS: dict[str, Callable[[str, ReviewResult], None]] = {
    "text": check_text, "json": check_json, "sarif": check_sarif, "html": check_html,
    "ndjson": check_ndjson,
}


@pytest.mark.parametrize("name", list(OUTPUT_FORMATS))
def test_every_registered_writer_renders_the_sample_result(name: str) -> None:
    writer = format_writer(name)
    assert list(inspect.signature(writer).parameters) == ["result", "stream", "environ"]
    result = sample_result()
    out = render(name, result)
    assert out.strip() and out.endswith("\n")
    out.encode("utf-8")  # strict UTF-8: no lone surrogate in any format
    check = CONTENT_CHECKS.get(name)
    if check is not None:
        check(out, result)


def test_the_shipped_formats_and_the_default() -> None:
    assert list(OUTPUT_FORMATS)[:4] == ["text", "json", "sarif", "html"]  # the help's order
    assert DEFAULT_FORMAT in OUTPUT_FORMATS
    assert set(CONTENT_CHECKS) <= set(OUTPUT_FORMATS)
    with pytest.raises(KeyError):
        format_writer("no-such-format")


def _format_actions(parser: argparse.ArgumentParser, path: str = "git ocr"
                    ) -> Iterator[tuple[str, argparse.Action]]:
    """(command path, action) of every ``--format`` option in ``parser``'s tree."""
    for action in parser._actions:
        if "--format" in action.option_strings:
            yield path, action
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _format_actions(sub, f"{path} {name}")


def test_parser_offers_exactly_the_registered_formats() -> None:
    found = dict(_format_actions(build_parser()))
    assert sorted(found) == ["git ocr delegate",  # delegate submit writes the result
                             "git ocr hook claude-code", "git ocr hook codex", "git ocr hook pre-commit",
                             "git ocr hook pre-merge-commit", "git ocr hook pre-push",
                             "git ocr review", "git ocr scan"]
    for action in found.values():
        assert tuple(action.choices or ()) == tuple(OUTPUT_FORMATS)
        assert action.default is None  # review_cmd falls back to DEFAULT_FORMAT


def _listed_names(node: ast.AST) -> set[str]:
    """The format names among the string constants of a literal tuple, list, set or dict."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = node.elts
    elif isinstance(node, ast.Dict):
        items = [k for k in node.keys if k is not None]
    else:
        return set()
    return {i.value for i in items
            if isinstance(i, ast.Constant) and isinstance(i.value, str)} & set(OUTPUT_FORMATS)


def _format_lists(tree: ast.AST) -> Iterator[int]:
    """Lines of the literal collections in ``tree`` naming two formats or more, except the
    module tables of ``lazy_exports`` (``report/__init__.py`` names modules ``text``,
    ``html``)."""
    tables = {id(arg) for node in ast.walk(tree) if isinstance(node, ast.Call)
              and getattr(node.func, "id", "") == "lazy_exports" for arg in node.args}
    for node in ast.walk(tree):
        if id(node) not in tables and len(_listed_names(node)) >= 2:
            yield getattr(node, "lineno", 0)


def test_no_other_module_lists_the_formats() -> None:
    """A literal collection naming two formats or more, outside the registry, would be a
    second list to keep in step (the parser's choices once were one)."""
    lists = [f"{path.relative_to(ROOT)}:{line}"
             for path in sorted(PACKAGE.rglob("*.py")) if path != REGISTRY
             for line in _format_lists(ast.parse(path.read_text("utf-8")))]
    assert lists == []
    registry = ast.parse(REGISTRY.read_text("utf-8"))
    assert any(_listed_names(node) == set(OUTPUT_FORMATS) for node in ast.walk(registry))


LOOKUP = """\
import json, sys
from ocr_hook.report import format_writer
format_writer(sys.argv[1])
print(json.dumps(sorted(m for m in sys.modules if m.startswith("ocr_hook.report."))))
"""


@pytest.mark.parametrize(("name", "own"), [
    ("text", {"text"}), ("json", {"json_format"}), ("sarif", {"sarif"}),
    ("html", {"html", "json_format", "text"}),  # the page shows the JSON data and the verdict
])
def test_a_lookup_imports_that_writer_alone(name: str, own: set[str]) -> None:
    p = run_python(["-c", LOOKUP, name], timeout=60, check=True)
    loaded = {m.removeprefix("ocr_hook.report.") for m in json.loads(p.stdout)}
    assert loaded == {"formats", "display", "result"} | own


def write_lines(result: ReviewResult, stream: TextIO, environ: Mapping[str, str]) -> None:
    """The added format: one line per changed path, then the verdict."""
    for o in result.files:
        stream.write(f"{o.path}\t{'review' if o.will_review else 'skip'}\n")
    stream.write(f"{result.decision.verdict}\n")


@pytest.fixture
def lines_format(monkeypatch: pytest.MonkeyPatch) -> None:
    """A format "lines" added as the registry's docstring says: a module of ``ocr_hook.report``
    (here put into ``sys.modules``) and one entry."""
    module = types.ModuleType("ocr_hook.report.lines_format")
    module.write_lines = write_lines  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "ocr_hook.report.lines_format", module)
    monkeypatch.setitem(OUTPUT_FORMATS, "lines", "lines_format:write_lines")


def test_a_format_added_as_one_module_and_one_entry_is_offered_and_written(
    lines_format: None, repo: GitRepo, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    repo.stage({"app.py": "x = 1\n", "package-lock.json": "{}\n"})
    monkeypatch.chdir(repo.path)
    environ: dict[str, Any] = cli_environ()
    assert cli.main(["review", "-h"], environ=environ) == 0
    assert "{text,json,sarif,html,ndjson,lines}" in capsys.readouterr().out
    rc, out, err = run_cli(["review", "--preview", "--format", "lines"], {}, capsys)
    assert (rc, out) == (0, "app.py\treview\npackage-lock.json\tskip\npass\n"), err
    dest = tmp_path / "out.txt"
    rc = cli.main(["hook", "pre-commit", "--format", "lines", "--output", str(dest)],
                  environ={**environ, "OCR_HOOK_SKIP": "1"})
    assert rc == 0 and not dest.exists()  # parsed as a valid choice; the skip writes nothing
    rc = cli.main(["review", "--preview", "--format", "lines", "--output", str(dest)],
                  environ=environ)
    assert (rc, capsys.readouterr().out) == (0, "")
    assert dest.read_text("utf-8") == "app.py\treview\npackage-lock.json\tskip\npass\n"
