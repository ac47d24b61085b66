"""Commands that are not git on the user's repository run without the repo-local ``GIT_*``
variables (githooks(5)): ``llm.api_key_cmd``, MCP set-up commands and MCP servers.

Real: git, a linked worktree, the native hook installed by ``git ocr install`` and fired by a
real ``git commit`` (git sets ``GIT_DIR`` and ``GIT_INDEX_FILE`` for it), shell key helpers,
a stdio MCP server process, HTTP to the loopback model. Fake: the model's replies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ocr_hook.git import process
from ocr_hook.hooks import native
from tests.support.gitrepo import GitRepo
from tests.support.home import write_user_config
from tests.support.mcp_servers import SCRIPT
from tests.support.scripted_llm import ScriptedLLM

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
PY = sys.executable

# A key helper that keeps its own scratch repository: with the hook's GIT_DIR/GIT_INDEX_FILE
# inherited, `git add` here would stage helper-note.txt into the commit being made.
KEY_HELPER = (
    'd=$(mktemp -d) && cd "$d" && git init -q && echo scratch > helper-note.txt'
    ' && git add helper-note.txt && printf "%s\\n" "$GIT_DIR|$GIT_INDEX_FILE" > {seen}'
    ' && echo sk-from-helper'
)


def test_local_env_vars_match_git() -> None:
    out = subprocess.run(["git", "rev-parse", "--local-env-vars"], capture_output=True,
                         text=True, check=True).stdout.split()
    assert sorted(process.LOCAL_ENV_VARS) == sorted(out)


def linked_worktree(repo: GitRepo, tmp_path: Path) -> GitRepo:
    repo.commit({"README.md": "hi\n"}, "init")
    return repo.linked_worktree(tmp_path / "linked")


def commit_in_hook(wt: GitRepo, llm: ScriptedLLM, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**wt.env, **llm.env(OCR_HOOK_EFFORT="low", OCR_HOOK_REVIEW_FILTER="false"),
            "PATH": SYSTEM_PATH, **env}
    full.pop("OCR_LLM_TOKEN")  # the key must come from llm.api_key_cmd
    full.pop("VIRTUAL_ENV", None)
    return subprocess.run(["git", "commit", "-q", "-m", "add app"], cwd=wt.path, env=full,
                          capture_output=True, text=True, timeout=120)


def test_api_key_cmd_in_a_linked_worktree_hook_cannot_touch_the_commit(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    wt = linked_worktree(repo, tmp_path)
    native.install(wt.path, ["pre-commit"])
    seen = tmp_path / "key-helper-env"
    wt.stage({"app.py": "X = 1\n"})
    p = commit_in_hook(wt, llm, OCR_HOOK_LLM_API_KEY_CMD=KEY_HELPER.format(seen=seen))
    assert p.returncode == 0, p.stderr
    assert len(llm.requests) == 1
    assert llm.headers[0]["authorization"] == "Bearer sk-from-helper"
    assert seen.read_text() == "|\n"  # neither GIT_DIR nor GIT_INDEX_FILE reached the helper
    tree = wt.git("ls-tree", "-r", "--name-only", "HEAD").split()
    assert tree == ["README.md", "app.py"]
    assert wt.git("status", "--porcelain") == ""


def test_mcp_setup_and_server_in_a_linked_worktree_hook_see_no_repo_variables(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    wt = linked_worktree(repo, tmp_path)
    native.install(wt.path, ["pre-commit"])
    dump = ("import os, sys; open(sys.argv[1], 'w').write("
            "'|'.join(os.environ.get(k, '') for k in ('GIT_DIR', 'GIT_INDEX_FILE', 'GIT_PREFIX')))")
    serve = dump.replace("sys.argv[1]", "sys.argv[2]") + "; import runpy; sys.argv = sys.argv[:1]" \
        " + ['envsrv']; runpy.run_path(" + repr(SCRIPT) + ", run_name='__main__')"
    setup_seen, server_seen = tmp_path / "setup-env", tmp_path / "server-env"
    write_user_config(
        "[mcp.servers.envsrv]\n"
        f"command = {json.dumps(PY)}\n"
        f"args = {json.dumps(['-c', serve, 'x', str(server_seen)])}\n"
        f"setup = {json.dumps([PY, '-c', dump, str(setup_seen)])}\n"
    )
    wt.stage({"app.py": "X = 1\n"})
    llm.tool_calls(("add", {"a": 1, "b": 2}))
    llm.tool_calls(("task_done", {"state": "DONE"}))
    p = commit_in_hook(wt, llm, OCR_HOOK_LLM_API_KEY="k")
    assert p.returncode == 0, p.stderr
    assert len(llm.requests) == 2
    assert [m["content"] for m in llm.requests[1]["messages"] if m["role"] == "tool"] == ["3"]
    assert setup_seen.read_text() == "||"
    assert server_seen.read_text() == "||"
    assert wt.git("ls-tree", "-r", "--name-only", "HEAD").split() == ["README.md", "app.py"]


@pytest.mark.parametrize("env_name", ["GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE"])
def test_run_command_drops_each_local_variable(env_name: str) -> None:
    rc, out, _ = process.run_command(f'printf "%s" "${{{env_name}-unset}}"', 5,
                                   env={**os.environ, env_name: "/somewhere", "KEEP": "1"})
    assert (rc, out) == (0, b"unset")
    rc, out, _ = process.run_command('printf "%s" "$KEEP"', 5, env={**os.environ, "KEEP": "1"})
    assert (rc, out) == (0, b"1")
