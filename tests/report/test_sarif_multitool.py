"""The SARIF output under Microsoft's SARIF multitool (``@microsoft/sarif-multitool`` 5.7.0 on
npm): ``validate`` applies the spec's rules (SARIF1xxx) and the guidance rules (SARIF2xxx,
among them what GitHub code scanning needs) and must find nothing, not one warning, in the log
of a real review and in a log with every kind of finding (new side with a fix, old side,
location unknown, path outside the repository, an unknown category from a cache entry,
dismissed, security at each severity).

The npm package brings one self-contained binary per platform (no .NET install). It is
installed once into a cache prefix (``$XDG_CACHE_HOME/ocr-hook/sarif-multitool-5.7.0``, read
before the tests isolate HOME) with ``npm install`` from the registry npm is configured with,
and run there with ``npx --no-install``. The test skips only when npm is not installed.

Real: git, the review, HTTP to the scripted model, the multitool. Fake: the model's replies.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ocr_hook.comments import DismissedFinding
from ocr_hook.findings import Finding, RunWarning
from ocr_hook.report import sarif
from ocr_hook.report.result import FileOutcome
from ocr_hook.vocabulary import Severity
from tests.report.test_output import _result, comment
from tests.support.cli import run_cli
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

MULTITOOL = "@microsoft/sarif-multitool@5.7.0"
# the user's environment and cache, read at import: the fixtures give each test its own HOME
NPM_ENV = dict(os.environ)
PREFIX = Path(NPM_ENV.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ocr-hook" / \
    "sarif-multitool-5.7.0"
NO_NPM = [name for name in ("npm", "npx") if shutil.which(name) is None]

OLD = "import os\n\n\ndef remove(path):\n    os.system('rm -rf ' + path)\n    return True\n"
NEW = ("import os\n\n\ndef remove(path):\n    os.remove(path)\n    return open(path).read()\n"
       "\n\ndef size(path):\n    return os.stat(path).st_size  # ocr-hook: ignore checked by the"
       " caller\n")


def install_multitool() -> Path:
    """The prefix with the multitool installed (``npm install`` the first time). Raises
    RuntimeError with npm's output when the install fails."""
    if not (PREFIX / "node_modules" / ".bin" / "sarif-multitool").exists():
        PREFIX.mkdir(parents=True, exist_ok=True)
        p = subprocess.run(["npm", "install", "--prefix", str(PREFIX), "--no-save", "--no-audit",
                            "--no-fund", MULTITOOL],
                           capture_output=True, text=True, env=NPM_ENV, timeout=600, check=False)
        if p.returncode != 0:
            raise RuntimeError(f"npm install {MULTITOOL} failed ({p.returncode}):"
                               f" {(p.stdout + p.stderr)[-800:]}")
    # its postinstall only marks the platform binary executable; npm may leave scripts unrun
    for exe in (PREFIX / "node_modules" / "@microsoft").glob("sarif-multitool-*/Sarif.Multitool"):
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return PREFIX


def multitool_validate(logs: list[Path], out: Path) -> list[dict[str, Any]]:
    """``sarif-multitool validate LOGS --output OUT``: what it found (the results of the log it
    writes, each with ``ruleId`` and ``message``). Raises RuntimeError when it fails."""
    prefix = install_multitool()
    p = subprocess.run(["npx", "--no-install", "--prefix", str(prefix), "sarif-multitool",
                        "validate", *map(str, logs), "--output", str(out)],
                       capture_output=True, text=True, env=NPM_ENV, timeout=300, check=False)
    if p.returncode != 0 or not out.exists():
        raise RuntimeError(f"sarif-multitool validate failed ({p.returncode}):"
                           f" {(p.stdout + p.stderr)[-800:]}")
    log = json.loads(out.read_text(encoding="utf-8-sig"))
    return [r for run in log["runs"] for r in run.get("results", [])]


