"""The hook under the real pre-commit framework's CI and local-hook modes (spec §3.7): file
names as a filter on the staged set (a ``repo: local`` hook with the framework's defaults gets
them in parallel slices), ``--from-ref/--to-ref`` in any stage, and ``--all-files``, which
hands the hook files instead of changes.

Real: pre-commit (``language: system`` hooks running this checkout's ``ocr_hook.cli``), git,
HTTP to the scripted loopback model. Fake: the model's replies.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ocr_hook.change.hookinput import CI_HINT, changes_only_notice, filter_paths
from ocr_hook.diff.model import FileDiff
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM, openai_text

GROUPING = "sort the changed files"  # in the grouping request's system prompt

CONFIG = """\
repos:
- repo: local
  hooks:
  - id: ocr-defaults
    name: ocr-hook with the framework defaults
    entry: {python} -m ocr_hook.cli hook pre-commit
    language: system
    verbose: true
  - id: ocr-manifest
    name: ocr-hook as in .pre-commit-hooks.yaml
    entry: {python} -m ocr_hook.cli hook pre-commit
    language: system
    pass_filenames: false
    require_serial: true
    always_run: true
    stages: [pre-commit, manual]
    verbose: true
"""


@pytest.fixture
def project(repo: GitRepo, llm: ScriptedLLM, tmp_path: Path) -> tuple[GitRepo, dict[str, str]]:
    repo.commit({".pre-commit-config.yaml": CONFIG.format(python=sys.executable),
                 "README.md": "hello\n"}, "init")
    env = dict(repo.env)
    env.update(llm.env(OCR_HOOK_REVIEW_FILTER="false", OCR_HOOK_EFFORT="low"))
    env.update(PRE_COMMIT_HOME=str(tmp_path / "pc-home"), PRE_COMMIT_COLOR="never")
    return repo, env


def pre_commit(repo: GitRepo, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=repo.path, env=env,
                          capture_output=True, text=True, timeout=300)


def prompt_files(llm: ScriptedLLM) -> list[list[str]]:
    return [re.findall(r'<file path="([^"]+)"', r["messages"][1]["content"])
            for r in llm.requests]


def test_framework_default_slices_each_review_their_files_and_the_commit_goes_through(
    project: tuple[GitRepo, dict[str, str]], llm: ScriptedLLM,
) -> None:
    repo, env = project
    p = pre_commit(repo, env, "install")
    assert p.returncode == 0, p.stdout + p.stderr
    names = [f"f{i}.py" for i in range(8)]
    for _ in range(3):  # each run with 4 or more files asks for groups: one group of all
        llm.reply(openai_text(json.dumps([{"label": "all", "files": names}])), match=GROUPING)
    repo.stage({n: f"VALUE_{i} = {i}\n" for i, n in enumerate(names)})
    p = subprocess.run(["git", "commit", "-m", "eight files"], cwd=repo.path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr  # no "unrecognized arguments"
    assert repo.git("ls-tree", "--name-only", "HEAD").split() == sorted(
        [".pre-commit-config.yaml", "README.md", *names])
    # the manifest-style hook reviews the 8 files in one request; the default hook runs in
    # 2 parallel slices of 4 (2 CPUs), one request each: the slices of one snapshot take
    # turns (the lock) and neither reviews the other's files
    reviews = [s for s, r in zip(prompt_files(llm), llm.requests, strict=True)
               if GROUPING not in r["messages"][0]["content"]]
    assert len(llm.requests) == 6 and sorted(len(s) for s in reviews) == [4, 4, 8]
    slices = [s for s in reviews if len(s) == 4]
    assert sorted(slices[0] + slices[1]) == names
    assert [s for s in reviews if len(s) == 8] == [names]


def test_from_ref_to_ref_reviews_that_range_in_any_stage(
    project: tuple[GitRepo, dict[str, str]], llm: ScriptedLLM,
) -> None:
    repo, env = project
    base = repo.git("rev-parse", "HEAD").strip()
    repo.commit({"a.py": "A = 1\n"}, "a")
    tip = repo.commit({"b.py": "B = 2\n"}, "b")
    p = pre_commit(repo, env, "run", "ocr-manifest", "--from-ref", base, "--to-ref", tip)
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"reviewed: {base[:12]}..{tip[:12]}" in p.stdout
    assert "1 reviewed" not in p.stdout and "2 reviewed, 0 excluded" in p.stdout
    assert prompt_files(llm) == [["a.py", "b.py"]]
    p = pre_commit(repo, env, "run", "ocr-manifest", "--hook-stage", "manual",
                   "--from-ref", base, "--to-ref", tip)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "2 reviewed, 0 excluded" in p.stdout and "1 cache hit(s)" in p.stdout
    assert len(llm.requests) == 1


def test_all_files_says_the_hook_reviews_changes_and_how_to_run_it_in_ci(
    project: tuple[GitRepo, dict[str, str]], llm: ScriptedLLM,
) -> None:
    repo, env = project
    p = pre_commit(repo, env, "run", "--all-files")
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    assert ("ocr-hook: this hook reviews changes, not files: 2 of the file names it was given"
            " are not changed here (e.g. .pre-commit-config.yaml), as with `pre-commit run"
            f" --all-files`; only changed files are reviewed; {CI_HINT}") in lines
    assert (f"ocr-hook: this hook reviews changes, not files, and nothing is staged; {CI_HINT}"
            in lines)
    assert llm.requests == []


def fd(path: str, status: str = "modified", old: str = "") -> FileDiff:
    return FileDiff(status=status, old_path=old or path, new_path=path)


def test_file_names_only_narrow_the_changed_set_and_an_empty_list_keeps_nothing() -> None:
    files = [fd("a.py"), fd("dir/b.py"), fd("new.py", "renamed", "old.py")]
    kept = filter_paths(files, ["./dir//b.py", "new.py"])
    assert [f.path for f in kept.files] == ["dir/b.py", "new.py"]
    assert kept.unchanged_names == []
    assert filter_paths(files, ["old.py"]).files == [files[2]]  # a rename by its old path
    # a name that is not changed: files handed, not changes (--all-files): every changed file
    kept = filter_paths(files, ["./dir//b.py", "README.md"])
    assert [f.path for f in kept.files] == ["a.py", "dir/b.py", "new.py"]
    assert kept.unchanged_names == ["README.md"]
    assert filter_paths(files, []) == ([], [])
    assert changes_only_notice([], 0, {"PRE_COMMIT": "1"}, "range") == ""
    assert changes_only_notice([], 2, {"PRE_COMMIT": "1"}, "staged") == ""
    assert changes_only_notice([], 0, {}, "staged") == ""
