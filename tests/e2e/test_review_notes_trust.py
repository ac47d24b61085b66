"""Review notes that must NOT be trusted (spec §3.4.1): a whitespace change that changes what
code does, a commit reviewed under other selection, gate or rule settings, a commit passed only
by the user's personal dismissals; notes read from a fetched copy of the ref; a pushed notes
ref is not code; ``git ocr status`` on an unborn branch.

Real: git, the hooks ``git ocr install`` writes, real commits and pushes to a local bare remote,
the installed ``git-ocr``, HTTP to the scripted loopback model (fake: only its replies)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from tests.e2e.test_review_notes import NOTES, SYSTEM_PATH, note_field, ocr, ok, run, sent
from tests.support.gitrepo import GitRepo, init_bare
from tests.support.scripted_llm import ScriptedLLM

DONE = ("task_done", {"state": "DONE"})


def comment(path: str, code: str, severity: str = "high") -> tuple[str, dict[str, Any]]:
    return ("code_comment", {
        "path": path, "content": "Deletes more than intended.", "existing_code": code,
        "suggestion_code": code, "severity": severity, "category": "bug"})


def hooked(repo: GitRepo, llm: ScriptedLLM, tmp_path: Path) -> None:
    repo.git("remote", "add", "origin", str(init_bare(tmp_path / "remote.git", repo.env)))
    ok(ocr(repo, llm, "install", "--pre-commit", "--pre-push"))


def commit(repo: GitRepo, llm: ScriptedLLM, files: dict[str, str], msg: str, *flags: str,
           **env: str) -> str:
    repo.write(files)
    repo.git("add", "-A")
    ok(run(repo, llm, "git", "commit", "-q", *flags, "-m", msg, **env))
    return repo.git("rev-parse", "HEAD").strip()


def blocked_commit(repo: GitRepo, llm: ScriptedLLM) -> str:
    """``wipe_disk()`` in a.py staged and committed through the hook, blocked by the scripted
    high finding: the finding id the hook's dismiss hint names."""
    repo.write({"a.py": "wipe_disk()\n"})
    repo.git("add", "-A")
    llm.tool_calls(comment("a.py", "wipe_disk()"), DONE)
    p = run(repo, llm, "git", "commit", "-q", "-m", "add")
    assert p.returncode == 1, p.stderr
    found = re.search(r"git ocr dismiss (\S+) --reason", p.stderr)
    assert found, p.stderr
    return found.group(1)