def _f(path: str, side: str, start: int, severity: Severity, category: str, anchor: str,
       code: str = "x = 1") -> Finding:
    return Finding(id=f"{path}-{side}-{start}", path=path, side=side, start_line=start,
                   end_line=start, severity=severity, category=category,
                   content=f"problem in {path}", existing_code="x = 1", suggestion_code="x = 2\n",
                   anchor=anchor, code=code if start else "")


def every_kind_log() -> dict[str, Any]:
    """A SARIF log with every kind of finding, dismissal and notification."""
    findings = [
        _f("src/a b.py", "new", 3, Severity.CRITICAL, "security", "hunk_new"),  # a fix
        _f("src/a b.py", "new", 9, Severity.HIGH, "security", "loose", code="y = x = 1"),
        _f("src/a b.py", "new", 0, Severity.MEDIUM, "performance", "none"),  # location unknown
        _f("lib/ü.py", "old", 7, Severity.LOW, "security", "hunk_old"),
        _f("x.py", "new", 1, Severity.MEDIUM, "security", "file"),
        _f("../out.py", "new", 1, Severity.LOW, "bug", "hunk_new"),  # outside: no location
        _f("y.py", "new", 2, Severity.LOW, "legacy", "relocated"),  # unknown category
    ]
    files = [FileOutcome("big.py", "big.py", "added", False, "timeout", 9, 0, True),
             FileOutcome("k.env", "k.env", "added", True, "", 1, 0, True, detail="cut",
                         scan_gap=True)]
    result = _result(findings, files, status="partial", incomplete=True)
    result.dismissed = [
        DismissedFinding(_f("d.py", "new", 2, Severity.HIGH, "bug", "hunk_new"), "inline", ""),
        DismissedFinding(_f("e.py", "new", 4, Severity.LOW, "style", "hunk_new"), "shared",
                         "house style"),
    ]
    result.warnings = [RunWarning("comment_refiled", "x.py", "moved"), RunWarning("", "", "w")]
    return sarif.to_sarif(result)


@pytest.mark.skipif(bool(NO_NPM), reason=f"{' and '.join(NO_NPM)} not found: the SARIF"
                    " multitool is an npm package (@microsoft/sarif-multitool)")
def test_the_sarif_multitool_finds_nothing_in_a_review_with_every_finding_kind(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    repo.commit({"tool.py": OLD}, "init")
    repo.stage({"tool.py": NEW})
    fix = comment("    return open(path).read()", "Reads the file right after deleting it.",
                  "critical", "bug")
    fix["suggestion_code"] = "    return None\n"
    llm.tool_calls(("code_comment", {"comments": [
        fix,
        comment("    os.system('rm -rf ' + path)", "The removed line was a shell injection.",
                "high", "security"),
        comment("    shutil.rmtree(path)", "Somewhere a tree is removed.", "medium", "performance"),
        comment("    return os.stat(path).st_size", "Raises for a missing file.", "low", "bug"),
    ]}), ("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review", "--format", "sarif", "--effort", "low"], llm.env(), capsys,
                           review_filter=False)
    assert rc == 1, err
    review = json.loads(out)
    [run] = review["runs"]
    by_rule = {r["ruleId"]: r for r in run["results"]}
    assert sorted(by_rule) == ["bug", "performance", "security/high"]
    assert [r["suppressions"][0]["kind"] for r in run["results"] if "suppressions" in r] == \
        ["inSource"]
    [fixed] = [r for r in run["results"] if "fixes" in r]
    assert fixed["fixes"][0]["artifactChanges"][0]["replacements"] == [{
        "deletedRegion": {"startLine": 6, "endLine": 6},
        "insertedContent": {"text": "    return None"}}]
    (tmp_path / "review.sarif").write_text(out, encoding="utf-8")
    (tmp_path / "kinds.sarif").write_text(json.dumps(every_kind_log(), ensure_ascii=False),
                                          encoding="utf-8")

    found = multitool_validate([tmp_path / "review.sarif", tmp_path / "kinds.sarif"],
                               tmp_path / "validation.sarif")
    assert [(r["ruleId"], r["message"]) for r in found] == []
