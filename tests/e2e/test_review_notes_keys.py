"""Review notes that must not cover another change (spec §3.4.1): the same lines added at
another place of a file share a patch-id but not the change digest; a dismissal (shared too)
never makes a trusted note; a push reviews from the first commit without a note to the tip, so
a later noted commit's fix counts. Real: git, the installed hooks, ``git push`` to a local
bare remote, HTTP to the scripted loopback model (fake: only its replies)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from tests.e2e.test_review_notes import note_field, ocr, ok, run, sent
from tests.e2e.test_review_notes_trust import DONE, blocked_commit, comment, commit, hooked
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

PANEL = """class {name}Panel:
    def allow(self, user):
        self.log(user)
        self.audit(user)
        ok = self.check(user)
{added}        return ok

    def name(self):
        return "panel"
"""
GRANT = "        ok = True  # EVERYONE\n"


def panels(guest: str = "", admin: str = "") -> str:
    return PANEL.format(name="Guest", added=guest) + "\n" + PANEL.format(name="Admin",
                                                                         added=admin)


def patch_id(repo: GitRepo, commit_id: str) -> str:
    patch = repo.git("diff-tree", "-p", "--root", "--binary", commit_id).encode()
    return subprocess.run(["git", "patch-id", "--verbatim"], input=patch, capture_output=True,
                          cwd=repo.path, env=repo.env, check=True).stdout.decode().split()[0]


def test_the_same_lines_added_at_another_place_are_reviewed_at_push(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    hooked(repo, llm, tmp_path)
    base = commit(repo, llm, {"panels.py": panels()}, "panels", "--no-verify")
    repo.git("checkout", "-q", "-b", "guest")
    guest = commit(repo, llm, {"panels.py": panels(guest=GRANT)}, "guests may")  # reviewed
    assert note_field(repo, guest, "verdict") == "pass"
    repo.git("checkout", "-q", "main")
    admin = commit(repo, llm, {"panels.py": panels(admin=GRANT)}, "admins may", "--no-verify")
    assert patch_id(repo, admin) == patch_id(repo, guest)  # git patch-id cannot tell them apart
    assert ok(ocr(repo, llm, "status")).stdout == (
        "commits not on any remote-tracking ref without a review note: 2\n"
        f"  {base[:12]} panels\n  {admin[:12]} admins may\n")
    llm.tool_calls(comment("panels.py", GRANT.strip()), DONE)
    before = len(llm.requests)
    p = run(repo, llm, "git", "push", "origin", "main")
    assert p.returncode == 1, p.stdout + p.stderr
    assert len(llm.requests) == before + 1
    assert "ok = True  # EVERYONE" in sent(llm, before)
    out = p.stdout + p.stderr
    assert "reviewed at commit time" not in out
    assert f"reviewed refs/heads/main: (empty tree)..{admin[:12]} (2 commits)" in out
    admin_line = panels(admin=GRANT).splitlines().index(GRANT.rstrip("\n")) + 1
    assert admin_line == 16
    assert re.search(rf"panels\.py:{admin_line}\b", out), out
    # a message-only amend keeps both keys: the commit is still covered by its note
    repo.git("checkout", "-q", "guest")
    ok(run(repo, llm, "git", "commit", "-q", "--amend", "--no-verify", "-m", "reworded"))
    reworded = repo.git("rev-parse", "HEAD").strip()
    data = json.loads(ok(ocr(repo, llm, "review", "--from", base, "--to", reworded,
                             "--format", "json")).stdout)
    assert data["input"]["reviewed_at_commit"] == [
        {"commit": reworded, "noted_commit": guest, "ref": "",
         "session": note_field(repo, guest, "session")}]
    assert data["files"] == []


def test_a_withdrawn_shared_dismissal_blocks_the_push(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    hooked(repo, llm, tmp_path)
    fid = blocked_commit(repo, llm)
    ok(ocr(repo, llm, "dismiss", fid, "--shared", "--reason", "the team agrees"))
    repo.git("add", ".ocr-hook-dismissed.json")
    ok(run(repo, llm, "git", "commit", "-q", "--no-verify", "-m", "dismiss",
           ".ocr-hook-dismissed.json"))
    llm.tool_calls(comment("a.py", "wipe_disk()"), DONE)
    noted = commit(repo, llm, {}, "add")  # a.py is still staged: passes by the dismissal
    assert note_field(repo, noted, "verdict") == "dismissed"
    # while the shared dismissal is at the tip: reviewed again, and it applies again
    llm.tool_calls(comment("a.py", "wipe_disk()"), DONE)
    before = len(llm.requests)
    p = ok(ocr(repo, llm, "review", "--from", "HEAD~1", "--to", "HEAD", "--format", "json",
               "--no-cache"))
    data = json.loads(p.stdout)
    assert "reviewed_at_commit" not in data["input"] and "wipe_disk()" in sent(llm, before)
    assert data["verdict"] == "pass" and [d["path"] for d in data["dismissed"]] == ["a.py"]
    repo.git("rm", "-q", ".ocr-hook-dismissed.json")
    ok(run(repo, llm, "git", "commit", "-q", "--no-verify", "-m", "withdraw"))
    assert "a.py" in repo.git("ls-tree", "--name-only", "HEAD")
    llm.tool_calls(comment("a.py", "wipe_disk()"), DONE)
    before = len(llm.requests)
    p = run(repo, llm, "git", "push", "origin", "main", OCR_HOOK_CACHE_ENABLED="false")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "wipe_disk()" in sent(llm, before)
    out = p.stdout + p.stderr
    assert "reviewed at commit time" not in out
    assert re.search(r"a\.py:1\b", out), out


def test_a_later_noted_fix_counts_and_its_other_files_are_not_reviewed_again(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    hooked(repo, llm, tmp_path)
    first = commit(repo, llm, {"c1.py": "one = 1\n"}, "c1")  # noted: left out at push
    # the endpoint is down: the hook lets the commit through as incomplete (gate.on_error)
    down = {"OCR_LLM_URL": "http://127.0.0.1:9/v1"}
    repo.write({"c2.py": "value = eval(user_input)\n"})
    repo.git("add", "-A")
    p = ok(run(repo, llm, "git", "commit", "-q", "-m", "c2", **down))
    assert "NOT REVIEWED" in p.stdout + p.stderr
    second = repo.git("rev-parse", "HEAD").strip()
    assert note_field(repo, second, "verdict") == "incomplete"
    fix = commit(repo, llm, {"c2.py": "value = int(user_input)\n",
                             "d.py": "delta_value = 4\n"}, "c2 without eval, and d")
    assert note_field(repo, fix, "verdict") == "pass"
    before = len(llm.requests)
    p = ok(run(repo, llm, "git", "push", "origin", "main", OCR_HOOK_CACHE_ENABLED="false"))
    assert len(llm.requests) == before + 1
    text = sent(llm, before)
    assert "value = int(user_input)" in text and "eval(" not in text
    assert "delta_value" not in text and "one = 1" not in text
    out = (p.stdout + p.stderr).splitlines()
    assert f"reviewed refs/heads/main: {first[:12]}..{fix[:12]} (2 commits)" in out
    data = json.loads(ok(ocr(repo, llm, "review", "--from", first, "--to", fix,
                             "--format", "json")).stdout)
    assert (data["input"]["base"], data["input"]["head"]) == (first, fix)
    assert data["input"]["paths"] == ["c2.py"]
    assert [f["path"] for f in data["files"]] == ["c2.py"]
    noted = [line for line in out if line.startswith("reviewed at commit time")]
    assert noted == [
        f"reviewed at commit time: {first[:12]} (session {note_field(repo, first, 'session')})",
        f"reviewed at commit time: {fix[:12]} (session {note_field(repo, fix, 'session')})"]


def test_a_pure_rename_of_code_no_model_saw_is_reviewed_at_push(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    """A ``--no-verify`` rewrite of a.py, then a noted ``git mv a.py b.py`` (its own review has
    nothing to look at, and its note passes): the push's range, limited to the rewrite's
    paths, follows the rename and reviews b.py."""
    hooked(repo, llm, tmp_path)
    commit(repo, llm, {"a.py": "".join(f"line_{i} = {i}\n" for i in range(12))}, "init",
           "--no-verify")
    ok(run(repo, llm, "git", "push", "-q", "origin", "main", "--no-verify"))
    bad = 'import os\n\n\ndef h(p):\n    os.system("BADCODE " + p)\n'
    commit(repo, llm, {"a.py": bad}, "rewrite", "--no-verify")
    repo.git("mv", "a.py", "b.py")
    ok(run(repo, llm, "git", "commit", "-q", "-m", "rename"))  # reviewed: nothing to review
    renamed = repo.git("rev-parse", "HEAD").strip()
    assert note_field(repo, renamed, "verdict") == "pass"
    llm.tool_calls(comment("b.py", '    os.system("BADCODE " + p)', "critical"), DONE)
    before = len(llm.requests)
    p = run(repo, llm, "git", "push", "origin", "main", OCR_HOOK_CACHE_ENABLED="false")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "BADCODE" in sent(llm, before)
    out = p.stdout + p.stderr
    assert f"reviewed at commit time: {renamed[:12]}" in out and re.search(r"b\.py:5\b", out), out


def test_code_moved_out_of_an_excluded_folder_is_reviewed_whole_by_the_move(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    """vendor/lib.py (excluded, vendored) committed through the hook: its note passes (a move
    out of vendor/ is reviewed whole, spec §4); moving it to lib.py through the hook reviews
    lib.py whole and blocks; committed with --no-verify instead, the push does the same and
    trusts the vendored commit's note."""
    hooked(repo, llm, tmp_path)
    commit(repo, llm, {"README.md": "hello\n"}, "init", "--no-verify")
    ok(run(repo, llm, "git", "push", "-q", "origin", "main", "--no-verify"))
    first = commit(repo, llm, {"vendor/lib.py": 'TOKEN = "BADCODE"\n', "ok.py": "x = 1\n"},
                   "vendored lib")
    assert note_field(repo, first, "verdict") == "pass"
    repo.git("mv", "vendor/lib.py", "lib.py")
    llm.tool_calls(comment("lib.py", 'TOKEN = "BADCODE"', "critical"), DONE)
    before = len(llm.requests)
    p = run(repo, llm, "git", "commit", "-q", "-m", "un-vendor")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "BADCODE" in sent(llm, before)
    ok(run(repo, llm, "git", "commit", "-q", "--no-verify", "-m", "un-vendor"))
    llm.tool_calls(comment("lib.py", 'TOKEN = "BADCODE"', "critical"), DONE)
    before = len(llm.requests)
    p = run(repo, llm, "git", "push", "origin", "main", OCR_HOOK_CACHE_ENABLED="false")
    assert p.returncode == 1, p.stdout + p.stderr
    assert len(llm.requests) == before + 1 and "BADCODE" in sent(llm, before)
    out = p.stdout + p.stderr
    assert re.search(r"lib\.py:1\b", out), out
    assert f"reviewed at commit time: {first[:12]}" in out


