"""Native hooks installed by ``git ocr install`` and fired by real ``git commit`` / ``git push``.

Real: git, the hook scripts, the installed ``git-ocr`` console script, HTTP to the loopback
model. Fake: the model's replies. Git runs with a PATH that does not contain the venv, so the
hook has to find the ``git-ocr`` that installed it by itself.
"""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ocr_hook.hooks import native
from tests.support.cli import run_cli
from tests.support.gitrepo import GitRepo, init_bare
from tests.support.scripted_llm import ScriptedLLM

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"  # git and sh, but not the venv's git-ocr
BUGGY = "def div(a, b):\n    return a / b\n"


def finding(path: str = "calc.py", severity: str = "high") -> dict[str, Any]:
    return {"comments": [{
        "path": path, "content": "Division by zero when b is 0.",
        "existing_code": "    return a / b", "suggestion_code": "    return a / b if b else 0",
        "severity": severity, "category": "bug",
    }]}


def git(repo: GitRepo, llm: ScriptedLLM, *args: str,
        **env: str) -> subprocess.CompletedProcess[str]:
    full = {**repo.env, **llm.env(OCR_HOOK_EFFORT="low", OCR_HOOK_REVIEW_FILTER="false"),
            "PATH": SYSTEM_PATH, **env}
    full.pop("VIRTUAL_ENV", None)
    return subprocess.run(["git", *args], cwd=repo.path, env=full, capture_output=True,
                           text=True, timeout=120)


def ocr(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], cwd: Path,
        *args: str) -> tuple[int, str]:
    monkeypatch.chdir(cwd)
    rc, out, err = run_cli(args, {}, capsys)
    return rc, out + err


def head(repo: GitRepo) -> str:
    return repo.git("rev-parse", "HEAD").strip()


