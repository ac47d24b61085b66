"""The pre-commit framework's first hour (issue 28, items 6-8), through the real framework with
``repo: local`` hooks that run this checkout (no package index needed):

* the "no `git ocr` on PATH?" hint only when no ``git-ocr`` is on the user's PATH (item 6);
* ``--all-files`` split into parallel slices: every slice prints the same verdict, from one
  review (item 7);
* nothing staged without ``--all-files``: the notice does not claim ``--all-files`` (item 8).

Real: pre-commit, git, the hooks pre-commit installs, HTTP to the scripted loopback model.
Fake: the model's replies.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ocr_hook import hooks
from ocr_hook.change.hookinput import CI_HINT
from ocr_hook.cli.review_cmd import _git_ocr_on_path
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

BUGGY = "def div(a, b):\n    return a / b\n"
HOOK = f"{sys.executable} -m ocr_hook.cli hook pre-commit"
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
VENV_BIN = Path(sys.executable).parent
CONFIG = f"""\
repos:
- repo: local
  hooks:
  - id: ocr-defaults
    name: ocr-hook with the framework defaults
    entry: {HOOK}
    language: system
    verbose: true
    stages: [manual]
  - id: ocr-review
    name: ocr-hook as in .pre-commit-hooks.yaml
    entry: {HOOK}
    language: system
    pass_filenames: false
    require_serial: true
    always_run: true
    verbose: true