def test_a_whitespace_change_that_changes_the_code_is_reviewed_at_push(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    hooked(repo, llm, tmp_path)
    first = commit(repo, llm, {"clean.sh": "rm -rf /tmp/build\n"}, "clean")
    assert note_field(repo, first, "verdict") == "pass"
    # the same patch to `git patch-id --stable`; a different command to the shell
    amended = commit(repo, llm, {"clean.sh": "rm -rf / tmp/build\n"}, "clean", "--amend",
                     "--no-verify")
    before = len(llm.requests)
    p = ok(run(repo, llm, "git", "push", "origin", "main"))
    assert len(llm.requests) == before + 1
    assert "rm -rf / tmp/build" in json.loads(sent(llm, before))[0]["messages"][-1]["content"]
    out = p.stdout + p.stderr
    assert "reviewed at commit time" not in out
    assert f"reviewed refs/heads/main: (empty tree)..{amended[:12]} (1 commit)" in out


def test_a_line_moved_out_of_its_if_is_reviewed(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    hooked(repo, llm, tmp_path)
    base = commit(repo, llm, {"app.py": "def f(ok):\n    pass\n"}, "base", "--no-verify")
    commit(repo, llm, {"app.py": "def f(ok):\n    if ok:\n        log()\n"
                       "        drop_tables()\n"}, "guard")
    dedented = commit(repo, llm, {"app.py": "def f(ok):\n    if ok:\n        log()\n"
                                  "    drop_tables()\n"}, "guard", "--amend", "--no-verify")
    before = len(llm.requests)
    data = json.loads(ok(ocr(repo, llm, "review", "--from", base, "--to", dedented,
                             "--format", "json")).stdout)
    assert "reviewed_at_commit" not in data["input"]
    assert [f["path"] for f in data["files"]] == ["app.py"]
    assert "+    drop_tables()" in sent(llm, before).replace("\\n", "\n")


def test_a_file_excluded_at_commit_time_is_reviewed_at_push(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    hooked(repo, llm, tmp_path)
    before = len(llm.requests)
    noted = commit(repo, llm, {"a.py": "alpha_value = 1\n", "deploy.py": "wipe_disk()\n"},
                   "add", OCR_HOOK_SELECT_EXCLUDE="deploy.py")
    assert "wipe_disk" not in sent(llm, before) and "alpha_value" in sent(llm, before)
    # a file left out by a setting: the note passes, under a fingerprint holding the setting
    # (a later rename out of it is reviewed whole), so a push without it does not trust it
    assert note_field(repo, noted, "verdict") == "pass"
    before = len(llm.requests)
    p = ok(run(repo, llm, "git", "push", "origin", "main"))
    assert "wipe_disk" in sent(llm, before)
    err = (p.stdout + p.stderr).splitlines()
    assert not any(line.startswith("reviewed at commit time") for line in err)
    assert ("1 commit(s) with a passing review note reviewed again: not trusted: settings"
            " changed since commit time") in p.stderr


def test_a_note_made_under_a_laxer_gate_or_other_rules_is_not_trusted(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    hooked(repo, llm, tmp_path)
    base = commit(repo, llm, {"rules.md": "Flag every call to wipe_disk.\n"}, "rules",
                  "--no-verify")
    # gate.fail_on = critical at commit time: the high finding lets the commit through
    llm.tool_calls(comment("a.py", "wipe_disk()"), DONE)
    noted = commit(repo, llm, {"a.py": "wipe_disk()\n"}, "add", OCR_HOOK_GATE_FAIL_ON="critical")
    assert note_field(repo, noted, "verdict") == "pass"
    same = ok(ocr(repo, llm, "review", "--from", base, "--to", noted, "--format", "json",
                  OCR_HOOK_GATE_FAIL_ON="critical"))
    assert [c["commit"] for c in json.loads(same.stdout)["input"]["reviewed_at_commit"]] == [noted]
    for env in ({}, {"OCR_HOOK_GATE_FAIL_ON": "critical", "OCR_HOOK_RULES_FILE": "rules.md"}):
        llm.tool_calls(comment("a.py", "wipe_disk()"), DONE)
        before = len(llm.requests)
        p = ocr(repo, llm, "review", "--from", base, "--to", noted, "--format", "json",
                "--no-cache", **env)  # so the model is asked, not the result cache
        data = json.loads(p.stdout)
        assert "reviewed_at_commit" not in data["input"], env
        assert "wipe_disk()" in sent(llm, before)
        if env:  # the rule text reached the model
            assert "Flag every call to wipe_disk." in sent(llm, before)
            assert p.returncode == 0
        else:  # fail_on = high: the finding blocks, and the run says why it reviewed again
            assert p.returncode == 1 and data["verdict"] == "findings"
            assert ("1 commit(s) with a passing review note reviewed again: not trusted:"
                    " settings changed since commit time") in p.stderr


def test_a_commit_passed_by_a_personal_dismissal_gets_no_passing_note(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    hooked(repo, llm, tmp_path)
    fid = blocked_commit(repo, llm)
    ok(ocr(repo, llm, "dismiss", fid, "--reason", "mine"))
    llm.tool_calls(comment("a.py", "wipe_disk()"), DONE)
    ok(run(repo, llm, "git", "commit", "-q", "-m", "add"))
    head = repo.git("rev-parse", "HEAD").strip()
    assert note_field(repo, head, "verdict") == "dismissed"
    assert ok(ocr(repo, llm, "status")).stdout == (
        "commits not on any remote-tracking ref without a review note: 1\n"
        f"  {head[:12]} add\n")
    before = len(llm.requests)
    p = ok(run(repo, llm, "git", "push", "origin", "main",  # the dismissal applies here too
               OCR_HOOK_CACHE_ENABLED="false"))  # so the model is asked, not the result cache
    assert "wipe_disk()" in sent(llm, before)
    assert "reviewed at commit time" not in p.stdout + p.stderr


def test_notes_fetched_into_refs_notes_remotes_are_read(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    hooked(repo, llm, tmp_path)
    noted = commit(repo, llm, {"a.py": "alpha_value = 1\n"}, "add A")
    # pushing the notes ref: notes, not code (nothing for the model, no `excluded:` lines)
    before = len(llm.requests)
    p = ok(run(repo, llm, "git", "push", "origin", "main", NOTES))
    assert len(llm.requests) == before
    assert "excluded:" not in p.stdout + p.stderr
    assert f"reviewed at commit time: {noted[:12]}" in p.stdout + p.stderr
    # a second clone fetches the notes as the README says and trusts them from there
    clone = GitRepo(tmp_path / "clone", repo.env)
    clone.git("remote", "add", "origin", str(tmp_path / "remote.git"))
    clone.git("config", "--add", "remote.origin.fetch",
              "+refs/notes/ocr-hook:refs/notes/remotes/origin/ocr-hook")
    clone.git("fetch", "-q", "origin")
    clone.git("checkout", "-q", "-b", "topic", "origin/main")
    assert clone.git("for-each-ref", "--format=%(refname)", "refs/notes/").split() == [
        "refs/notes/remotes/origin/ocr-hook"]
    clone.git("branch", "-q", "--unset-upstream")
    clone.git("update-ref", "-d", "refs/remotes/origin/main")  # so status has A to check
    assert ok(ocr(clone, llm, "status")).stdout == (
        "commits not on any remote-tracking ref without a review note: 0\n")


def test_status_on_an_unborn_branch(repo: GitRepo, llm: ScriptedLLM) -> None:
    p = ocr(repo, llm, "status")
    assert (p.returncode, p.stdout, p.stderr) == (0, "no commits yet\n", "")


def test_a_git_without_patch_id_verbatim_writes_and_trusts_no_note(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    """Fake: a ``git`` first on PATH that answers ``patch-id -h`` and ``patch-id --verbatim``
    as git 2.38 does (no such option) and hands every other command to the real git."""
    real = shutil.which("git", path=SYSTEM_PATH)
    shim = tmp_path / "old-git"
    shim.mkdir()
    (shim / "git").write_text(
        "#!/bin/sh\n"
        'if [ "$1" = patch-id ] && [ "$2" = -h ]; then\n'
        "  echo 'usage: git patch-id [--stable | --unstable]'; exit 129\n"
        "fi\n"
        'if [ "$1" = patch-id ] && [ "$2" = --verbatim ]; then\n'
        "  echo 'error: unknown option `verbatim'\"'\"; exit 129\n"
        "fi\n"
        f'exec {real} "$@"\n')
    (shim / "git").chmod(0o755)
    old = {"PATH": f"{shim}:{SYSTEM_PATH}"}  # not inside git's hooks: git puts its own first
    hooked(repo, llm, tmp_path)
    base = commit(repo, llm, {"r.py": "root_value = 0\n"}, "root", "--no-verify")
    noted = commit(repo, llm, {"a.py": "alpha_value = 1\n"}, "add A")  # noted by the new git
    assert note_field(repo, noted, "verdict") == "pass"
    # the hooks by hand, as an old git's would run them: a review, the commit, no note
    repo.write({"b.py": "beta_value = 2\n"})
    repo.git("add", "-A")
    ok(ocr(repo, llm, "hook", "pre-commit", **old))
    ok(run(repo, llm, "git", "-c", f"core.hooksPath={tmp_path / 'none'}", "commit", "-q",
           "-m", "add B"))
    ok(ocr(repo, llm, "hook", "post-commit", **old))
    head = repo.git("rev-parse", "HEAD").strip()
    assert repo.git("notes", f"--ref={NOTES}", "list").split()[1::2] == [noted]
    line = ("review notes not trusted: this git has no `git patch-id --verbatim` (git 2.39 or"
            " later); every commit is reviewed")
    assert ok(ocr(repo, llm, "status", **old)).stdout == (
        "commits not on any remote-tracking ref without a review note: 3\n"
        f"  {base[:12]} root\n  {noted[:12]} add A\n  {head[:12]} add B\n{line}\n")
    before = len(llm.requests)
    p = ok(ocr(repo, llm, "review", "--from", base, "--to", head, "--format", "json",
               "--no-cache", **old))
    data = json.loads(p.stdout)
    assert "reviewed_at_commit" not in data["input"]
    assert data["warnings"] == [{"type": "review_notes", "file": "", "message": line}]
    assert p.stderr.splitlines().count(f"ocr-hook: {line}") == 1
    assert "alpha_value" in sent(llm, before) and "beta_value" in sent(llm, before)