def test_native_pre_commit_hook_blocks_passes_skips_and_no_verify_bypasses(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    init = repo.commit({"README.md": "hi\n"}, "init")
    rc, out = ocr(monkeypatch, capsys, repo.path, "install")
    hook = repo.path / ".git" / "hooks" / "pre-commit"
    assert rc == 0 and out == (f"installed pre-commit hook: {hook}\n"
                               f"installed post-commit hook: {hook.parent / 'post-commit'}\n")
    assert hook.stat().st_mode & stat.S_IXUSR
    assert native.is_managed(hook)

    # blocked: exit 1 from the hook, the finding and how to bypass on the terminal
    repo.stage({"calc.py": BUGGY})
    llm.tool_calls(("code_comment", finding()), ("task_done", {"state": "DONE"}))
    p = git(repo, llm, "commit", "-m", "add calc")
    assert p.returncode == 1, p.stderr
    assert head(repo) == init
    assert "BLOCKING calc.py:2 [high · bug] id " in p.stderr
    assert "  git ocr dismiss " in p.stderr
    assert "Division by zero when b is 0." in p.stderr
    assert "commit blocked: 1 finding(s) at or above high" in p.stderr
    assert ("bypass once with `git commit --no-verify` or `OCR_HOOK_SKIP=1 git commit`."
            in p.stderr)
    assert len(llm.requests) == 1

    # OCR_HOOK_SKIP=1: one line, no review
    p = git(repo, llm, "commit", "-m", "skip", OCR_HOOK_SKIP="1")
    assert p.returncode == 0, p.stderr
    assert "ocr-hook: skipped (OCR_HOOK_SKIP=1)" in p.stderr
    assert len(llm.requests) == 1
    repo.git("reset", "-q", "--soft", "HEAD~1")

    # --no-verify: the hook does not run at all
    p = git(repo, llm, "commit", "--no-verify", "-m", "add calc anyway")
    assert p.returncode == 0, p.stderr
    assert len(llm.requests) == 1

    # passed: no finding, the commit goes through
    repo.stage({"ok.py": "X = 1\n"})
    p = git(repo, llm, "commit", "-m", "add ok")
    assert p.returncode == 0, p.stderr
    assert len(llm.requests) == 2
    assert "ok.py" in llm.requests[1]["messages"][1]["content"]
    assert repo.git("log", "-1", "--format=%s").strip() == "add ok"


def test_existing_hook_is_chained_and_uninstall_restores_it(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    hooks = repo.path / ".git" / "hooks"
    log = tmp_path / "user-hook.log"
    user_hook = hooks / "pre-commit"
    original = f'#!/bin/sh\necho "user hook ran" >> {log}\nexit "${{USER_HOOK_RC:-0}}"\n'
    user_hook.write_text(original)
    user_hook.chmod(0o750)
    listing = sorted(p.name for p in hooks.iterdir())

    rc, out = ocr(monkeypatch, capsys, repo.path, "install")
    assert rc == 0
    assert out == (f"installed pre-commit hook: {user_hook} (the existing hook, kept as "
                   "pre-commit.ocr-hook-orig, runs first)\n"
                   f"installed post-commit hook: {hooks / 'post-commit'}\n")
    assert (hooks / "pre-commit.ocr-hook-orig").read_text() == original
    installed = user_hook.read_bytes()
    # idempotent: a second install changes nothing
    rc, out = ocr(monkeypatch, capsys, repo.path, "install")
    assert out == (f"pre-commit hook already installed: {user_hook}\n"
                   f"post-commit hook already installed: {hooks / 'post-commit'}\n")
    assert user_hook.read_bytes() == installed
    assert (hooks / "pre-commit.ocr-hook-orig").read_text() == original

    repo.stage({"ok.py": "X = 1\n"})
    p = git(repo, llm, "commit", "-m", "both hooks")
    assert p.returncode == 0, p.stderr
    assert log.read_text() == "user hook ran\n"
    assert len(llm.requests) == 1

    # a failing user hook stops the commit before any LLM request
    repo.stage({"ok2.py": "Y = 2\n"})
    p = git(repo, llm, "commit", "-m", "user hook fails", USER_HOOK_RC="3")
    assert p.returncode == 1
    assert log.read_text() == "user hook ran\n" * 2
    assert len(llm.requests) == 1

    rc, out = ocr(monkeypatch, capsys, repo.path, "uninstall")
    assert rc == 0
    assert out == (f"removed pre-commit hook and restored the original: {user_hook}\n"
                   "pre-merge-commit hook not installed\n"
                   "pre-push hook not installed\n"
                   f"removed post-commit hook: {hooks / 'post-commit'}\n")
    assert user_hook.read_text() == original
    assert stat.S_IMODE(user_hook.stat().st_mode) == 0o750
    assert sorted(p.name for p in hooks.iterdir()) == listing
    p = git(repo, llm, "commit", "-m", "only the user hook")
    assert p.returncode == 0
    assert log.read_text() == "user hook ran\n" * 3
    assert len(llm.requests) == 1


def test_force_replaces_instead_of_chaining(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    hooks = repo.path / ".git" / "hooks"
    marker = tmp_path / "ran"
    (hooks / "pre-commit").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (hooks / "pre-commit").chmod(0o755)
    rc, out = ocr(monkeypatch, capsys, repo.path, "install", "--force")
    assert "is kept as pre-commit.ocr-hook-orig and not run" in out
    repo.stage({"ok.py": "X = 1\n"})
    assert git(repo, llm, "commit", "-m", "x").returncode == 0
    assert not marker.exists() and len(llm.requests) == 1
    ocr(monkeypatch, capsys, repo.path, "uninstall")
    assert (hooks / "pre-commit").read_text() == f"#!/bin/sh\ntouch {marker}\n"
    assert not (hooks / "pre-commit.ocr-hook-orig").exists()


def test_install_honours_core_hooks_path_and_worktrees(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    wt = tmp_path / "wt"
    repo.linked_worktree(wt)
    rc, out = ocr(monkeypatch, capsys, wt, "install", "--pre-commit", "--pre-push")
    common_hooks = repo.path / ".git" / "hooks"
    assert rc == 0
    assert out == (f"installed pre-commit hook: {common_hooks / 'pre-commit'}\n"
                   f"installed pre-push hook: {common_hooks / 'pre-push'}\n"
                   f"installed post-commit hook: {common_hooks / 'post-commit'}\n")
    ocr(monkeypatch, capsys, repo.path, "uninstall")
    assert not (common_hooks / "pre-commit").exists()

    outside = tmp_path / "shared-hooks"  # core.hooksPath outside the work tree: honoured
    repo.git("config", "core.hooksPath", str(outside))
    rc, out = ocr(monkeypatch, capsys, repo.path, "install")
    assert out == (f"installed pre-commit hook: {outside / 'pre-commit'}\n"
                   f"installed post-commit hook: {outside / 'post-commit'}\n")
    assert native.is_managed(outside / "pre-commit")
    assert not (common_hooks / "pre-commit").exists()
    ocr(monkeypatch, capsys, repo.path, "uninstall")
    assert list(outside.iterdir()) == []


def test_hook_falls_back_to_path_and_lets_the_commit_through_when_git_ocr_is_gone(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    native.install(repo.path, ["pre-commit"], command=("/nonexistent/venv/bin/git-ocr",))
    repo.stage({"ok.py": "X = 1\n"})
    p = git(repo, llm, "commit", "-m", "no reviewer")
    assert p.returncode == 0
    assert ("ocr-hook: git-ocr not found (installed from /nonexistent/venv/bin/git-ocr); "
            "not reviewed.") in p.stderr
    assert llm.requests == []
    venv_bin = str(Path(native.hook_command()[0]).parent)
    repo.stage({"ok2.py": "Y = 2\n"})
    p = git(repo, llm, "commit", "-m", "reviewer on PATH", PATH=f"{venv_bin}:{SYSTEM_PATH}")
    assert p.returncode == 0, p.stderr
    assert len(llm.requests) == 1


def test_native_pre_push_hook_blocks_and_no_verify_bypasses(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    remote = tmp_path / "remote.git"
    init_bare(remote, repo.env)
    repo.commit({"README.md": "hi\n"}, "init")
    repo.git("remote", "add", "origin", str(remote))
    repo.git("push", "-q", "origin", "main")
    hooks = repo.path / ".git" / "hooks"
    seen = tmp_path / "stdin-seen"
    (hooks / "pre-push").write_text(f'#!/bin/sh\necho "$1" > {seen}\ncat >> {seen}\n')
    (hooks / "pre-push").chmod(0o755)
    rc, out = ocr(monkeypatch, capsys, repo.path, "install", "--pre-push")
    assert rc == 0 and "pre-push.ocr-hook-orig, runs first" in out
    old = repo.git("rev-parse", "main").strip()
    new = repo.commit({"calc.py": BUGGY}, "add calc")
    llm.tool_calls(("code_comment", finding()), ("task_done", {"state": "DONE"}))
    p = git(repo, llm, "push", "origin", "main")
    assert p.returncode != 0
    assert "calc.py:2 [high · bug] id " in p.stdout + p.stderr  # pre-push stdout is not redirected
    assert "push blocked" in p.stderr and "`git push --no-verify`" in p.stderr
    assert seen.read_text() == f"origin\nrefs/heads/main {new} refs/heads/main {old}\n"
    assert len(llm.requests) == 1
    assert '<file path="calc.py"' in llm.requests[0]["messages"][1]["content"]
    assert subprocess.run(["git", "rev-parse", "main"], cwd=remote, env=repo.env,
                          capture_output=True, text=True).stdout.strip() == old
    p = git(repo, llm, "push", "--no-verify", "origin", "main")
    assert p.returncode == 0, p.stderr
    assert len(llm.requests) == 1


def test_native_pre_merge_commit_hook_reviews_what_the_merge_brings(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    repo.git("checkout", "-q", "-b", "feature")
    feature = repo.commit({"calc.py": BUGGY}, "add calc")
    repo.git("checkout", "-q", "main")
    main = repo.commit({"main_only.py": "M = 1\n"}, "main work")
    rc, out = ocr(monkeypatch, capsys, repo.path, "install", "--pre-merge-commit")
    hook = repo.path / ".git" / "hooks" / "pre-merge-commit"
    assert rc == 0 and out == f"installed pre-merge-commit hook: {hook}\n"

    # blocked: no merge commit, the merge is left for `git merge --abort` / `git commit`
    llm.tool_calls(("code_comment", finding()), ("task_done", {"state": "DONE"}))
    p = git(repo, llm, "merge", "--no-ff", "-m", "merge feature", "feature")
    assert p.returncode == 1, p.stderr
    assert head(repo) == main
    assert "BLOCKING calc.py:2 [high · bug] id " in p.stderr
    assert f"reviewed: {main[:12]}..(merge of {feature})" in p.stderr, p.stderr
    assert "merge blocked: 1 finding(s) at or above high" in p.stderr
    assert ("bypass once with `git merge --no-verify` or `OCR_HOOK_SKIP=1 git merge`."
            in p.stderr)
    assert len(llm.requests) == 1
    prompt = llm.requests[0]["messages"][1]["content"]
    assert '<file path="calc.py"' in prompt and "main_only.py" not in prompt
    repo.git("merge", "--abort")

    # advisory: the same merge (answered from the cache) is committed with both parents
    p = git(repo, llm, "merge", "--no-ff", "-m", "merge feature", "feature",
            OCR_HOOK_GATE_MODE="advisory")
    assert p.returncode == 0, p.stderr
    assert repo.git("rev-parse", "HEAD^1", "HEAD^2").split() == [main, feature]
    assert repo.git("ls-tree", "--name-only", "HEAD").split() == [
        "README.md", "calc.py", "main_only.py"]
    assert len(llm.requests) == 1


@pytest.mark.parametrize(("setup", "expected"), [
    ("husky", "pre-commit hooks here are run by husky\n"
              "add this line to .husky/pre-commit (create the file if there is none), then run"
              " `npm install` (husky's prepare script points core.hooksPath at .husky/_):\n"
              "git ocr hook pre-commit"),
    ("lefthook", "pre-commit hooks here are run by lefthook (lefthook.yml)\n"
                 "add ocr-review: {run: 'git ocr hook pre-commit'} to `commands: {}` at line 2"
                 " of lefthook.yml, then run `lefthook install`"),
    ("tracked", "the hooks directory tools/hooks (core.hooksPath) is inside the work tree,"
                " shared through the repository: add this line to tools/hooks/pre-commit:"
                " git ocr hook pre-commit"),
])
def test_install_never_rewrites_hooks_of_the_repository_or_a_hook_manager(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    setup: str, expected: str,
) -> None:
    if setup == "husky":  # husky 9: core.hooksPath=.husky/_, the user's script in .husky/
        repo.commit({".husky/pre-commit": "npm test\n"}, "husky")
        repo.write({".husky/_/.gitignore": "*\n",
                    ".husky/_/pre-commit": "#!/bin/sh\n. \"$(dirname \"$0\")/h\"\n"})
        repo.git("config", "core.hooksPath", ".husky/_")
    elif setup == "lefthook":  # lefthook: its generated script in .git/hooks
        repo.commit({"lefthook.yml": "pre-commit:\n  commands: {}\n"}, "lefthook")
        hook = repo.path / ".git" / "hooks" / "pre-commit"
        hook.write_text("#!/bin/sh\n# lefthook generated\ncall_lefthook run pre-commit\n")
        hook.chmod(0o755)
    else:  # a team's tracked hooks folder
        repo.commit({"tools/hooks/pre-commit": "#!/bin/sh\nmake lint\n"}, "hooks")
        repo.git("config", "core.hooksPath", "tools/hooks")
    before = (repo.state(), hooks_folder(repo))
    rc, out = ocr(monkeypatch, capsys, repo.path, "install", "--pre-commit")
    assert rc == 2
    assert out == f"ocr-hook: not installed: {expected}\n"
    assert (repo.state(), hooks_folder(repo)) == before  # nothing rewritten, no backup left


def hooks_folder(repo: GitRepo) -> dict[str, bytes]:
    """Every file of ``.git/hooks`` with its bytes (``repo.state()`` skips ``.git``)."""
    folder = repo.path / ".git" / "hooks"
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.mark.parametrize(("config", "expected"), [
    ("repos:\n-   repo: local\n    hooks:\n    -   id: ruff\n",
     "pre-commit hooks here are run by the pre-commit framework: add the hook id ocr-review"
     " to .pre-commit-config.yaml instead (see README)"),
    ("repos:\n-   repo: https://example.invalid/ocr-hook\n    rev: v1\n    hooks:\n"
     "    -   id: 'ocr-review'\n",
     "pre-commit hooks here are run by the pre-commit framework, and .pre-commit-config.yaml"
     " already lists ocr-review: a native hook would review every commit twice"),
])
def test_install_refuses_to_chain_a_pre_commit_framework_hook(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    config: str, expected: str,
) -> None:
    repo.commit({".pre-commit-config.yaml": config, "README.md": "hi\n"}, "init")
    p = subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=repo.path,
                       env={**repo.env, "PRE_COMMIT_HOME": str(repo.path.parent / "pc")},
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    hook = repo.path / ".git" / "hooks" / "pre-commit"
    assert b"# File generated by pre-commit" in hook.read_bytes()
    before = (repo.state(), hooks_folder(repo))
    rc, out = ocr(monkeypatch, capsys, repo.path, "install")
    assert rc == 2
    assert out == f"ocr-hook: not installed: {expected}\n"
    assert (repo.state(), hooks_folder(repo)) == before
    assert not (hook.parent / "pre-commit.ocr-hook-orig").exists()


def test_install_re_points_every_installed_hook_at_the_running_git_ocr(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    old = ("/old/venv/bin/git-ocr",)
    native.install(repo.path, ["pre-commit", "pre-push"], command=old)
    native.install(repo.path, ["pre-merge-commit"], command=old, force=True)
    hooks = repo.path / ".git" / "hooks"
    rc, out = ocr(monkeypatch, capsys, repo.path, "install")
    assert rc == 0
    assert out == (f"updated pre-commit hook: {hooks / 'pre-commit'}\n"
                   f"updated post-commit hook: {hooks / 'post-commit'}\n"
                   f"updated pre-merge-commit hook: {hooks / 'pre-merge-commit'}\n"
                   f"updated pre-push hook: {hooks / 'pre-push'}\n")
    now = native.hook_command()
    for name in ("pre-commit", "pre-merge-commit", "pre-push"):
        text = (hooks / name).read_text()
        assert "/old/venv" not in text and now[0] in text
    assert "ocr_hook_chain=0\n" in (hooks / "pre-merge-commit").read_text()  # --force kept
    assert "ocr_hook_chain=1\n" in (hooks / "pre-push").read_text()
    rc, out = ocr(monkeypatch, capsys, repo.path, "install")  # nothing left to update
    assert out == (f"pre-commit hook already installed: {hooks / 'pre-commit'}\n"
                   f"post-commit hook already installed: {hooks / 'post-commit'}\n")
    # the re-pointed pre-push hook reviews a real push again
    remote = repo.path.parent / "remote.git"
    init_bare(remote, repo.env)
    repo.git("remote", "add", "origin", str(remote))
    repo.stage({"ok.py": "X = 1\n"})
    assert git(repo, llm, "commit", "-q", "--no-verify", "-m", "ok").returncode == 0
    p = git(repo, llm, "push", "-q", "origin", "HEAD:refs/heads/main")
    assert p.returncode == 0, p.stderr
    assert len(llm.requests) == 1