"""
HINT = ("ocr-hook:   no `git ocr` on PATH? run `{}/git-ocr dismiss ID`, or install git-ocr"
        " (README: Install for everyday use)")


def finding() -> dict[str, Any]:
    return {"comments": [{
        "path": "calc.py", "content": "Division by zero when b is 0.",
        "existing_code": "    return a / b", "suggestion_code": "    return a / b if b else 0",
        "severity": "high", "category": "bug"}]}


@pytest.fixture
def project(repo: GitRepo, llm: ScriptedLLM, tmp_path: Path) -> tuple[GitRepo, dict[str, str]]:
    repo.commit({".pre-commit-config.yaml": CONFIG,
                 **{f"m{i}.py": f"M{i} = {i}\n" for i in range(12)}}, "init")
    env = {k: v for k, v in repo.env.items() if k not in ("CI", "VIRTUAL_ENV", "SKIP")}
    env.update(llm.env(OCR_HOOK_REVIEW_FILTER="false", OCR_HOOK_EFFORT="low"))
    env.update(PRE_COMMIT_HOME=str(tmp_path / "pc-home"), PRE_COMMIT_COLOR="never",
               PATH=SYSTEM_PATH)
    return repo, env


def run(repo: GitRepo, env: dict[str, str], *cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), cwd=repo.path, env=env, capture_output=True, text=True,
                          timeout=300)


def lines(p: subprocess.CompletedProcess[str]) -> list[str]:
    return (p.stdout + p.stderr).splitlines()


@pytest.mark.parametrize("on_path", [False, True])
def test_path_hint_only_without_git_ocr_on_path(
    project: tuple[GitRepo, dict[str, str]], llm: ScriptedLLM, on_path: bool,
) -> None:
    repo, env = project
    if on_path:
        env["PATH"] = f"{VENV_BIN}:{SYSTEM_PATH}"
    assert run(repo, env, sys.executable, "-m", "pre_commit", "install").returncode == 0
    repo.stage({"calc.py": BUGGY})
    llm.tool_calls(("code_comment", finding()), ("task_done", {"state": "DONE"}))
    p = run(repo, env, "git", "commit", "-m", "calc")
    assert p.returncode == 1, p.stdout + p.stderr
    out = lines(p)
    start = out.index("ocr-hook: not a problem? dismiss it (or put `ocr-hook: ignore <reason>`"
                      " on its line):")
    fid = out[start + 1].split()[4]
    tail = [f"ocr-hook:   git ocr dismiss {fid} --reason '…'    # calc.py:2 [high · bug]"]
    if not on_path:
        tail.append(HINT.format(VENV_BIN))
    assert [x for x in out[start + 1:] if x.startswith("ocr-hook:")] == tail


def test_git_ocr_inside_the_framework_store_does_not_count(tmp_path: Path) -> None:
    store_bin = tmp_path / "pc-home" / "repoabc" / "py_env-python3" / "bin"
    user_bin = tmp_path / "user-bin"
    for d in (store_bin, user_bin):
        d.mkdir(parents=True)
    (store_bin / "git-ocr").write_text("#!/bin/sh\n")
    (store_bin / "git-ocr").chmod(stat.S_IRWXU)
    env = {"PRE_COMMIT_HOME": str(tmp_path / "pc-home"), "PATH": f"{store_bin}:{user_bin}"}
    assert not _git_ocr_on_path(env)
    (user_bin / "git-ocr").write_text("#!/bin/sh\n")
    (user_bin / "git-ocr").chmod(stat.S_IRWXU)
    assert _git_ocr_on_path(env)


def test_all_files_slices_print_one_verdict_from_one_review(
    project: tuple[GitRepo, dict[str, str]], llm: ScriptedLLM,
) -> None:
    repo, env = project
    repo.stage({"calc.py": BUGGY})
    for _ in range(4):  # at most one is used
        llm.tool_calls(("code_comment", finding()), ("task_done", {"state": "DONE"}))
    p = run(repo, env, sys.executable, "-m", "pre_commit", "run", "ocr-defaults",
            "--hook-stage", "manual", "--all-files")
    assert p.returncode == 1, p.stdout + p.stderr
    out = lines(p)
    slices = [x for x in out if x.startswith("ocr-hook: this hook reviews changes, not files: ")]
    verdicts = [x for x in out if x.startswith(("PASS:", "BLOCKED:"))]
    assert len(slices) >= (2 if (os.cpu_count() or 1) >= 2 else 1), out
    assert verdicts == ["BLOCKED: 1 finding at or above high (blocking mode)"] * len(slices)
    assert len(llm.requests) == 1  # the other slices answered from the first one's result
    assert sum("1 cache hit(s)" in x for x in out) == len(slices) - 1


def test_nothing_staged_does_not_claim_all_files(
    project: tuple[GitRepo, dict[str, str]], llm: ScriptedLLM,
) -> None:
    repo, env = project
    p = run(repo, env, sys.executable, "-m", "pre_commit", "run", "ocr-review")
    assert p.returncode == 0, p.stdout + p.stderr
    out = lines(p)
    assert ("ocr-hook: this hook reviews changes, not files, and nothing is staged;"
            f" {CI_HINT}") in out
    assert not [x for x in out if "--all-files" in x]
    assert llm.requests == []


def test_all_files_with_every_file_staged_prints_one_verdict_in_every_slice(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    """A slice of ``--all-files`` may be handed only staged names (a young repository, all of
    it new): it still reviews the whole staged snapshot, as the slice handed the unchanged
    ``.pre-commit-config.yaml`` does, instead of its own part with a verdict of its own."""
    repo.commit({".pre-commit-config.yaml": CONFIG}, "init")
    env = {k: v for k, v in repo.env.items() if k not in ("CI", "VIRTUAL_ENV", "SKIP")}
    env.update(llm.env(OCR_HOOK_REVIEW_FILTER="false", OCR_HOOK_EFFORT="low"))
    env.update(PRE_COMMIT_HOME=str(tmp_path / "pc-home"), PRE_COMMIT_COLOR="never",
               PATH=SYSTEM_PATH)
    repo.stage({"calc.py": BUGGY, **{f"m{i}.py": f"M{i} = {i}\n" for i in range(30)}})
    for _ in range(4):  # at most one is used
        llm.tool_calls(("code_comment", finding()), ("task_done", {"state": "DONE"}))
    p = run(repo, env, sys.executable, "-m", "pre_commit", "run", "ocr-defaults",
            "--hook-stage", "manual", "--all-files")
    assert p.returncode == 1, p.stdout + p.stderr
    out = lines(p)
    notices = [x for x in out if x.startswith("ocr-hook: this hook reviews changes, not files: ")]
    verdicts = [x for x in out if x.startswith(("PASS:", "BLOCKED:"))]
    summaries = [x.split(";")[0] for x in out if x.startswith("ocr-hook: ") and " reviewed, " in x]
    if (os.cpu_count() or 1) >= 2:  # the framework's slices: only one holds the config's name
        assert len(notices) == 1 and len(verdicts) >= 2, out
    assert verdicts == ["BLOCKED: 1 finding at or above high (blocking mode)"] * len(verdicts)
    assert summaries == ["ocr-hook: 31 reviewed, 0 excluded, 0 incomplete"] * len(verdicts)
    assert sum("1 cache hit(s)" in x for x in out) == len(verdicts) - 1  # one review


@pytest.mark.parametrize(("environ", "processes", "expected"), [
    ({"PRE_COMMIT": "1"}, [["python3", "/v/bin/python3", "/v/bin/pre-commit", "run", "-a"]],
     True),
    ({"PRE_COMMIT": "1"}, [["python3", "python3", "-m", "pre_commit", "run", "x",
                            "--all-files"]], True),
    ({"PRE_COMMIT": "1"}, [["pre-commit", "/v/bin/python3", "/v/bin/pre-commit", "run",
                            "--files", "a.py"]], False),
    ({"PRE_COMMIT": "1"}, [["python3", "python3", ".git/hooks/pre-commit"],
                           ["git", "git", "commit", "-a"]], False),  # `git commit -a`
    ({}, [["python3", "/v/bin/pre-commit", "run", "--all-files"]], False),
    ({"PRE_COMMIT": "1"}, [], False),
])
def test_framework_all_files_from_the_parent_command_line(
    environ: dict[str, str], processes: list[list[str]], expected: bool,
) -> None:
    assert hooks.framework_all_files(environ, processes) is expected


@pytest.mark.parametrize("all_files", [True, False])
def test_a_slice_of_all_files_handed_only_staged_names_reviews_every_staged_file(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], all_files: bool,
) -> None:
    """The slice of ``pre-commit run --all-files`` that holds only staged names (on one CPU the
    framework makes no other slice, so the real-framework test above cannot show this): with the
    framework's command line saying ``--all-files`` every staged file is reviewed, no notice;
    without it only the files handed."""
    from tests.support.cli import run_json

    repo.commit({"README.md": "x\n"}, "init")
    repo.stage({"a.py": "A = 1\n", "b.py": "B = 2\n", "c.py": "C = 3\n"})
    monkeypatch.chdir(repo.path)
    monkeypatch.setattr(hooks, "framework_all_files", lambda environ, processes=None: all_files)
    llm.tool_calls(("task_done", {"state": "DONE"}))
    rc, data, err = run_json(["hook", "pre-commit", "--format", "json", "a.py"],
                             llm.env(PRE_COMMIT="1"), capsys)
    assert rc == 0, err
    assert [f["path"] for f in data["files"]] == (["a.py", "b.py", "c.py"] if all_files
                                                  else ["a.py"])
    assert "reviews changes, not files" not in err
