"""The real pre-commit framework installs ocr-hook from a repository
(``repo: <path>``, ``rev: <sha>``) with a plain ``pip install .`` and runs ``ocr-review`` and
``ocr-review-push`` against a temporary repository and the scripted loopback model.

Real: pre-commit, its virtualenv and pip install (dependencies from the package index), git,
the hooks pre-commit installs, HTTP. Fake: the model's replies. The hook repository is a commit
of a snapshot of this working tree (tracked and untracked, not ignored, files), so ``rev``
resolves even with uncommitted changes. ``PRE_COMMIT_HOME`` is shared by the tests of this
module, so the hook environment is built once.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.gitrepo import GitRepo, git_env
from tests.support.paths import ROOT
from tests.support.scripted_llm import ScriptedLLM

BUGGY = "def div(a, b):\n    return a / b\n"


def _git(cwd: Path, env: dict[str, str], *args: str) -> str:
    p = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, check=True)
    return p.stdout.decode()


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """(path, sha) of a one-commit repository holding a snapshot of this working tree."""
    home = tmp_path_factory.mktemp("hookrepo-home")
    env = git_env(home)
    listed = _git(ROOT, env, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    dest = tmp_path_factory.mktemp("ocr-hook-src")
    for rel in (p for p in listed.split("\0") if p):
        src = ROOT / rel
        if not src.is_file():  # deleted in the work tree but still in the index
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
    _git(dest, env, "init", "-q", "-b", "main")
    _git(dest, env, "add", "-A")
    _git(dest, env, "commit", "-q", "-m", "snapshot of the ocr-hook working tree")
    return dest, _git(dest, env, "rev-parse", "HEAD").strip()


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture
def project(repo: GitRepo, hook_repo: tuple[Path, str], pre_commit_home: Path,
            llm: ScriptedLLM) -> Iterator[tuple[GitRepo, dict[str, str]]]:
    """A repository with a committed .pre-commit-config.yaml using our hooks, pre-commit's
    git hooks installed, and the environment that points the review at ``llm``."""
    path, sha = hook_repo
    repo.commit({".pre-commit-config.yaml": (
        "repos:\n"
        f"-   repo: {path}\n"
        f"    rev: {sha}\n"
        "    hooks:\n"
        "    -   id: ocr-review\n"
        "    -   id: ocr-review-push\n"
        "    -   id: ocr-review-merge\n"
    ), "README.md": "hello\n"}, "init")
    env = dict(repo.env)
    env.update(llm.env(OCR_HOOK_REVIEW_FILTER="false"))
    env.update(PRE_COMMIT_HOME=str(pre_commit_home), PRE_COMMIT_COLOR="never")
    p = run(repo, env, sys.executable, "-m", "pre_commit", "install", "-t", "pre-commit",
            "-t", "pre-push", "-t", "pre-merge-commit")
    assert p.returncode == 0, p.stdout + p.stderr
    yield repo, env


def run(repo: GitRepo, env: dict[str, str], *cmd: str,
        **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), cwd=repo.path, env={**env, **extra}, capture_output=True,
                          text=True, timeout=900)


def finding(severity: str = "high") -> dict[str, Any]:
    return {"comments": [{
        "path": "calc.py", "content": "Division by zero when b is 0.",
        "existing_code": "    return a / b", "suggestion_code": "    return a / b if b else 0",
        "severity": severity, "category": "bug"}]}


def test_manifest_is_valid_for_pre_commit() -> None:
    p = subprocess.run([sys.executable, "-m", "pre_commit", "validate-manifest",
                        str(ROOT / ".pre-commit-hooks.yaml")], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def test_blocked_commit_shows_the_finding_and_exits_1(
    project: tuple[GitRepo, dict[str, str]], llm: ScriptedLLM,
) -> None:
    repo, env = project
    head = repo.git("rev-parse", "HEAD").strip()
    repo.stage({"calc.py": BUGGY})
    llm.tool_calls(("code_comment", finding()), ("task_done", {"state": "DONE"}))
    p = run(repo, env, "git", "commit", "-m", "add calc")
    out = p.stdout + p.stderr
    assert p.returncode == 1, out
    assert "ocr-hook AI code review" in out and "Failed" in out
    assert "- exit code: 1" in out
    assert "calc.py:2 [high · bug] id " in out
    assert "Division by zero when b is 0." in out
    assert "SKIP=ocr-review" in out
    assert repo.git("rev-parse", "HEAD").strip() == head
    assert len(llm.requests) == 1
    # the framework's git-ocr is not on the user's PATH: the hint names the one that ran
    hint = next(line for line in out.splitlines() if "no `git ocr` on PATH?" in line)
    found = re.fullmatch(r"ocr-hook:   no `git ocr` on PATH\? run `(\S+/bin/git-ocr) dismiss ID`, or install"
                         r" git-ocr \(README: Install for everyday use\)", hint)
    assert found and found.group(1).startswith(env["PRE_COMMIT_HOME"]), hint
    fid = re.search(r"git ocr dismiss (\S+) --reason", out)
    assert fid
    d = run(repo, env, found.group(1), "dismiss", fid.group(1), "--reason", "b is never 0")
    assert d.returncode == 0, d.stdout + d.stderr
    assert len(json.loads((repo.path / ".git" / "ocr-hook" / "dismissed.json").read_text())
               ["dismissed"]) == 1
    assert '<file path="calc.py"' in llm.requests[0]["messages"][1]["content"]
    # pre-commit stage defaults: effort low → one round, no second request


def test_advisory_mode_lets_the_commit_through(
    project: tuple[GitRepo, dict[str, str]], llm: ScriptedLLM,
) -> None:
    repo, env = project
    repo.stage({"calc.py": BUGGY})
    llm.tool_calls(("code_comment", finding("critical")), ("task_done", {"state": "DONE"}))
    p = run(repo, env, "git", "commit", "-m", "advisory", OCR_HOOK_GATE_MODE="advisory")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "ocr-hook AI code review" in p.stdout + p.stderr and "Passed" in p.stdout + p.stderr
    assert "calc.py:2 [critical · bug] id " in p.stdout + p.stderr  # verbose: true shows it
    assert repo.git("log", "-1", "--format=%s").strip() == "advisory"
    assert len(llm.requests) == 1


def test_not_reviewed_is_visible_when_the_hook_passes(
    project: tuple[GitRepo, dict[str, str]], llm: ScriptedLLM,
) -> None:
    repo, env = project
    repo.stage({"calc.py": BUGGY})
    no_llm = {k: v for k, v in env.items() if not k.startswith("OCR_LLM_")}
    p = run(repo, no_llm, "git", "commit", "-m", "offline")
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "ocr-hook AI code review" in out and "Passed" in out
    assert "NOT REVIEWED: no LLM endpoint configured" in out
    assert "not reviewed: calc.py (no LLM endpoint configured)" in out
    assert repo.git("log", "-1", "--format=%s").strip() == "offline"
    assert llm.requests == []


def test_skip_ocr_review_skips_the_hook(
    project: tuple[GitRepo, dict[str, str]], llm: ScriptedLLM,
) -> None:
    repo, env = project
    repo.stage({"calc.py": BUGGY})
    p = run(repo, env, "git", "commit", "-m", "skipped", SKIP="ocr-review")
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "ocr-hook AI code review" in out and "Skipped" in out
    assert llm.requests == []
    assert repo.git("log", "-1", "--format=%s").strip() == "skipped"


def test_pre_push_stage_reviews_from_ref_to_ref(
    project: tuple[GitRepo, dict[str, str]], llm: ScriptedLLM,
) -> None:
    repo, env = project
    base = repo.git("rev-parse", "HEAD").strip()
    repo.stage({"calc.py": BUGGY})
    run(repo, env, "git", "commit", "--no-verify", "-m", "calc")
    repo.stage({"other.py": "X = 1\n"})
    run(repo, env, "git", "commit", "--no-verify", "-m", "other")
    tip = repo.git("rev-parse", "HEAD").strip()
    llm.tool_calls(("code_comment", finding()), ("task_done", {"state": "DONE"}))
    p = run(repo, env, sys.executable, "-m", "pre_commit", "run", "ocr-review-push",
            "--hook-stage", "pre-push", "--from-ref", base, "--to-ref", tip)
    out = p.stdout + p.stderr
    assert p.returncode == 1, out
    assert "calc.py:2 [high · bug] id " in out
    # `pre-commit run --from-ref/--to-ref` by hand pushes nothing: no push advice
    assert ("ocr-hook: review blocked: 1 finding(s) at or above high (a range run: nothing is"
            " being committed). Fix and rerun, or let this run pass with `OCR_HOOK_SKIP=1` in"
            " its environment.") in out.splitlines()
    user = llm.requests[0]["messages"][1]["content"]
    assert '<file path="calc.py"' in user and '<file path="other.py"' in user
    assert ".pre-commit-config.yaml" not in user  # committed before FROM: not in the range
    # the same range passes in advisory mode
    p = run(repo, env, sys.executable, "-m", "pre_commit", "run", "ocr-review-push",
            "--hook-stage", "pre-push", "--from-ref", base, "--to-ref", tip,
            OCR_HOOK_GATE_MODE="advisory")
    assert p.returncode == 0, p.stdout + p.stderr
    assert os.environ.get("PRE_COMMIT_FROM_REF") is None  # nothing leaked into this process


def test_clean_merge_is_reviewed_by_ocr_review_merge(
    project: tuple[GitRepo, dict[str, str]], llm: ScriptedLLM,
) -> None:
    repo, env = project
    run(repo, env, "git", "checkout", "-q", "-b", "feature")
    repo.stage({"calc.py": BUGGY})
    run(repo, env, "git", "commit", "-q", "--no-verify", "-m", "calc")
    run(repo, env, "git", "checkout", "-q", "main")
    repo.stage({"main_only.py": "M = 1\n"})
    run(repo, env, "git", "commit", "-q", "--no-verify", "-m", "main work")
    main = repo.git("rev-parse", "HEAD").strip()
    llm.tool_calls(("code_comment", finding()), ("task_done", {"state": "DONE"}))
    p = run(repo, env, "git", "merge", "--no-ff", "-m", "merge feature", "feature")
    out = p.stdout + p.stderr
    assert p.returncode == 1, out
    assert "ocr-hook AI code review (merge)" in out and "Failed" in out
    assert "calc.py:2 [high · bug] id " in out and "SKIP=ocr-review-merge" in out
    assert repo.git("rev-parse", "HEAD").strip() == main
    assert len(llm.requests) == 1
    prompt = llm.requests[0]["messages"][1]["content"]
    assert '<file path="calc.py"' in prompt and "main_only.py" not in prompt
    run(repo, env, "git", "merge", "--abort")


def test_ocr_review_notes_writes_the_note_under_the_framework(
    project: tuple[GitRepo, dict[str, str]], llm: ScriptedLLM,
) -> None:
    repo, env = project
    config = (repo.path / ".pre-commit-config.yaml").read_text()
    repo.write({".pre-commit-config.yaml": config + "    -   id: ocr-review-notes\n"})
    repo.git("add", "-A")
    assert run(repo, env, "git", "commit", "-q", "--no-verify", "-m", "notes").returncode == 0
    base = repo.git("rev-parse", "HEAD").strip()
    p = run(repo, env, sys.executable, "-m", "pre_commit", "install", "-t", "post-commit")
    assert p.returncode == 0, p.stdout + p.stderr
    repo.stage({"calc.py": "def add(a, b):\n    return a + b\n"})
    p = run(repo, env, "git", "commit", "-m", "add calc")
    assert p.returncode == 0, p.stdout + p.stderr
    assert len(llm.requests) == 1
    head = repo.git("rev-parse", "HEAD").strip()
    note = repo.git("notes", "--ref=refs/notes/ocr-hook", "show", head).splitlines()
    assert note[0] == "ocr-hook review v3" and "verdict: pass" in note
    # a range review with the same settings leaves the commit out
    r = run(repo, env, sys.executable, "-m", "ocr_hook.cli", "review", "--from", base, "--to",
            head, "--format", "json")
    assert r.returncode == 0, r.stderr
    assert [c["commit"] for c in json.loads(r.stdout)["input"]["reviewed_at_commit"]] == [head]
    assert len(llm.requests) == 1
