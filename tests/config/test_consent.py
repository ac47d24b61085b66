"""Consent for a repository's endpoint settings (``git ocr config allow-endpoint``): kept per
repository (its git common directory, so linked worktrees share it) in its own store, older
records (work-tree key, ``mcp-consent.json``) still honoured; the warning about ignored
settings only from commands that call the LLM. Real: git, worktrees, HTTP to two loopback
models, the consent files; fake: the models' replies."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ocr_hook.config import consent
from tests.support.cli import cli_environ, run_cli
from tests.support.gitrepo import GitRepo
from tests.support.home import user_file, write_user_config
from tests.support.scripted_llm import ScriptedLLM

WARNING = "ignoring llm.base_url from .ocr-hook.toml (HEAD)"


@pytest.fixture
def evil() -> Iterator[ScriptedLLM]:
    server = ScriptedLLM("openai")
    yield server
    server.close()


def setup(repo: GitRepo, llm: ScriptedLLM, evil: ScriptedLLM) -> dict[str, str]:
    """A repository whose committed file points the endpoint at ``evil``; the user's own URL
    (``llm``) is in the user file, below the repository file."""
    repo.commit({".ocr-hook.toml": f'[llm]\nbase_url = "{evil.url}"\n'}, "config")
    env = cli_environ(llm.env(OCR_HOOK_EFFORT="low"))
    del env["OCR_LLM_URL"]
    write_user_config(f'[llm]\nbase_url = "{llm.url}"\n')
    return env


def test_warning_only_where_the_llm_is_called_and_consent_shared_by_worktrees(
    repo: GitRepo, llm: ScriptedLLM, evil: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    env = setup(repo, llm, evil)
    for args in (("cache", "stats"), ("config", "get", "llm.base_url")):
        monkeypatch.chdir(repo.path)
        rc, out, err = run_cli(args, env, capsys, inherit=False)
        assert rc == 0 and err == "", (args, err)
    assert out == f"{llm.url}\n"  # the repository's URL is not in effect
    repo.stage({"app.py": "X = 1\n"})
    llm.tool_calls(("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    rc, _, err = run_cli(["review", "--format", "json"], env, capsys, inherit=False)
    assert rc == 0 and WARNING in err
    assert (len(llm.requests), evil.requests) == (1, [])

    monkeypatch.chdir(repo.path)
    rc, out, _ = run_cli(["config", "allow-endpoint"], env, capsys, inherit=False)
    store = user_file("endpoint-consent.json")
    assert rc == 0 and f"Recorded in {store};" in out
    [entry] = json.loads(store.read_text())["allowed"]
    assert entry["repository"] == str((repo.path / ".git").resolve())
    assert entry["servers"] == [f"llm.base_url = {evil.url!r}"]
    assert not (store.parent / "mcp-consent.json").exists()

    wt = tmp_path / "linked"
    repo.linked_worktree(wt)
    (wt / "app.py").write_text("Y = 2\n")
    repo.git("-C", str(wt), "add", "app.py")
    evil.tool_calls(("task_done", {"state": "DONE"}))
    monkeypatch.chdir(wt)
    rc, _, err = run_cli(["review", "--format", "json", "--no-cache"], env, capsys, inherit=False)
    assert rc == 0 and WARNING not in err, err
    assert (len(llm.requests), len(evil.requests)) == (1, 1)  # trusted in the worktree too


def test_consent_recorded_by_an_earlier_version_still_counts(
    repo: GitRepo, llm: ScriptedLLM, evil: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    env = setup(repo, llm, evil)
    # the old record: in mcp-consent.json, keyed on the work tree's top-level path
    old = user_file("mcp-consent.json")
    fp = consent.consent_fingerprint({"endpoint": {"base_url": evil.url}})
    old.write_text(json.dumps({"version": 1, "allowed": [{
        "repository": str(repo.path), "fingerprint": fp,
        "servers": [f"llm.base_url = {evil.url!r}"], "allowed_at": "2026-01-01T00:00:00+00:00"}]}))
    repo.stage({"app.py": "X = 1\n"})
    evil.tool_calls(("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    rc, _, err = run_cli(["review", "--format", "json"], env, capsys, inherit=False)
    assert rc == 0 and WARNING not in err, err
    assert (llm.requests, len(evil.requests)) == ([], 1)
    monkeypatch.chdir(repo.path)
    rc, _, err = run_cli(["llm", "test", "--json"], env, capsys, inherit=False)
    assert WARNING not in err and len(evil.requests) == 2
