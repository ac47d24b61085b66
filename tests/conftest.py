"""Shared fixtures: isolated HOME/XDG dirs, a real git repository, a scripted loopback LLM."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.gitrepo import SCRUB, GitRepo, home_repo
from tests.support.scripted_llm import ScriptedLLM

_KEYS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
         "OCR_LLM_URL", "OCR_LLM_TOKEN", "OCR_LLM_MODEL", "OCR_LLM_PROTOCOL", "NO_COLOR",
         # a CI service's own variables change the hook's advice (hooks/hosts.py)
         "CI", "GITHUB_ACTIONS", "GITLAB_CI", "LEFTHOOK", "LEFTHOOK_EXCLUDE", "HUSKY",
         "HUSKY_GIT_PARAMS", "SKIP")


@pytest.fixture(autouse=True)
def _isolate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    for k in list(os.environ):
        if k in _KEYS or k in SCRUB or k.startswith(("OCR_HOOK_", "PRE_COMMIT", "OTEL_")):
            monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))  # the usage ledger
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for k, v in (("GIT_AUTHOR_NAME", "Test"), ("GIT_AUTHOR_EMAIL", "test@example.com"),
                 ("GIT_COMMITTER_NAME", "Test"), ("GIT_COMMITTER_EMAIL", "test@example.com")):
        monkeypatch.setenv(k, v)


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return home_repo(tmp_path / "repo")


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    server = ScriptedLLM("openai")
    yield server
    server.close()


@pytest.fixture
def anthropic_llm() -> Iterator[ScriptedLLM]:
    server = ScriptedLLM("anthropic")
    yield server
    server.close()