def test_code_that_was_binary_until_a_later_commit_is_reviewed_at_push(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    """A NUL byte makes evil.py binary (excluded); a later commit removes it, and git still
    shows that edit as binary: the commit's hook reviews evil.py whole (spec §4, its old content
    was binary) and blocks it; committed with --no-verify, the push shows evil.py as text."""
    hooked(repo, llm, tmp_path)
    commit(repo, llm, {"README.md": "hello\n"}, "init", "--no-verify")
    ok(run(repo, llm, "git", "push", "-q", "origin", "main", "--no-verify"))
    code = 'import os\nos.system("BADCODE")\n'
    first = commit(repo, llm, {"evil.py": "# \x00\n" + code}, "binary")
    assert note_field(repo, first, "verdict") == "partial"
    llm.tool_calls(comment("evil.py", 'os.system("BADCODE")', "critical"), DONE)
    before = len(llm.requests)
    repo.stage({"evil.py": "#\n" + code})
    p = run(repo, llm, "git", "commit", "-q", "-m", "text again")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "BADCODE" in sent(llm, before)
    assert re.search(r"evil\.py:3\b", p.stdout + p.stderr), p.stdout + p.stderr
    ok(run(repo, llm, "git", "commit", "-q", "--no-verify", "-m", "text again"))
    llm.tool_calls(comment("evil.py", 'os.system("BADCODE")', "critical"), DONE)
    before = len(llm.requests)
    p = run(repo, llm, "git", "push", "origin", "main", OCR_HOOK_CACHE_ENABLED="false")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "BADCODE" in sent(llm, before)
    assert re.search(r"evil\.py:3\b", p.stdout + p.stderr), p.stdout + p.stderr


def test_a_dismissed_finding_below_the_gate_leaves_the_note_passing(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    """Only a dismissal the commit needed to pass makes its note ``dismissed``: a low finding
    (fail_on high) dismissed changes nothing, and the push skips the commit."""
    hooked(repo, llm, tmp_path)
    repo.write({"a.py": "# tidy later\nvalue = 1\n"})
    repo.git("add", "-A")
    llm.tool_calls(comment("a.py", "# tidy later", severity="low"), DONE)
    data = json.loads(ok(ocr(repo, llm, "review", "--format", "json")).stdout)
    [c] = data["comments"]
    ok(ocr(repo, llm, "dismiss", c["id"], "--reason", "wording"))
    llm.tool_calls(comment("a.py", "# tidy later", severity="low"), DONE)
    noted = commit(repo, llm, {}, "add a")
    assert note_field(repo, noted, "verdict") == "pass"
    before = len(llm.requests)
    p = run(repo, llm, "git", "push", "origin", "main", OCR_HOOK_CACHE_ENABLED="false")
    assert p.returncode == 0, p.stdout + p.stderr
    assert len(llm.requests) == before
    assert f"reviewed at commit time: {noted[:12]}" in p.stdout + p.stderr
