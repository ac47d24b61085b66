"""Hook managers detected from the repository (lefthook, husky, the pre-commit framework):
``git ocr install`` refuses to write a hook the manager would set aside or hide, prints the
lines to add in the manager's own form, and those lines, merged into the file as printed, make
the real manager block a commit with the finding shown.

Real: git, lefthook 2.2.1 and husky 9.1.7 from npm (conftest's cache, ``npm install
--offline`` in the test repository runs lefthook's postinstall and husky's prepare), the
``git-ocr`` console script on the hook's ``PATH``, HTTP to the loopback model. Fake: the
model's replies.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from ocr_hook.hooks import managers, native
from tests.hooks.conftest import HUSKY, LEFTHOOK, NpmTools
from tests.hooks.test_native import BUGGY, SYSTEM_PATH, finding, git, head, hooks_folder, ocr
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

VENV_PATH = f"{Path(native.hook_command()[0]).parent}:{SYSTEM_PATH}"  # `git ocr` for managers
LEFTHOOK_JOBS = """\
pre-commit:
  parallel: true
  jobs:
    - name: lint
      run: echo lint-ran
      glob: "*.js"

pre-push:
  jobs:
    - run: echo push-ran
"""
LEFTHOOK_COMMANDS = """\
pre-commit:
  commands:
    lint:
      run: echo lint-ran
"""
LEFTHOOK_COMPACT = """\
pre-commit:
  jobs:
  -   name: lint
      run: echo lint-ran
# the end
"""
LEFTHOOK_OTHER = """\
post-checkout:
  jobs:
    - run: echo checkout
