"""Pushed ranges end to end (spec §3.4): real ``git push`` to a local bare remote with a native
pre-push hook that runs ``git ocr hook pre-push "$@"``, and the pre-commit framework's real
pre-push stage with a ``language: system`` local hook. Real: git, the hook protocol, pre-commit,
HTTP to the scripted loopback model (fake: only the model's replies)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_cli
from tests.support.gitrepo import GitRepo, home_repo, init_bare
from tests.support.scripted_llm import ScriptedLLM

EMPTY = "(empty tree)"


class Pusher:
    """A repository with a bare remote ``origin`` and a native pre-push hook that writes the
    review JSON to ``out``."""

    def __init__(self, repo: GitRepo, tmp_path: Path, object_format: str = "sha1") -> None:
        self.repo = repo
        self.out = tmp_path / "push-review.json"
        self.remote = init_bare(tmp_path / "remote.git", repo.env, object_format)
        repo.git("remote", "add", "origin", str(self.remote))
        hook = repo.path / ".git" / "hooks" / "pre-push"
        hook.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ocr_hook.cli hook pre-push "$@" '
                        f'--format json --output "{self.out}"\n')
        hook.chmod(0o755)

    def push(self, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
        self.out.unlink(missing_ok=True)
        p = subprocess.run(["git", "push", "-q", *args], cwd=self.repo.path,
                           env={**self.repo.env, **(env or {})}, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        self.stderr = p.stderr
        data: dict[str, Any] = json.loads(self.out.read_text())
        return data

    def rev(self, ref: str) -> str:
        return self.repo.git("rev-parse", ref).strip()


def rng(ref: str, base: str, head: str, commits: int = 1) -> dict[str, Any]:
    """One entry of JSON ``input.ranges``: the reviewed ``base..head`` of ``ref``."""
    return {"ref": ref, "base": base, "head": head, "commits": commits}


def reviewed(data: dict[str, Any]) -> list[str]:
    return [f["path"] for f in data["files"]]


def test_first_push_new_branch_and_second_push(repo: GitRepo, tmp_path: Path) -> None:
    pusher = Pusher(repo, tmp_path)
    c1 = repo.commit({"a.py": "a = 1\n"}, "c1")
    data = pusher.push("origin", "main")
    assert data["input"]["mode"] == "push"
    assert data["input"]["ranges"] == [rng("refs/heads/main", EMPTY, c1)]
    assert reviewed(data) == ["a.py"]
    # a new branch from main: only its own commits
    repo.git("checkout", "-q", "-b", "feature")
    f1 = repo.commit({"f.py": "f = 1\n"}, "f1")
    f2 = repo.commit({"g.py": "g = 1\n"}, "f2")
    data = pusher.push("origin", "feature")
    assert data["input"]["ranges"] == [rng("refs/heads/feature", c1, f2, 2)]
    assert reviewed(data) == ["f.py", "g.py"]
    # second push of the branch: from the remote tip on
    f3 = repo.commit({"f.py": "f = 3\n"}, "f3")
    data = pusher.push("origin", "feature")
    assert data["input"]["ranges"] == [rng("refs/heads/feature", f2, f3)]
    assert [(f["path"], f["status"]) for f in data["files"]] == [("f.py", "modified")]
    assert f1 != f2


def test_first_push_to_an_empty_remote_reviews_the_newest_commits_and_names_the_rest(
    repo: GitRepo, tmp_path: Path, llm: ScriptedLLM,
) -> None:
    pusher = Pusher(repo, tmp_path)
    c = [repo.commit({f"m{i}.py": f"V = {i}\n"}, f"c{i}") for i in range(8)]
    env = llm.env(OCR_HOOK_REVIEW_MAX_PUSH_COMMITS="3", OCR_HOOK_EFFORT="low",
                  OCR_HOOK_REVIEW_FILTER="false")
    data = pusher.push("origin", "main", env=env)
    assert data["input"]["ranges"] == [{
        "ref": "refs/heads/main", "base": c[4], "head": c[7], "commits": 3,
        "not_reviewed_commits": 5, "not_reviewed_base": EMPTY}]
    assert [(f["path"], f["reviewed"]) for f in data["files"]] == [
        ("m5.py", True), ("m6.py", True), ("m7.py", True)]
    assert (data["status"], data["summary"]["llm_calls"], len(llm.requests)) == ("complete", 1, 1)
    line = (f"refs/heads/main: reviewed the newest 3 commit(s) {c[4]}..{c[7]}; 5 older commit(s)"
            f" not reviewed ({EMPTY}..{c[4]}); raise review.max_push_commits to include them")
    assert data["warnings"] == [{"type": "commits_not_reviewed", "file": "", "message": line}]
    assert f"ocr-hook: {line}" in pusher.stderr.splitlines()
    # the next push reviews only what the remote does not have yet
    c8 = repo.commit({"m8.py": "V = 8\n"}, "c8")
    data = pusher.push("origin", "main", env=env)
    assert data["input"]["ranges"] == [rng("refs/heads/main", c[7], c8)]
    assert reviewed(data) == ["m8.py"] and len(llm.requests) == 2
    # text and SARIF name the reviewed range too (a remote name with no refs: all is new)
    stdin = f"refs/heads/main {c8} refs/heads/main {'0' * 40}\n"
    for fmt in ("text", "sarif"):
        p = subprocess.run([sys.executable, "-m", "ocr_hook.cli", "hook", "pre-push", "other",
                            "url", "--format", fmt], cwd=repo.path, input=stdin, text=True,
                           capture_output=True, env={**repo.env, **env})
        assert p.returncode == 0, p.stderr
        if fmt == "text":
            assert (f"reviewed refs/heads/main: {c[5][:12]}..{c8[:12]} (3 commits); 6 older"
                    f" commit(s) not reviewed ({EMPTY}..{c[5][:12]})") in p.stdout.splitlines()
        else:
            props = json.loads(p.stdout)["runs"][0]["properties"]
            assert props["input"]["ranges"] == [{
                "ref": "refs/heads/main", "base": c[5], "head": c8, "commits": 3,
                "not_reviewed_commits": 6, "not_reviewed_base": EMPTY}]
    assert len(llm.requests) == 3  # the SARIF run was answered from the cache


def test_push_review_never_sends_a_request_the_token_budget_cannot_cover(
    repo: GitRepo, tmp_path: Path, llm: ScriptedLLM,
) -> None:
    pusher = Pusher(repo, tmp_path)
    repo.commit({"a.py": "a = 1\n"}, "c1")
    # the default max output alone (16384 tokens) does not fit in 10000
    env = llm.env(OCR_HOOK_MAX_TOKENS_BUDGET="10000", OCR_HOOK_REVIEW_FILTER="false")
    data = pusher.push("origin", "main", env=env)
    assert llm.requests == []
    assert (data["status"], data["verdict"]) == ("failed", "incomplete")
    assert [(f["path"], f["reason"]) for f in data["files"]] == [("a.py", "budget")]
    assert data["summary"]["input_tokens"] + data["summary"]["output_tokens"] == 0


def test_force_push_reviews_from_the_merge_base(repo: GitRepo, tmp_path: Path) -> None:
    pusher = Pusher(repo, tmp_path)
    c1 = repo.commit({"a.py": "a = 1\n"}, "c1")
    repo.commit({"b.py": "b = 1\n"}, "c2")
    pusher.push("origin", "main")
    repo.git("reset", "-q", "--hard", c1)
    c2b = repo.commit({"c.py": "c = 1\n"}, "c2 rewritten")
    data = pusher.push("--force", "origin", "main")
    assert data["input"]["ranges"] == [rng("refs/heads/main", c1, c2b)]
    assert reviewed(data) == ["c.py"]


def test_force_push_over_a_remote_tip_unknown_here(
    repo: GitRepo, tmp_path: Path,
) -> None:
    pusher = Pusher(repo, tmp_path)
    c1 = repo.commit({"a.py": "a = 1\n"}, "c1")
    pusher.push("origin", "main")
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(pusher.remote), str(other)], env=repo.env,
                   check=True)
    (other / "theirs.py").write_text("t = 1\n")
    for args in (["add", "theirs.py"], ["commit", "-q", "-m", "theirs"], ["push", "-q"]):
        subprocess.run(["git", *args], cwd=other, env=repo.env, check=True)
    mine = repo.commit({"mine.py": "m = 1\n"}, "mine")
    data = pusher.push("--force", "origin", "main")
    assert data["input"]["ranges"] == [rng("refs/heads/main", c1, mine)]
    assert reviewed(data) == ["mine.py"]


def test_deletion_reviews_nothing(repo: GitRepo, tmp_path: Path) -> None:
    pusher = Pusher(repo, tmp_path)
    repo.commit({"a.py": "a = 1\n"}, "c1")
    pusher.push("origin", "main", "main:old")
    data = pusher.push("origin", ":old")
    assert (data["status"], data["verdict"], data["files"]) == ("skipped", "pass", [])
    assert data["input"]["ranges"] == []


def test_push_of_two_branches_reviews_each_range_with_its_own_tree(
    repo: GitRepo, tmp_path: Path, llm: ScriptedLLM,
) -> None:
    pusher = Pusher(repo, tmp_path)
    c1 = repo.commit({"a.py": "a = 1\n"}, "c1")
    pusher.push("origin", "main")
    repo.git("checkout", "-q", "-b", "topic")
    t1 = repo.commit({"shared.py": "TOPIC_VERSION = 1\n"}, "topic")
    repo.git("checkout", "-q", "main")
    m2 = repo.commit({"shared.py": "MAIN_VERSION = 2\n"}, "main")
    llm.tool_calls(("task_done", {"state": "DONE"}))
    llm.tool_calls(("task_done", {"state": "DONE"}))
    data = pusher.push("origin", "main", "topic", env=llm.env())
    assert data["input"]["ranges"] == [
        rng("refs/heads/main", c1, m2),
        rng("refs/heads/topic", c1, t1),
    ]
    assert [(f["path"], f["reviewed"]) for f in data["files"]] == [
        ("shared.py", True), ("shared.py", True)]
    assert (data["status"], data["summary"]["llm_calls"]) == ("complete", 2)
    prompts = [r["messages"][1]["content"] for r in llm.requests]
    assert "MAIN_VERSION = 2" in prompts[0] and "TOPIC_VERSION" not in prompts[0]
    assert "TOPIC_VERSION = 1" in prompts[1] and "MAIN_VERSION" not in prompts[1]


def test_sha256_repository_push_with_64_character_zero_ids(tmp_path: Path) -> None:
    repo = home_repo(tmp_path / "r", object_format="sha256")
    pusher = Pusher(repo, tmp_path, object_format="sha256")
    c1 = repo.commit({"a.py": "a = 1\n"}, "c1")
    data = pusher.push("origin", "main")
    assert len(c1) == 64
    assert data["input"]["ranges"] == [rng("refs/heads/main", EMPTY, c1)]
    c2 = repo.commit({"b.py": "b = 1\n"}, "c2")
    data = pusher.push("origin", "main")
    assert data["input"]["ranges"] == [rng("refs/heads/main", c1, c2)]
    data = pusher.push("origin", ":main")
    assert data["files"] == [] and data["input"]["ranges"] == []


# ---- pre-commit framework -----------------------------------------------------------------------

PRE_COMMIT_CONFIG = """\
repos:
- repo: local
  hooks:
  - id: ocr-review-push
    name: ocr-hook AI code review (pushed commits)
    entry: {python} -m ocr_hook.cli hook pre-push --format json --output {out}
    language: system
    pass_filenames: false
    require_serial: true
    always_run: true
    stages: [pre-push]
