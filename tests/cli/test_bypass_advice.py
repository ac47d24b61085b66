"""The one bypass line a blocked hook prints names what runs it (issue 28, item 4): the native
hook (``git commit --no-verify``), the pre-commit framework on a commit (``SKIP=``), a
framework range run and CI (no commit advice), lefthook (``LEFTHOOK_EXCLUDE=``) and husky
(``HUSKY=0``), always with ``OCR_HOOK_SKIP=1``.

Real: git and the hooks it runs, the pre-commit framework (``repo: local`` hooks running this
checkout, so no package index), shell scripts laid out as lefthook and husky lay theirs out
(neither tool is installed here: a ``lefthook`` program on PATH that runs its command with
``sh -c``, as lefthook does; husky 9's ``core.hooksPath=.husky/_`` whose hook sources a
runner that runs ``.husky/pre-commit`` with ``sh -e``), HTTP to the scripted loopback model.
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

from ocr_hook.hooks import hosts
from tests.support.cli import run_cli
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

BUGGY = "def div(a, b):\n    return a / b\n"
HOOK = f"{sys.executable} -m ocr_hook.cli hook pre-commit"
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
WHY = "1 finding(s) at or above high"
CI_VARS = ("CI", "GITHUB_ACTIONS", "GITLAB_CI", "HUSKY", "HUSKY_GIT_PARAMS", "LEFTHOOK",
           "LEFTHOOK_EXCLUDE", "SKIP")
LOCAL_CONFIG = f"""\
repos:
- repo: local
  hooks:
  - id: ocr-review
    name: ocr-hook
    entry: {HOOK}
    language: system
    pass_filenames: false
    require_serial: true
    always_run: true
    stages: [pre-commit, manual]
    verbose: true