"""


def package(**deps: str) -> str:
    return json.dumps({"name": "app", "version": "1.0.0", "private": True,
                       **({"scripts": {"prepare": "husky"}} if "husky" in deps else {}),
                       "devDependencies": deps}) + "\n"


def merge(text: str, out: str) -> str:
    """``text`` with the lines ``git ocr install`` printed (``out``) added where it said, block
    after block in the printed order (a heading ``add these lines …:``, then the lines)."""
    lines = out.splitlines()
    starts = [i for i, x in enumerate(lines) if x.startswith("add these lines ")]
    assert starts, out
    for start, stop in zip(starts, [*starts[1:], len(lines)], strict=True):
        added, old = lines[start + 1:stop], text.splitlines()
        if m := re.search(r" after line (\d+) ", lines[start]):
            at = int(m.group(1))
            text = "\n".join(old[:at] + added + old[at:]) + "\n"
        else:
            assert " at the end of " in lines[start]
            text += "\n".join(added) + "\n"
    return text


def commit_buggy(repo: GitRepo, llm: ScriptedLLM) -> subprocess.CompletedProcess[str]:
    repo.stage({"calc.py": BUGGY})
    llm.tool_calls(("code_comment", finding()), ("task_done", {"state": "DONE"}))
    return git(repo, llm, "commit", "-m", "add calc", PATH=VENV_PATH)


def test_lefthook_repo_refuses_naming_its_config_and_the_merged_job_blocks_the_commit(
    repo: GitRepo, llm: ScriptedLLM, npm_tools: NpmTools, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    init = repo.commit({"lefthook.yml": LEFTHOOK_JOBS, "package.json": package(
        lefthook=LEFTHOOK)}, "lefthook")
    before = (repo.state(), hooks_folder(repo))
    rc, out = ocr(monkeypatch, capsys, repo.path, "install")
    assert rc == 2
    assert out.splitlines() == [
        "ocr-hook: not installed: pre-commit hooks here are run by lefthook (lefthook.yml):"
        " `lefthook install` (also run by npm install) would rename a hook written to"
        " .git/hooks to pre-commit.old and never run it",
        "add these lines to lefthook.yml after line 6 (the end of the `jobs:` of `pre-commit:`), then run"
        " `lefthook install`:",
        "    - name: ocr-review",
        "      run: git ocr hook pre-commit",
    ]
    assert (repo.state(), hooks_folder(repo)) == before  # nothing written, no backup

    merged = merge(LEFTHOOK_JOBS, out)
    assert yaml.safe_load(merged)["pre-commit"]["jobs"] == [
        {"name": "lint", "run": "echo lint-ran", "glob": "*.js"},
        {"name": "ocr-review", "run": "git ocr hook pre-commit"}]
    (repo.path / "lefthook.yml").write_text(merged)
    p = npm_tools.install(repo.path, repo.env)  # lefthook's postinstall: `lefthook install`
    assert p.returncode == 0, p.stderr
    assert b"lefthook" in (repo.path / ".git" / "hooks" / "pre-commit").read_bytes()

    p = commit_buggy(repo, llm)
    assert p.returncode == 1, p.stdout + p.stderr
    assert head(repo) == init
    shown = p.stdout + p.stderr
    assert "BLOCKING calc.py:2 [high · bug] id " in shown
    assert "Division by zero when b is 0." in shown
    # the bypass words of the host that ran the hook: real lefthook, seen as our parent
    assert ("bypass once with `LEFTHOOK_EXCLUDE=ocr-review git commit` (lefthook) or"
            " `OCR_HOOK_SKIP=1 git commit`.") in " ".join(shown.split())
    assert "--no-verify" not in shown and "SKIP=ocr-review git" not in shown
    assert len(llm.requests) == 1
    # ... and those words do skip it: the commit goes through with no request
    p = git(repo, llm, "commit", "-m", "add calc", PATH=VENV_PATH,
            LEFTHOOK_EXCLUDE="ocr-review")
    assert p.returncode == 0, p.stdout + p.stderr
    assert head(repo) != init and len(llm.requests) == 1
    rc, out = ocr(monkeypatch, capsys, repo.path, "install")  # nothing more to do
    assert (rc, out) == (2, "ocr-hook: not installed: pre-commit hooks here are run by lefthook,"
                         " and lefthook.yml already runs `git ocr hook pre-commit`: nothing to"
                         " install\n")


@pytest.mark.parametrize(("config", "hook", "heading", "lines"), [
    (LEFTHOOK_COMMANDS, "pre-commit", "after line 4 (the end of the `commands:` of `pre-commit:`)",
     ["    ocr-review:", "      run: git ocr hook pre-commit"]),
    (LEFTHOOK_COMPACT, "pre-commit", "after line 4 (the end of the `jobs:` of `pre-commit:`)",
     ["  -   name: ocr-review", "      run: git ocr hook pre-commit"]),
    (LEFTHOOK_OTHER, "pre-commit", "at the end",
     ["pre-commit:", "  jobs:", "    - name: ocr-review", "      run: git ocr hook pre-commit"]),
    (LEFTHOOK_JOBS, "pre-push", "after line 10 (the end of the `jobs:` of `pre-push:`)",
     ["    - name: ocr-review", "      run: git ocr hook pre-push {1} {2}",
      "      use_stdin: true"]),
], ids=["commands", "compact-jobs", "hook-absent", "pre-push-jobs"])
def test_printed_lefthook_lines_merge_into_each_layout_and_lefthook_runs_them(
    repo: GitRepo, llm: ScriptedLLM, npm_tools: NpmTools, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
    config: str, hook: str, heading: str, lines: list[str],
) -> None:
    init = repo.commit({".lefthook.yml" if hook == "pre-commit" else "lefthook.yaml": config},
                       "lefthook")
    name = ".lefthook.yml" if hook == "pre-commit" else "lefthook.yaml"
    rc, out = ocr(monkeypatch, capsys, repo.path, "install", f"--{hook}")
    assert rc == 2
    assert f"run by lefthook ({name})" in out.splitlines()[0]
    where = f"at the end of {name}" if heading == "at the end" else f"to {name} {heading}"
    assert out.splitlines()[1:] == [
        f"add these lines {where}, then run `lefthook install`:", *lines]
    (repo.path / name).write_text(merge(config, out))
    p = subprocess.run([str(npm_tools.lefthook), "validate"], cwd=repo.path, env=repo.env,
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stdout + p.stderr
    p = subprocess.run([str(npm_tools.lefthook), "install"], cwd=repo.path, env=repo.env,
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stdout + p.stderr
    if hook == "pre-commit":
        p = commit_buggy(repo, llm)
        assert p.returncode == 1 and head(repo) == init
        assert "BLOCKING calc.py:2 [high · bug] id " in p.stdout + p.stderr
        return
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], env=repo.env, check=True)
    repo.git("remote", "add", "origin", str(remote))
    repo.git("push", "-q", "--no-verify", "origin", "main")
    repo.commit({"calc.py": BUGGY}, "add calc")
    llm.tool_calls(("code_comment", finding()), ("task_done", {"state": "DONE"}))
    p = git(repo, llm, "push", "origin", "main", PATH=VENV_PATH)
    assert p.returncode != 0
    assert "calc.py:2 [high · bug] id " in p.stdout + p.stderr
    assert '<file path="calc.py"' in llm.requests[0]["messages"][1]["content"]


def test_advice_for_several_hooks_pastes_in_the_printed_order(
    repo: GitRepo, npm_tools: NpmTools, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"lefthook.yml": LEFTHOOK_JOBS}, "lefthook")
    rc, out = ocr(monkeypatch, capsys, repo.path, "install", "--pre-commit", "--pre-push",
                  "--pre-merge-commit")
    assert rc == 2
    headings = [x for x in out.splitlines() if x.startswith("add these lines ")]
    assert [h.split(", then")[0] for h in headings] == [
        "add these lines at the end of lefthook.yml",
        "add these lines to lefthook.yml after line 10 (the end of the `jobs:` of `pre-push:`)",
        "add these lines to lefthook.yml after line 6 (the end of the `jobs:` of `pre-commit:`)"]
    merged = merge(LEFTHOOK_JOBS, out)
    (repo.path / "lefthook.yml").write_text(merged)
    assert yaml.safe_load(merged) == {
        "pre-commit": {"parallel": True, "jobs": [
            {"name": "lint", "run": "echo lint-ran", "glob": "*.js"},
            {"name": "ocr-review", "run": "git ocr hook pre-commit"}]},
        "pre-push": {"jobs": [{"run": "echo push-ran"}, {
            "name": "ocr-review", "run": "git ocr hook pre-push {1} {2}", "use_stdin": True}]},
        "pre-merge-commit": {"jobs": [
            {"name": "ocr-review", "run": "git ocr hook pre-merge-commit"}]}}
    p = subprocess.run([str(npm_tools.lefthook), "validate"], cwd=repo.path, env=repo.env,
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stdout + p.stderr


@pytest.mark.parametrize(("config", "expected"), [
    ('[[pre-commit.jobs]]\nname = "lint"\nrun = "echo"\n',
     {"jobs": [{"name": "lint", "run": "echo"},
               {"name": "ocr-review", "run": "git ocr hook pre-commit"}]}),
    ('[pre-commit.commands.lint]\nrun = "echo"\n',
     {"commands": {"lint": {"run": "echo"}, "ocr-review": {"run": "git ocr hook pre-commit"}}}),
], ids=["jobs", "commands"])
def test_printed_toml_lines_are_what_lefthook_reads(
    repo: GitRepo, npm_tools: NpmTools, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], config: str, expected: dict[str, object],
) -> None:
    repo.commit({".config/lefthook.toml": config}, "lefthook")
    rc, out = ocr(monkeypatch, capsys, repo.path, "install")
    assert rc == 2 and "run by lefthook (.config/lefthook.toml)" in out.splitlines()[0]
    (repo.path / ".config" / "lefthook.toml").write_text(merge(config, out))
    p = subprocess.run([str(npm_tools.lefthook), "dump", "--format", "json"], cwd=repo.path,
                       env=repo.env, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == {"pre-commit": expected}


def test_uninstall_removes_the_hook_lefthook_set_aside_as_old(
    repo: GitRepo, npm_tools: NpmTools, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    rc, _ = ocr(monkeypatch, capsys, repo.path, "install")  # before the team adds lefthook
    assert rc == 0
    repo.commit({"lefthook.yml": LEFTHOOK_JOBS, "package.json": package(lefthook=LEFTHOOK)},
                "lefthook")
    assert npm_tools.install(repo.path, repo.env).returncode == 0
    hooks = repo.path / ".git" / "hooks"
    assert native.is_managed(hooks / "pre-commit.old")  # what issue 28 saw: set aside, unrun
    lefthook_hook = (hooks / "pre-commit").read_bytes()
    rc, out = ocr(monkeypatch, capsys, repo.path, "uninstall")
    assert rc == 0
    assert out == (f"removed pre-commit hook: {hooks / 'pre-commit.old'}\n"
                   "pre-merge-commit hook not installed\n"
                   f"pre-push hook {hooks / 'pre-push'} was not installed by ocr-hook; left"
                   f" alone\nremoved post-commit hook: {hooks / 'post-commit'}\n")
    assert not (hooks / "pre-commit.old").exists()
    assert (hooks / "pre-commit").read_bytes() == lefthook_hook
    assert not any(native.is_managed(p) for p in hooks.iterdir())


def test_uninstall_puts_a_chained_original_back_under_the_managers_name(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    hooks = repo.path / ".git" / "hooks"
    (hooks / "pre-commit").write_text("#!/bin/sh\necho mine\n")
    native.install(repo.path, ["pre-commit"], command=("/venv/bin/git-ocr",))
    (hooks / "pre-commit").rename(hooks / "pre-commit.legacy")  # as `pre-commit install` does
    (hooks / "pre-commit").write_text("#!/bin/sh\n# File generated by pre-commit\n")
    rc, out = ocr(monkeypatch, capsys, repo.path, "uninstall", "--pre-commit")
    assert out == ("removed pre-commit hook and restored the original: "
                   f"{hooks / 'pre-commit.legacy'}\n"
                   f"removed post-commit hook: {hooks / 'post-commit'}\n")
    assert (hooks / "pre-commit.legacy").read_text() == "#!/bin/sh\necho mine\n"
    assert not (hooks / "pre-commit.ocr-hook-orig").exists()


def test_husky_before_and_after_npm_install_ends_with_a_working_gate(
    repo: GitRepo, llm: ScriptedLLM, npm_tools: NpmTools, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    init = repo.commit({".husky/pre-commit": "echo husky-ran\n",
                        "package.json": package(husky=HUSKY)}, "husky")
    before = hooks_folder(repo)
    rc, out = ocr(monkeypatch, capsys, repo.path, "install")  # a fresh clone: no hooksPath
    assert rc == 2
    assert out.splitlines() == [
        "ocr-hook: not installed: pre-commit hooks here are run by husky: npm install (husky's"
        " prepare script) points core.hooksPath at .husky/_, and git would no longer read"
        " .git/hooks",
        "add this line to .husky/pre-commit (create the file if there is none), then run `npm"
        " install` (husky's prepare script points core.hooksPath at .husky/_):",
        "git ocr hook pre-commit",
    ]
    assert hooks_folder(repo) == before
    with (repo.path / ".husky" / "pre-commit").open("a") as fh:
        fh.write(out.splitlines()[-1] + "\n")
    p = npm_tools.install(repo.path, repo.env)
    assert p.returncode == 0, p.stderr
    assert repo.git("config", "core.hooksPath").strip() == ".husky/_"

    p = commit_buggy(repo, llm)
    assert p.returncode == 1, p.stdout + p.stderr
    assert head(repo) == init
    assert "husky-ran" in p.stderr
    assert "BLOCKING calc.py:2 [high · bug] id " in p.stderr
    assert "`HUSKY=0 git commit` (husky; skips every husky hook)" in " ".join(p.stderr.split())
    assert len(llm.requests) == 1
    skipped = git(repo, llm, "commit", "-m", "add calc", PATH=VENV_PATH, HUSKY="0")
    assert skipped.returncode == 0, skipped.stdout + skipped.stderr
    assert head(repo) != init and len(llm.requests) == 1
    repo.git("reset", "-q", "--soft", "HEAD~1")  # back to the staged change for what follows
    rc, out = ocr(monkeypatch, capsys, repo.path, "install")  # after npm install
    assert (rc, out) == (2, "ocr-hook: not installed: pre-commit hooks here are run by husky,"
                         " and .husky/pre-commit already runs `git ocr hook pre-commit`: nothing"
                         " to install\n")


def test_uninstall_finds_a_hook_that_husky_hid_behind_core_hooks_path(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    ocr(monkeypatch, capsys, repo.path, "install")
    repo.git("config", "core.hooksPath", ".husky/_")
    hook = repo.path / ".git" / "hooks" / "pre-commit"
    rc, out = ocr(monkeypatch, capsys, repo.path, "uninstall", "--pre-commit")
    assert (rc, out) == (0, "pre-commit hook not installed\n"
                         f"removed pre-commit hook: {hook}\n"
                         f"removed post-commit hook: {hook.parent / 'post-commit'}\n")
    assert not hook.exists()


@pytest.mark.parametrize(("files", "expected"), [
    ({"package.json": package(husky=HUSKY)}, "run by husky"),
    ({"package.json": json.dumps({"scripts": {"prepare": "husky"}})}, "run by husky"),
    ({".husky/pre-push": "npm test\n"}, "run by husky"),
    ({".config/lefthook.toml": "[pre-commit.commands.x]\nrun = 'true'\n"},
     "run by lefthook (.config/lefthook.toml)"),
    ({".pre-commit-config.yaml": "repos: []\n"},
     "run by the pre-commit framework: add the hook id ocr-review to .pre-commit-config.yaml"),
], ids=["husky-dependency", "husky-prepare", "husky-folder", "lefthook-toml", "pre-commit"])
def test_managers_are_detected_from_the_repository_and_force_installs_anyway(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    files: dict[str, str], expected: str,
) -> None:
    repo.commit({"README.md": "hi\n", **files}, "init")
    before = hooks_folder(repo)
    rc, out = ocr(monkeypatch, capsys, repo.path, "install")
    assert rc == 2 and expected in out.splitlines()[0], out
    assert hooks_folder(repo) == before
    rc, out = ocr(monkeypatch, capsys, repo.path, "install", "--force")
    hook = repo.path / ".git" / "hooks" / "pre-commit"
    assert (rc, out) == (0, f"installed pre-commit hook: {hook}\n"
                         f"installed post-commit hook: {hook.parent / 'post-commit'}\n")


def test_a_package_json_without_husky_is_no_manager(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"package.json": json.dumps({"scripts": {"prepare": "tsc"},
                                             "dependencies": {"left-pad": "1"}})}, "init")
    rc, out = ocr(monkeypatch, capsys, repo.path, "install")
    assert rc == 0 and out.startswith("installed pre-commit hook: ")


def test_lefthook_toml_and_flow_style_advice() -> None:
    assert managers.yaml_advice("pre-commit:\n  commands: {}\n", "lefthook.yml", "pre-commit",
                                "git ocr hook pre-commit") == (0, (
        "add ocr-review: {run: 'git ocr hook pre-commit'} to `commands: {}` at line 2 of"
        " lefthook.yml, then run `lefthook install`",))
    assert managers.LEFTHOOK_FILES[:4] == ("lefthook.yml", "lefthook.yaml", "lefthook.toml",
                                           "lefthook.json")
    assert len(managers.LEFTHOOK_FILES) == 15


def test_a_lefthook_hook_whose_binary_path_names_husky_is_still_lefthook(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """lefthook's generated hook names its binary; an npm folder on that path may hold the word
    husky (as the tests' own cache does): that is still a lefthook hook."""
    config = LEFTHOOK_JOBS.replace("      glob: \"*.js\"\n",
                                   "      glob: \"*.js\"\n    - name: ocr-review\n"
                                   "      run: git ocr hook pre-commit\n", 1)
    repo.commit({"lefthook.yml": config}, "lefthook")
    hook = repo.path / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\n/home/u/.cache/npm/lefthook-2.2.1-husky-9.1.7/node_modules/"
                    "lefthook/bin/lefthook run \"pre-commit\" \"$@\"\n")
    hook.chmod(0o755)
    rc, out = ocr(monkeypatch, capsys, repo.path, "install")
    assert (rc, out) == (2, "ocr-hook: not installed: pre-commit hooks here are run by lefthook,"
                         " and lefthook.yml already runs `git ocr hook pre-commit`: nothing to"
                         " install\n")
