"""Review notes end to end (spec §3.4.1): ``git ocr install --pre-commit --pre-push`` (which
brings the post-commit hook), real ``git commit`` (through the hooks, ``--amend -m``,
``--no-verify``), ``git ocr status``, a range review and a real ``git push`` to a local bare
remote. Real: git, the hook scripts, the installed ``git-ocr``, HTTP to the scripted loopback
model (fake: only its replies, ``task_done`` with no finding)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from ocr_hook.hooks import native
from tests.support.gitrepo import GitRepo, init_bare
from tests.support.scripted_llm import ScriptedLLM

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"  # git and sh, not the venv: hooks find git-ocr
NOTES = "refs/notes/ocr-hook"


def run(repo: GitRepo, llm: ScriptedLLM, *cmd: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**repo.env, **llm.env(OCR_HOOK_REVIEW_FILTER="false"), "PATH": SYSTEM_PATH, **env}
    full.pop("VIRTUAL_ENV", None)
    return subprocess.run(list(cmd), cwd=repo.path, env=full, capture_output=True, text=True,
                          timeout=120)


def ok(p: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert p.returncode == 0, p.stdout + p.stderr
    return p


def ocr(repo: GitRepo, llm: ScriptedLLM, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run(repo, llm, sys.executable, "-m", "ocr_hook.cli", *args, **env)


def sent(llm: ScriptedLLM, since: int) -> str:
    """Every request body the model got from request ``since`` on, as one text."""
    return json.dumps(llm.requests[since:])


def setup(repo: GitRepo, llm: ScriptedLLM, tmp_path: Path) -> dict[str, str]:
    """Three commits: A and B through the hooks (B then amended, message only), C with
    --no-verify. Returns their ids (``B0``: B before the amend)."""
    remote = init_bare(tmp_path / "remote.git", repo.env)
    repo.git("remote", "add", "origin", str(remote))
    out = ok(ocr(repo, llm, "install", "--pre-commit", "--pre-push")).stdout
    hooks = repo.path / ".git" / "hooks"
    assert out.splitlines() == [f"installed pre-commit hook: {hooks / 'pre-commit'}",
                                f"installed pre-push hook: {hooks / 'pre-push'}",
                                f"installed post-commit hook: {hooks / 'post-commit'}"]
    assert native.is_managed(hooks / "post-commit")
    ids = {}
    for name, text in (("A", "alpha_value = 1\n"), ("B", "beta_value = 2\n")):
        repo.write({f"{name.lower()}.py": text})
        repo.git("add", "-A")
        before = len(llm.requests)
        ok(run(repo, llm, "git", "commit", "-q", "-m", f"add {name}"))
        assert len(llm.requests) == before + 1  # reviewed at commit time
        ids[name] = repo.git("rev-parse", "HEAD").strip()
    ids["B0"] = ids["B"]
    ok(run(repo, llm, "git", "commit", "-q", "--amend", "-m", "add B, reworded"))
    ids["B"] = repo.git("rev-parse", "HEAD").strip()
    repo.write({"c.py": "gamma_value = 3\n"})
    repo.git("add", "-A")
    before = len(llm.requests)
    ok(run(repo, llm, "git", "commit", "-q", "--no-verify", "-m", "add C"))
    assert len(llm.requests) == before
    ids["C"] = repo.git("rev-parse", "HEAD").strip()
    return ids


def test_commits_reviewed_at_commit_time_are_not_reviewed_again_at_push(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    ids = setup(repo, llm, tmp_path)
    # the notes: on A and on B before the amend (same patch as B), none on C
    listed = {line.split()[1]
              for line in repo.git("notes", f"--ref={NOTES}", "list").splitlines()}
    assert listed == {ids["A"], ids["B0"]}
    note = repo.git("notes", f"--ref={NOTES}", "show", ids["A"]).splitlines()
    patch = repo.git("diff-tree", "-p", "--root", "--binary", ids["A"]).encode()
    pid = subprocess.run(["git", "patch-id", "--verbatim"], input=patch, capture_output=True,
                         cwd=repo.path, env=repo.env, check=True).stdout.decode().split()[0]
    raw = repo.git("diff-tree", "-r", "-z", "--full-index", "--no-renames", "--root",
                   "--no-commit-id", ids["A"]).split("\0")
    change = hashlib.sha256(f"{raw[0]}\t{raw[1]}".encode()).hexdigest()
    assert raw[1] == "a.py" and raw[0].endswith(" A")
    assert note[:4] == ["ocr-hook review v3", f"patch-id: {pid}", f"change: {change}",
                        "verdict: pass"]
    assert note[4].startswith("fingerprint: ") and len(note[4]) == len("fingerprint: ") + 64
    assert note[5] == "effort: low" and note[6].startswith("session: ")
    # git ocr status: only the --no-verify commit
    assert ok(ocr(repo, llm, "status")).stdout == (
        "commits not on any remote-tracking ref without a review note: 1\n"
        f"  {ids['C'][:12]} add C\n")
    # a CI range review: A..C holds B (noted, by its patch) and C
    before = len(llm.requests)
    p = ok(ocr(repo, llm, "review", "--from", ids["A"], "--to", ids["C"], "--format", "json",
               "--no-cache"))  # the push below must ask the model again
    data = json.loads(p.stdout)
    session_b = note_field(repo, ids["B0"], "session")
    assert data["input"]["reviewed_at_commit"] == [
        {"commit": ids["B"], "noted_commit": ids["B0"], "session": session_b, "ref": ""}]
    assert (data["input"]["base"], data["input"]["head"]) == (ids["B"], ids["C"])
    assert [f["path"] for f in data["files"]] == ["c.py"]
    assert "gamma_value" in sent(llm, before) and "beta_value" not in sent(llm, before)
    # the push: only C reaches the model; A and B are listed as reviewed at commit time
    before = len(llm.requests)
    p = ok(run(repo, llm, "git", "push", "origin", "main"))
    text = sent(llm, before)
    assert len(llm.requests) == before + 1
    assert "gamma_value" in text and "alpha_value" not in text and "beta_value" not in text
    lines = (p.stdout + p.stderr).splitlines()
    session_a = note_field(repo, ids["A"], "session")
    assert f"reviewed refs/heads/main: {ids['B'][:12]}..{ids['C'][:12]} (1 commit)" in lines
    assert f"reviewed at commit time: {ids['A'][:12]} (session {session_a})" in lines
    assert (f"reviewed at commit time: {ids['B'][:12]} (session {session_b})"
            f" (note on {ids['B0'][:12]})") in lines  # the amend kept the patch
    # after the push nothing is left
    assert ok(ocr(repo, llm, "status")).stdout == (
        "commits not on any remote-tracking ref without a review note: 0\n")
    # a push of only commits reviewed at commit time asks the model nothing
    repo.git("branch", "-q", "--set-upstream-to=origin/main")
    repo.write({"d.py": "delta_value = 4\n"})
    repo.git("add", "-A")
    ok(run(repo, llm, "git", "commit", "-q", "-m", "add D"))
    d = repo.git("rev-parse", "HEAD").strip()
    assert ok(ocr(repo, llm, "status")).stdout == (
        "commits not on origin/main without a review note: 0\n")
    before = len(llm.requests)
    p = ok(run(repo, llm, "git", "push", "origin", "main"))
    assert len(llm.requests) == before
    lines = (p.stdout + p.stderr).splitlines()
    assert f"reviewed at commit time: {d[:12]} (session {note_field(repo, d, 'session')})" in lines
    assert "reviewed: nothing (no new commits to push)" not in lines


def note_field(repo: GitRepo, commit: str, key: str) -> str:
    for line in repo.git("notes", f"--ref={NOTES}", "show", commit).splitlines():
        if line.startswith(f"{key}: "):
            return line.removeprefix(f"{key}: ")
    raise AssertionError(f"no {key} in the note of {commit}")


def test_trust_notes_false_reviews_every_commit(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    ids = setup(repo, llm, tmp_path)
    off = {"OCR_HOOK_REVIEW_TRUST_NOTES": "false"}
    assert ok(ocr(repo, llm, "status", **off)).stdout == (
        "commits not on any remote-tracking ref without a review note: 3\n"
        f"  {ids['A'][:12]} add A\n  {ids['B'][:12]} add B, reworded\n  {ids['C'][:12]} add C\n"
        "review notes are not trusted (review.trust_notes = false): a push reviews every"
        " commit\n")
    before = len(llm.requests)
    p = ok(run(repo, llm, "git", "push", "origin", "main", **off))
    text = sent(llm, before)
    assert all(v in text for v in ("alpha_value", "beta_value", "gamma_value"))
    assert "reviewed at commit time" not in p.stdout + p.stderr
    assert (f"reviewed refs/heads/main: (empty tree)..{ids['C'][:12]} (3 commits)"
            in (p.stdout + p.stderr).splitlines())


def test_a_post_commit_failure_never_fails_the_commit(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    ok(ocr(repo, llm, "install"))
    # the notes ref names a blob: `git notes add` cannot commit on top of it
    blob = repo.git("hash-object", "-w", "--stdin", input=b"not a notes commit\n").strip()
    repo.git("update-ref", NOTES, blob)
    repo.write({"a.py": "alpha_value = 1\n"})
    repo.git("add", "-A")
    p = run(repo, llm, "git", "commit", "-q", "-m", "add A")
    assert p.returncode == 0, p.stderr
    assert "ocr-hook: review note not written: " in p.stderr
    assert repo.git("log", "--format=%s").splitlines() == ["add A"]
    assert not (repo.path / ".git" / "ocr-hook-reviewed.json").exists()  # one commit per review
    # uninstall removes the post-commit hook with the pre-commit hook
    out = ok(ocr(repo, llm, "uninstall", "--pre-commit")).stdout
    assert f"removed post-commit hook: {repo.path / '.git' / 'hooks' / 'post-commit'}" in out
    assert not (repo.path / ".git" / "hooks" / "post-commit").exists()



def test_after_the_first_unnoted_commit_one_range_at_the_tip_limited_to_its_files(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    ok(ocr(repo, llm, "install"))
    ids = {}
    for name, hooked in (("R", False), ("A", True), ("B", False), ("C", True), ("D", False)):
        repo.write({f"{name.lower()}.py": f"{name.lower()}_value = 1\n"})
        repo.git("add", "-A")
        ok(run(repo, llm, "git", "commit", "-q", *(() if hooked else ("--no-verify",)),
               "-m", f"add {name}"))
        ids[name] = repo.git("rev-parse", "HEAD").strip()
    before = len(llm.requests)
    data = json.loads(ok(ocr(repo, llm, "review", "--from", ids["R"], "--to", ids["D"],
                             "--format", "json")).stdout)
    # A (leading, noted) is left out; A..D is one range, only the files of B and D
    assert (data["input"]["base"], data["input"]["head"]) == (ids["A"], ids["D"])
    assert "ranges" not in data["input"]
    assert [c["commit"] for c in data["input"]["reviewed_at_commit"]] == [ids["A"], ids["C"]]
    assert [f["path"] for f in data["files"]] == ["b.py", "d.py"]
    assert len(llm.requests) == before + 1
    text = sent(llm, before)
    assert "b_value" in text and "d_value" in text and "a_value" not in text
    assert "c_value" not in text
    out = ok(ocr(repo, llm, "review", "--from", ids["R"], "--to", ids["D"])).stdout.splitlines()
    sessions = {n: note_field(repo, ids[n], "session") for n in "AC"}
    assert [line for line in out if line.startswith("reviewed")] == [
        f"reviewed: {ids['A'][:12]}..{ids['D'][:12]}",
        f"reviewed at commit time: {ids['A'][:12]} (session {sessions['A']})",
        f"reviewed at commit time: {ids['C'][:12]} (session {sessions['C']})"]
    # a merge in the range: reviewed whole, nothing left out
    repo.git("checkout", "-q", "-b", "side", ids["R"])
    repo.write({"e.py": "e_value = 1\n"})
    repo.git("add", "-A")
    ok(run(repo, llm, "git", "commit", "-q", "--no-verify", "-m", "add E"))
    repo.git("checkout", "-q", "main")
    ok(run(repo, llm, "git", "merge", "-q", "--no-ff", "--no-verify", "-m", "merge", "side"))
    data = json.loads(ok(ocr(repo, llm, "review", "--from", ids["R"], "--to", "HEAD",
                             "--format", "json")).stdout)
    assert "reviewed_at_commit" not in data["input"] and "ranges" not in data["input"]
    assert [f["path"] for f in data["files"]] == ["a.py", "b.py", "c.py", "d.py", "e.py"]


def test_status_checks_the_newest_200_commits(repo: GitRepo, llm: ScriptedLLM) -> None:
    stream = "".join(
        f"commit refs/heads/main\ncommitter T <t@example.com> {1700000000 + i} +0000\n"
        f"data {len(f'c{i}')}\nc{i}\nM 644 inline f.txt\ndata {len(str(i)) + 1}\n{i}\n\n"
        for i in range(201))
    repo.git("fast-import", "--quiet", input=stream.encode())
    out = ok(ocr(repo, llm, "status")).stdout.splitlines()
    assert out[0] == ("commits not on any remote-tracking ref without a review note: 200"
                      " (of the newest 200)")
    assert [line.split()[1] for line in out[1:]] == [f"c{i}" for i in range(1, 201)]


def test_a_range_cut_to_its_newest_commits_keeps_naming_the_older_ones(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    repo.git("remote", "add", "origin", str(init_bare(tmp_path / "remote.git", repo.env)))
    ok(ocr(repo, llm, "install", "--pre-commit", "--pre-push"))
    ids = {}
    for name, hooked in (("R", False), ("A", False), ("B", True), ("C", False)):
        repo.write({f"{name.lower()}.py": f"{name.lower()}_value = 1\n"})
        repo.git("add", "-A")
        ok(run(repo, llm, "git", "commit", "-q", *(() if hooked else ("--no-verify",)),
               "-m", f"add {name}"))
        ids[name] = repo.git("rev-parse", "HEAD").strip()
    before = len(llm.requests)
    p = ok(run(repo, llm, "git", "push", "origin", "main", OCR_HOOK_REVIEW_MAX_PUSH_COMMITS="3"))
    short = {k: v[:12] for k, v in ids.items()}
    assert [line for line in (p.stdout + p.stderr).splitlines()
            if line.startswith("reviewed")] == [
        f"reviewed refs/heads/main: {short['R']}..{short['C']} (3 commits); 1 older commit(s) not"
        f" reviewed ((empty tree)..{short['R']})",
        f"reviewed at commit time: {short['B']} (session {note_field(repo, ids['B'], 'session')})"]
    text = sent(llm, before)
    assert "a_value" in text and "c_value" in text and "b_value" not in text


def test_content_an_unnoted_commit_wrote_is_followed_through_a_noted_rename(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    """X rewrites a.py without the hook; Y, reviewed at commit time, renames it to b.py with
    a small edit (its own diff shows only that edit). The push range after X is limited to
    X's files, and the limit follows Y's rename: what X wrote is reviewed at b.py, which the
    range (base to Y) shows as added, unpaired with the base's a.py."""
    ok(ocr(repo, llm, "install"))
    body = "".join(f"def helper_{i}(value):\n    return value + {i}\n\n" for i in range(12))
    repo.write({"a.py": body})
    repo.git("add", "-A")
    ok(run(repo, llm, "git", "commit", "-q", "--no-verify", "-m", "base"))
    base = repo.git("rev-parse", "HEAD").strip()
    rewrite = "".join(f"def runner_{i}(text):\n    return eval(text)  # step {i}\n\n"
                      for i in range(12))
    repo.write({"a.py": rewrite})  # nothing like the base: the range pairs no rename
    repo.git("add", "-A")
    ok(run(repo, llm, "git", "commit", "-q", "--no-verify", "-m", "X"))
    repo.git("mv", "a.py", "b.py")
    repo.write({"b.py": (repo.path / "b.py").read_text().replace("step 11", "step 12")})
    repo.git("add", "-A")
    before = len(llm.requests)
    ok(run(repo, llm, "git", "commit", "-q", "-m", "Y: rename"))
    assert len(llm.requests) == before + 1  # Y reviewed at commit time: a rename, one edit
    y = repo.git("rev-parse", "HEAD").strip()
    assert note_field(repo, y, "verdict") == "pass"
    before = len(llm.requests)
    data = json.loads(ok(ocr(repo, llm, "review", "--from", base, "--to", y,
                             "--format", "json")).stdout)
    assert [c["commit"] for c in data["input"]["reviewed_at_commit"]] == [y]
    assert sorted((f["path"], f["status"]) for f in data["files"]) == [
        ("a.py", "deleted"), ("b.py", "added")]
    assert len(llm.requests) == before + 1
    assert "eval(text)" in sent(llm, before)