"""


def test_pre_commit_framework_pre_push_uses_from_and_to_refs(
    repo: GitRepo, tmp_path: Path,
) -> None:
    out = tmp_path / "pc-review.json"
    remote = tmp_path / "remote.git"
    init_bare(remote, repo.env)
    repo.git("remote", "add", "origin", str(remote))
    c1 = repo.commit({".pre-commit-config.yaml":
                      PRE_COMMIT_CONFIG.format(python=sys.executable, out=out),
                      "a.py": "a = 1\n"}, "c1")
    env = {**repo.env, "PRE_COMMIT_HOME": str(tmp_path / "pc-home")}
    pre_commit = str(Path(sys.executable).parent / "pre-commit")
    subprocess.run([pre_commit, "install", "--hook-type", "pre-push"], cwd=repo.path, env=env,
                   check=True, capture_output=True)

    def push(*args: str) -> dict[str, Any]:
        out.unlink(missing_ok=True)
        p = subprocess.run(["git", "push", "-q", *args], cwd=repo.path, env=env,
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stdout + p.stderr
        data: dict[str, Any] = json.loads(out.read_text())
        return data

    # a root history: pre-commit sets no FROM/TO; the tip is reviewed against the empty tree
    data = push("origin", "main")
    assert data["input"]["ranges"] == [rng("refs/heads/main", EMPTY, c1)]
    assert [f["path"] for f in data["files"]] == [".pre-commit-config.yaml", "a.py"]
    c2 = repo.commit({"b.py": "b = 1\n"}, "c2")
    data = push("origin", "main")
    assert data["input"]["ranges"] == [rng("refs/heads/main", c1, c2)]
    assert [f["path"] for f in data["files"]] == ["b.py"]


def test_pre_push_without_arguments_outside_pre_commit_is_a_usage_error(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"a.py": "a = 1\n"}, "c1")
    monkeypatch.chdir(repo.path)
    rc, _, err = run_cli(["hook", "pre-push"], {}, capsys)
    assert rc == 2
    assert err.splitlines() == [
        "ocr-hook: git ocr hook pre-push: expected REMOTE URL (native pre-push hook, ref lines on"
        " stdin) or PRE_COMMIT_FROM_REF/PRE_COMMIT_TO_REF (pre-commit framework)",
        "ocr-hook: to push anyway, bypass the review once: `git push --no-verify` or"
        " `OCR_HOOK_SKIP=1 git push`",
    ]


def test_push_of_two_unreviewed_ranges_prints_one_not_reviewed_line(
    repo: GitRepo, tmp_path: Path,
) -> None:
    pusher = Pusher(repo, tmp_path)
    repo.commit({"README.md": "hi\n"}, "c1")
    pusher.push("origin", "main")
    repo.git("checkout", "-q", "-b", "topic")
    repo.commit({"t.py": "t = 1\n"}, "topic")
    repo.git("checkout", "-q", "main")
    repo.commit({"m.py": "m = 2\n"}, "main")
    p = subprocess.run(["git", "push", "-q", "origin", "main", "topic"], cwd=repo.path,
                       env=repo.env, capture_output=True, text=True)  # no endpoint configured
    assert p.returncode == 0, p.stderr
    data = json.loads(pusher.out.read_text())
    assert [(f["path"], f["reason"]) for f in data["files"]] == [
        ("m.py", "no_endpoint"), ("t.py", "no_endpoint")]
    assert [ln for ln in p.stderr.splitlines() if "NOT REVIEWED" in ln] == [
        "ocr-hook: NOT REVIEWED: no LLM endpoint configured (missing url, model); set"
        " OCR_LLM_URL, OCR_LLM_MODEL and OCR_LLM_TOKEN (no token for a local server), or"
        " llm.provider and llm.model (`git ocr config set KEY VALUE`); or let your own coding"
        " agent review without an API key: `git ocr delegate` prints the task, `git ocr"
        " delegate submit FILE` records its findings"]


def test_push_text_output_names_the_preview_command_of_the_pushed_range(
    repo: GitRepo, tmp_path: Path,
) -> None:
    out = tmp_path / "push-review.txt"
    remote = tmp_path / "remote.git"
    init_bare(remote, repo.env)
    repo.git("remote", "add", "origin", str(remote))
    hook = repo.path / ".git" / "hooks" / "pre-push"
    hook.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ocr_hook.cli hook pre-push "$@" '
                    f'--output "{out}"\n')
    hook.chmod(0o755)
    base = repo.commit({"README.md": "hi\n"}, "c1")
    subprocess.run(["git", "push", "-q", "origin", "main"], cwd=repo.path, env=repo.env,
                   check=True, capture_output=True)
    built = {f"dist/f{i:02}.js": f"var x{i} = {i};\n" for i in range(22)}
    head = repo.commit({**built, "app.py": "x = 1\n"}, "build")
    p = subprocess.run(["git", "push", "-q", "origin", "main"], cwd=repo.path, env=repo.env,
                       capture_output=True, text=True)  # no endpoint configured
    assert p.returncode == 0, p.stderr
    lines = out.read_text().splitlines()
    command = f"git ocr review --preview --from {base} --to {head}"
    assert "excluded: dist/f19.js (build output)" in lines
    assert "excluded: dist/f20.js (build output)" not in lines
    assert f"excluded: 2 more (2 build output; `{command}` lists every path)" in lines
    # the command it names lists every excluded path of that range
    p = subprocess.run([sys.executable, "-m", "ocr_hook.cli", *command.split()[2:]],
                       cwd=repo.path, env=repo.env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert all(path in p.stdout for path in built) and "app.py" in p.stdout


def test_a_blocked_push_keys_its_chain_on_the_pushed_ref_not_heads_branch(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    from tests.support.samples import APP_PY, SQL_LINE, sql_comment

    repo.commit({"README.md": "hello\n"}, "init")
    repo.git("checkout", "-q", "-b", "feat")
    bug = repo.commit({"app.py": APP_PY}, "the bug")
    repo.git("checkout", "-q", "main")
    env = {**repo.env, **llm.env(OCR_HOOK_REVIEW_FILTER="false")}

    def push(tip: str) -> subprocess.CompletedProcess[str]:
        stdin = f"refs/heads/feat {tip} refs/heads/feat {'0' * 40}\n"
        return subprocess.run([sys.executable, "-m", "ocr_hook.cli", "hook", "pre-push",
                               "other", "url", "--format", "json"], cwd=repo.path, input=stdin,
                              text=True, capture_output=True, env=env, timeout=60)

    llm.tool_calls(("code_comment", sql_comment()), ("task_done", {"state": "DONE"}))
    p = push(bug)
    assert p.returncode == 1, p.stderr
    first = json.loads(p.stdout)
    state = json.loads((repo.path / ".git" / "ocr-hook" / "since_last.json").read_text())
    assert list(state["blocked"]) == ["range refs/heads/feat"]  # HEAD is on main
    repo.git("checkout", "-q", "feat")
    fixed = repo.commit({"app.py": APP_PY.replace(SQL_LINE, "query = ''")}, "the fix")
    repo.git("checkout", "-q", "main")
    llm.tool_calls(("task_done", {"state": "DONE"}))
    p = push(fixed)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["since_last"] == {
        "session": first["session_id"], "resolved": [first["comments"][0]["id"]],
        "persisting": [], "new": [], "carried": [], "dismissed": []}