"""


def finding() -> dict[str, Any]:
    return {"comments": [{
        "path": "calc.py", "content": "Division by zero when b is 0.",
        "existing_code": "    return a / b", "suggestion_code": "    return a / b if b else 0",
        "severity": "high", "category": "bug"}]}


def env_for(repo: GitRepo, llm: ScriptedLLM, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in repo.env.items() if k not in CI_VARS}
    env.update(llm.env(OCR_HOOK_EFFORT="low", OCR_HOOK_REVIEW_FILTER="false"))
    env.update(PATH=SYSTEM_PATH, PRE_COMMIT_COLOR="never", PRE_COMMIT_HOME=str(
        repo.path.parent / "pc-home"))
    env.pop("VIRTUAL_ENV", None)
    env.update(extra)
    return env


def run(repo: GitRepo, env: dict[str, str], *cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), cwd=repo.path, env=env, capture_output=True, text=True,
                          timeout=300)


def advice(p: subprocess.CompletedProcess[str]) -> list[str]:
    """The bypass lines of a blocked run (stdout and stderr: the framework merges them)."""
    return [line for line in (p.stdout + p.stderr).splitlines() if " blocked: " in line]


def blocked_commit(repo: GitRepo, llm: ScriptedLLM, env: dict[str, str]
                   ) -> subprocess.CompletedProcess[str]:
    head = repo.git("rev-parse", "HEAD").strip()
    repo.stage({"calc.py": BUGGY})
    llm.tool_calls(("code_comment", finding()), ("task_done", {"state": "DONE"}))
    p = run(repo, env, "git", "commit", "-m", "add calc")
    assert p.returncode == 1, p.stdout + p.stderr
    assert repo.git("rev-parse", "HEAD").strip() == head
    assert len(llm.requests) == 1
    return p


def executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_native_hook_says_no_verify(repo: GitRepo, llm: ScriptedLLM,
                                    monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    monkeypatch.chdir(repo.path)
    assert run_cli(["install"], {}, capsys)[0] == 0
    p = blocked_commit(repo, llm, env_for(repo, llm))
    assert advice(p) == [
        f"ocr-hook: commit blocked: {WHY}. Fix and retry, or bypass once with"
        " `git commit --no-verify` or `OCR_HOOK_SKIP=1 git commit`."]


def test_framework_commit_says_skip(repo: GitRepo, llm: ScriptedLLM) -> None:
    repo.commit({".pre-commit-config.yaml": LOCAL_CONFIG, "README.md": "hi\n"}, "init")
    env = env_for(repo, llm)
    assert run(repo, env, sys.executable, "-m", "pre_commit", "install").returncode == 0
    p = blocked_commit(repo, llm, env)
    assert advice(p) == [
        f"ocr-hook: commit blocked: {WHY}. Fix and retry, or bypass once with"
        " `SKIP=ocr-review git commit` (pre-commit framework) or `OCR_HOOK_SKIP=1 git commit`."]


def test_framework_range_run_gives_no_commit_advice(repo: GitRepo, llm: ScriptedLLM) -> None:
    base = repo.commit({".pre-commit-config.yaml": LOCAL_CONFIG, "README.md": "hi\n"}, "init")
    tip = repo.commit({"calc.py": BUGGY}, "calc")
    llm.tool_calls(("code_comment", finding()), ("task_done", {"state": "DONE"}))
    p = run(repo, env_for(repo, llm), sys.executable, "-m", "pre_commit", "run", "ocr-review",
            "--hook-stage", "manual", "--from-ref", base, "--to-ref", tip)
    assert p.returncode == 1, p.stdout + p.stderr
    assert advice(p) == [
        f"ocr-hook: review blocked: {WHY} (a range run: nothing is being committed). Fix and"
        " rerun, or let this run pass with `OCR_HOOK_SKIP=1` in its environment."]
    assert len(llm.requests) == 1


def test_ci_run_gives_no_commit_advice(repo: GitRepo, llm: ScriptedLLM) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    repo.stage({"calc.py": BUGGY})
    llm.tool_calls(("code_comment", finding()), ("task_done", {"state": "DONE"}))
    p = run(repo, env_for(repo, llm, CI="true"), *HOOK.split())
    assert p.returncode == 1, p.stdout + p.stderr
    assert advice(p) == [
        f"ocr-hook: review blocked: {WHY} (a CI run: nothing is being committed). Fix and"
        " rerun, or let this run pass with `OCR_HOOK_SKIP=1` in its environment."]


def test_lefthook_says_lefthook_exclude(repo: GitRepo, llm: ScriptedLLM) -> None:
    repo.commit({"lefthook.yml": "pre-commit: {commands: {ocr-review: {run: 'git ocr hook"
                 " pre-commit'}}}\n", "README.md": "hi\n"}, "init")
    bin_dir = repo.path.parent / "lefthook-bin"
    executable(bin_dir / "lefthook", f"#!/bin/sh\n# runs each command with sh -c\n"
               f"[ \"$1\" = run ] || exit 2\nsh -c '{HOOK}'\n")
    executable(repo.path / ".git" / "hooks" / "pre-commit",
               "#!/bin/sh\n# lefthook's hook: it runs the hook's commands\n"
               'exec lefthook run pre-commit "$@"\n')
    p = blocked_commit(repo, llm, env_for(repo, llm, PATH=f"{bin_dir}:{SYSTEM_PATH}"))
    assert advice(p) == [
        f"ocr-hook: commit blocked: {WHY}. Fix and retry, or bypass once with"
        " `LEFTHOOK_EXCLUDE=ocr-review git commit` (lefthook) or `OCR_HOOK_SKIP=1 git commit`."]


def test_husky_says_husky_0(repo: GitRepo, llm: ScriptedLLM) -> None:
    repo.commit({".husky/pre-commit": f"{HOOK}\n", "README.md": "hi\n"}, "init")
    executable(repo.path / ".husky" / "_" / "pre-commit", '#!/bin/sh\n. "$(dirname "$0")/h"\n')
    executable(repo.path / ".husky" / "_" / "h",
               '#!/bin/sh\n[ "${HUSKY-}" = "0" ] && exit 0\n'
               'sh -e "$(dirname "$(dirname "$0")")/$(basename "$0")" "$@"\n')
    repo.git("config", "core.hooksPath", ".husky/_")
    p = blocked_commit(repo, llm, env_for(repo, llm))
    assert advice(p) == [
        f"ocr-hook: commit blocked: {WHY}. Fix and retry, or bypass once with"
        " `HUSKY=0 git commit` (husky; skips every husky hook) or `OCR_HOOK_SKIP=1 git commit`."]


def test_a_setting_error_names_the_bypass_of_the_host(repo: GitRepo, llm: ScriptedLLM) -> None:
    """Exit 2 (a bad committed setting) under husky: the same host's bypass."""
    repo.commit({".husky/pre-commit": f"{HOOK}\n", "README.md": "hi\n",
                 ".ocr-hook.toml": "[gate]\nfail_on = 'nonsense'\n"}, "init")
    executable(repo.path / ".husky" / "_" / "pre-commit",
               '#!/bin/sh\nsh -e "$(dirname "$(dirname "$0")")/pre-commit"\n')
    repo.git("config", "core.hooksPath", ".husky/_")
    repo.stage({"calc.py": BUGGY})
    p = run(repo, env_for(repo, llm), "git", "commit", "-m", "x")
    assert p.returncode == 1, p.stderr  # git's own exit code for a failed hook (ours: 2)
    assert "invalid gate.fail_on = 'nonsense' in .ocr-hook.toml (HEAD)" in p.stderr
    assert p.stderr.splitlines()[-1] == (
        "ocr-hook: to commit anyway, bypass the review once: `HUSKY=0 git commit` (husky; skips"
        " every husky hook) or `OCR_HOOK_SKIP=1 git commit`")