def test_a_push_left_with_nothing_to_review_ends_the_blocked_push_chain(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    """A push blocked on a --no-verify commit; its fix, reviewed at commit time, undoes it: the
    next push has nothing left to review, passes, and ends the push's since-last chain."""
    remote = init_bare(tmp_path / "remote.git", repo.env)
    repo.git("remote", "add", "origin", str(remote))
    ok(ocr(repo, llm, "install", "--pre-commit", "--pre-push"))
    repo.write({"a.py": "value = 1\n"})
    repo.git("add", "-A")
    ok(run(repo, llm, "git", "commit", "-q", "--no-verify", "-m", "base"))
    ok(run(repo, llm, "git", "push", "-q", "--no-verify", "origin", "main"))
    repo.write({"a.py": "value = eval(text)\n"})
    repo.git("add", "-A")
    ok(run(repo, llm, "git", "commit", "-q", "--no-verify", "-m", "X"))
    llm.tool_calls(("code_comment", {"comments": [{
        "path": "a.py", "existing_code": "value = eval(text)", "severity": "critical",
        "category": "security", "content": "eval of input."}]}), ("task_done", {"state": "DONE"}))
    assert run(repo, llm, "git", "push", "origin", "main").returncode == 1
    state = repo.path / ".git" / "ocr-hook" / "since_last.json"
    assert list(json.loads(state.read_text())["blocked"]) == ["range refs/heads/main"]
    repo.write({"a.py": "value = 1\n"})
    repo.git("add", "-A")
    llm.tool_calls(("task_done", {"state": "DONE"}))
    ok(run(repo, llm, "git", "commit", "-q", "-m", "undo X"))
    before = len(llm.requests)
    p = ok(run(repo, llm, "git", "push", "origin", "main"))
    assert len(llm.requests) == before
    assert "reviewed at commit time" in p.stdout + p.stderr
    assert json.loads(state.read_text())["blocked"] == {}