@pytest.mark.parametrize(("environ", "processes", "host"), [
    ({"PRE_COMMIT": "1"}, [], "framework"),
    ({"PRE_COMMIT": "1", "PRE_COMMIT_FROM_REF": "a", "PRE_COMMIT_TO_REF": "b"}, [], "range"),
    ({"PRE_COMMIT": "1", "PRE_COMMIT_FROM_REF": "a", "PRE_COMMIT_TO_REF": "b",
      "PRE_COMMIT_REMOTE_NAME": "origin"}, [], "framework"),  # a real push
    ({}, [["sh", "sh", "-c", "git ocr hook pre-commit"], ["lefthook", "lefthook", "run"]],
     "lefthook"),
    ({}, [["sh", "sh", "-e", ".husky/pre-commit"], ["git", "git", "commit"]], "husky"),
    ({"CI": "true"}, [["git", "git", "commit"]], "native"),  # a commit a CI job makes
    ({"CI": "true"}, [["git", "git", "-C", "x", "push"]], "native"),
    ({"CI": "true", "GIT_INDEX_FILE": ".git/index"}, [], "native"),
    ({"CI": "true"}, [["git", "git", "ocr", "hook", "pre-commit"]], "ci"),  # run by hand
    ({"CI": "true", "PRE_COMMIT": "1"}, [], "ci"),  # `pre-commit run --all-files` in CI
    ({"CI": "true", "PRE_COMMIT": "1", "GIT_INDEX_FILE": ".git/index"}, [], "framework"),
    ({}, [["pre-commit", "/bin/sh", ".git/hooks/pre-commit"], ["git", "git", "commit"]],
     "native"),
])
def test_hook_host_from_the_environment_and_the_parent_processes(
    environ: dict[str, str], processes: list[list[str]], host: str,
) -> None:
    assert hosts.hook_host("pre-commit", environ, processes) == host


def test_ancestors_reads_this_process_chain() -> None:
    found = hosts.ancestors(start=os.getpid())
    if found is None:
        pytest.skip("no /proc here")
    assert found[0][0] == Path(f"/proc/{os.getpid()}/comm").read_text().strip()


def test_framework_commit_names_the_local_hook_id(repo: GitRepo, llm: ScriptedLLM) -> None:
    """A ``repo: local`` hook under its own id: SKIP names that id."""
    repo.commit({".pre-commit-config.yaml": LOCAL_CONFIG.replace("id: ocr-review", "id: ai"),
                 "README.md": "hi\n"}, "init")
    env = env_for(repo, llm)
    assert run(repo, env, sys.executable, "-m", "pre_commit", "install").returncode == 0
    p = blocked_commit(repo, llm, env)
    assert advice(p) == [
        f"ocr-hook: commit blocked: {WHY}. Fix and retry, or bypass once with"
        " `SKIP=ai git commit` (pre-commit framework) or `OCR_HOOK_SKIP=1 git commit`."]


REMOTE_CONFIG = "repos:\n- repo: https://example.invalid/ocr-hook\n  rev: abc\n  hooks:\n" \
    "  - id: ocr-review\n  - id: 'ocr-review-push'\n"
LOCAL_TWO = ("repos:\n- repo: local\n  hooks:\n  - id: ai\n    entry: git-ocr hook pre-commit\n"
             "  - id: ai-push\n    entry: git-ocr hook pre-push\n  - id: lint\n"
             "    entry: flake8\n")


@pytest.mark.parametrize(("default", "stage", "text", "skip"), [
    ("ocr-review", "pre-commit", REMOTE_CONFIG, "ocr-review"),
    ("ocr-review-push", "pre-push", REMOTE_CONFIG, "ocr-review-push"),
    ("ocr-review", "pre-commit", LOCAL_TWO, "ai"),
    ("ocr-review-push", "pre-push", LOCAL_TWO, "ai-push"),
    ("ocr-review-merge", "pre-merge-commit", LOCAL_TWO, "ai,ai-push"),  # none for merges
    ("ocr-review", "pre-commit", "repos: []\n", "ocr-review"),
])
def test_framework_hook_ids_from_the_config(default: str, stage: str, text: str,
                                            skip: str) -> None:
    assert hosts.framework_hook_ids(default, stage, text) == skip


def test_without_proc_the_hook_file_tells(repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    monkeypatch.chdir(repo.path)
    monkeypatch.setattr(hosts, "ancestors", lambda: None)
    env = {k: v for k, v in repo.env.items() if k not in CI_VARS}
    assert hosts.hook_host("pre-commit", env) == "native"
    executable(repo.path / ".git" / "hooks" / "pre-commit",
               '#!/bin/sh\nexec lefthook run pre-commit "$@"\n')
    assert hosts.hook_host("pre-commit", env) == "lefthook"
    repo.git("config", "core.hooksPath", ".husky/_")
    assert hosts.hook_host("pre-commit", env) == "husky"
