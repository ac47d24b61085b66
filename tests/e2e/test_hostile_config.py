"""A hostile repository file and bad settings (spec §14.4): paths named by ``.ocr-hook.toml``
stay inside the repository and are read from HEAD; its provider, protocol and extra fields
cannot redirect the user's key without consent; every bad setting is a usage error (exit 2,
one line), also in hooks. Real: git repositories, ``cli.main``, the scripted loopback model
(which records every request), ``config.repo_file``'s pure rules."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ocr_hook import cli
from ocr_hook.config.layering import Layer
from ocr_hook.config.repo_file import needs_endpoint_consent, repo_relative
from ocr_hook.errors import ConfigError
from ocr_hook.util import resources
from tests.support.cli import cli_environ, run_cli
from tests.support.gitrepo import GitRepo
from tests.support.home import write_user_config
from tests.support.scripted_llm import ScriptedLLM

SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAA-outside-secret"
APP = {"app.py": "def f(x):\n    return x\n"}


def sent(llm: ScriptedLLM) -> str:
    """Every request body and header the model server received, as one text."""
    return json.dumps(llm.requests) + json.dumps(llm.headers)


# --- paths named by the repository file ------------------------------------------------------


@pytest.mark.parametrize("key", ["review.background_file", "rules.file", "tools.file"])
@pytest.mark.parametrize("where", ["absolute", "home", "dotdot", "untracked"])
def test_repository_file_cannot_name_a_file_outside_the_repository(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], tmp_path: Path, key: str, where: str,
) -> None:
    home = Path(os.environ["HOME"])
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text(SECRET)
    (tmp_path / "outside.txt").write_text(SECRET)
    value = {"absolute": str(tmp_path / "outside.txt"), "home": "~/.ssh/id_rsa",
             "dotdot": "../outside.txt", "untracked": "notes.txt"}[where]
    section, name = key.split(".")
    repo.commit({".ocr-hook.toml": f"[{section}]\n{name} = {json.dumps(value)}\n"}, "config")
    repo.write({"notes.txt": SECRET})  # in the work tree, never committed
    repo.stage(APP)
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review", "--effort", "low"], llm.env(), capsys)
    assert rc == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("ocr-hook: ") and key in lines[0] and repr(value) in lines[0]
    if where != "untracked":
        assert f"invalid {key} = {value!r} in .ocr-hook.toml (HEAD)" in lines[0]
    assert llm.requests == [] and SECRET not in sent(llm)


def test_a_committed_background_file_is_read_from_head_not_the_work_tree(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({".ocr-hook.toml": '[review]\nbackground_file = "./docs/../docs/bg.md"\n',
                 "docs/bg.md": "Committed background: payments module.\n"}, "config")
    repo.write({"docs/bg.md": "Work-tree edit: " + SECRET})
    repo.stage(APP)
    monkeypatch.chdir(repo.path)
    rc, _, err = run_cli(["review", "--effort", "low", "--format", "json"], llm.env(), capsys)
    assert rc == 0, err
    assert len(llm.requests) == 1
    assert "Committed background: payments module." in sent(llm)
    assert SECRET not in sent(llm)


def test_a_committed_tools_file_is_read_from_head(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    shipped = json.loads(resources.read_builtin_text("tools.json"))
    for t in shipped["tools"]:
        if t["name"] == "file_find":
            t["definition"]["description"] = "TEAM DESCRIPTION of file_find"
    repo.commit({".ocr-hook.toml": '[tools]\nfile = "ci/tools.json"\n',
                 "ci/tools.json": json.dumps(shipped)}, "config")
    repo.write({"ci/tools.json": "not json at all"})  # the work tree's copy is never read
    repo.stage(APP)
    monkeypatch.chdir(repo.path)
    rc, _, err = run_cli(["review", "--effort", "low", "--format", "json"], llm.env(), capsys)
    assert rc == 0, err
    assert "TEAM DESCRIPTION of file_find" in sent(llm)
    # the cache key follows the definitions read from HEAD, not the work tree's copy
    repo.write({"ci/tools.json": json.dumps(shipped).replace("TEAM DESCRIPTION", "NEW TEXT")})
    repo.git("commit", "-q", "-m", "tools", "--", "ci/tools.json")
    run_cli(["review", "--effort", "low", "--format", "json"], llm.env(), capsys)
    assert len(llm.requests) == 2 and "NEW TEXT of file_find" in json.dumps(llm.requests[1])


def test_the_user_may_name_any_file_for_the_background(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    (tmp_path / "bg.md").write_text("User background from outside the repository.\n")
    repo.stage(APP)
    monkeypatch.chdir(repo.path)
    env = {**llm.env(), "OCR_HOOK_REVIEW_BACKGROUND_FILE": str(tmp_path / "bg.md")}
    rc, _, err = run_cli(["review", "--effort", "low", "--format", "json"], env, capsys)
    assert rc == 0, err
    assert "User background from outside the repository." in sent(llm)


@pytest.mark.parametrize(("value", "norm"), [
    ("a/b.md", "a/b.md"), ("./a//b.md", "a/b.md"), ("a/../b.md", "b.md"), ("a\\b.md", "a/b.md"),
])
def test_repository_paths_are_normalised_inside_the_repository(value: str, norm: str) -> None:
    assert repo_relative("rules.file", value, "f") == norm


@pytest.mark.parametrize(("value", "why"), [
    ("/etc/passwd", "an absolute path"), ("C:\\x.md", "an absolute path"),
    ("~/x", "a home-directory path"), ("../x", "a path outside the repository"),
    ("a/../../x", "a path outside the repository"), ("", "an empty path"), (".", "not a file"),
])
def test_repository_paths_outside_the_repository_are_refused(value: str, why: str) -> None:
    with pytest.raises(ConfigError, match=f"in f: {why};"):
        repo_relative("rules.file", value, "f")


# --- the key follows the endpoint ------------------------------------------------------------


def layer(**llm: Any) -> Layer:
    return Layer("x", {"llm": llm} if llm else {})


@pytest.mark.parametrize(("repo", "below", "above", "needed"), [
    # the user configured nothing: a preset's own key variable goes where the preset says
    ({"provider": "deepseek"}, layer(), layer(), []),
    # the user's own provider or key would be redirected
    ({"provider": "ollama"}, layer(provider="openai", api_key="k"), layer(), ["provider"]),
    ({"provider": "ollama"}, layer(), layer(api_key="k"), ["provider"]),
    ({"protocol": "anthropic"}, layer(base_url="http://127.0.0.1:1/v1"), layer(), ["protocol"]),
    # the same value, or one the environment/flags override anyway, changes nothing
    ({"provider": "openai"}, layer(provider="openai", api_key="k"), layer(), []),
    ({"provider": "ollama"}, layer(api_key="k"), layer(provider="openai"), []),
    # where requests go, and what they carry, always needs consent
    ({"base_url": "http://x"}, layer(), layer(), ["base_url"]),
    ({"extra_body": {"a": 1}, "extra_headers": {"h": "v"}}, layer(), layer(),
     ["extra_body", "extra_headers"]),
])
def test_which_repository_endpoint_settings_need_consent(
    repo: dict[str, Any], below: Layer, above: Layer, needed: list[str],
) -> None:
    assert sorted(needs_endpoint_consent(repo, [below], [above])) == needed


def test_repository_provider_cannot_send_the_users_key_to_another_preset(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_user_config('[llm]\nprovider = "openai"\napi_key = "user-key-123"\nmodel = "m"\n')
    # ollama is http://localhost:11434/v1: the key would leave for another local port
    repo.commit({".ocr-hook.toml": '[llm]\nprovider = "ollama"\n'}, "config")
    repo.stage(APP)
    monkeypatch.chdir(repo.path)
    env = {"OPENAI_BASE_URL": llm.url}  # the user's own URL for the openai preset
    rc, _, err = run_cli(["review", "--effort", "low", "--format", "json"], env, capsys)
    assert rc == 0, err
    assert "ignoring llm.provider from .ocr-hook.toml (HEAD)" in err
    assert len(llm.requests) == 1
    assert llm.headers[0]["authorization"] == "Bearer user-key-123"


def test_repository_protocol_switch_and_extra_body_wait_for_consent(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({".ocr-hook.toml": '[llm]\nprotocol = "anthropic"\n'
                                   'extra_body = { temperature = 0.5 }\n'}, "config")
    repo.stage(APP)
    monkeypatch.chdir(repo.path)
    rc, _, err = run_cli(["review", "--effort", "low", "--format", "json"], llm.env(), capsys)
    assert rc == 0, err
    # OCR_LLM_PROTOCOL is set by the user here, so only extra_body is held back
    assert "ignoring llm.extra_body from .ocr-hook.toml (HEAD)" in err
    assert llm.paths == ["/v1/chat/completions"] and "temperature" not in llm.requests[0]
    env = {k: v for k, v in llm.env().items() if k != "OCR_LLM_PROTOCOL"}
    rc, _, err = run_cli(["review", "--effort", "low", "--format", "json", "--no-cache"], env,
                         capsys)
    assert "ignoring llm.protocol, llm.extra_body from .ocr-hook.toml (HEAD)" in err
    assert llm.paths[1:] == ["/v1/chat/completions"]
    assert "x-api-key" not in llm.headers[1]
    assert cli.main(["config", "allow-endpoint"], environ=cli_environ(env)) == 0
    capsys.readouterr()
    run_cli(["review", "--effort", "low", "--format", "json", "--no-cache"], env, capsys)
    # trusted now: the Anthropic wire format, at {base}/messages for a base ending in /v1
    assert llm.paths[2] == "/v1/messages" and llm.headers[2]["x-api-key"] == "test-token"
    assert llm.requests[2]["temperature"] == 0.5


@pytest.mark.parametrize("field", ["messages", "model", "tools", "stream"])
def test_extra_body_may_not_replace_the_requests_own_fields(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], field: str,
) -> None:
    repo.stage(APP)
    monkeypatch.chdir(repo.path)
    env = {**llm.env(), "OCR_HOOK_LLM_EXTRA_BODY": json.dumps({field: [], "top_k": 5})}
    rc, out, err = run_cli(["review", "--effort", "low"], env, capsys)
    assert rc == 2 and out == "" and llm.requests == []
    [line] = err.splitlines()
    assert line.startswith(f"ocr-hook: invalid llm.extra_body = {{'{field}': [], 'top_k': 5}}"
                           " in environment")
    assert f"may not set {field}" in line


# --- bad settings are usage errors -----------------------------------------------------------


@pytest.mark.parametrize(("env", "shown"), [
    ({"OCR_LLM_URL": "not a url"}, "invalid llm.base_url = 'not a url' in environment"),
    ({"OCR_LLM_URL": "ftp://127.0.0.1/v1"},
     "invalid llm.base_url = 'ftp://127.0.0.1/v1' in environment"),
    ({"OCR_LLM_URL": "http://"}, "invalid llm.base_url = 'http://' in environment"),
    ({"OCR_LLM_URL": "http://127.0.0.1:port/v1"},
     "invalid llm.base_url = 'http://127.0.0.1:port/v1' in environment"),
    ({"OCR_HOOK_REVIEW_TIMEOUT_S": "inf"}, "invalid review.timeout_s = 'inf' in environment"),
    ({"OCR_HOOK_REVIEW_TIMEOUT_S": "nan"}, "invalid review.timeout_s = 'nan' in environment"),
    ({"OCR_HOOK_REVIEW_TIMEOUT_S": "1e300"},
     "invalid review.timeout_s = '1e300' in environment"),
    ({"OCR_HOOK_LLM_TIMEOUT_S": "inf"}, "invalid llm.timeout_s = 'inf' in environment"),
    ({"OCR_HOOK_REVIEW_MAX_GROUP_TOKENS": "-1"},
     "invalid review.max_group_tokens = '-1' in environment"),
    ({"GIT_INDEX_FILE": "missing-index"}, "GIT_INDEX_FILE='missing-index': no such index file"),
])
@pytest.mark.parametrize("command", [["review"], ["hook", "pre-commit"]])
def test_every_bad_setting_is_a_usage_error_with_one_line(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], env: dict[str, str], shown: str, command: list[str],
) -> None:
    repo.stage(APP)
    monkeypatch.chdir(repo.path)
    base = llm.env()
    if "OCR_LLM_URL" in env:
        del base["OCR_LLM_URL"]
    rc, out, err = run_cli(command, {**base, **env}, capsys)
    assert rc == 2 and out == "" and llm.requests == []
    lines = err.splitlines()
    assert lines[0].startswith(f"ocr-hook: {shown}"), err
    assert "Traceback" not in err
    # a hook adds how to bypass it once; `review` prints the one line only
    assert len(lines) == (2 if command[0] == "hook" else 1), err


@pytest.mark.parametrize(("env", "shown"), [
    ({"OCR_HOOK_LLM_EXTRA_HEADERS": '{"X-Team": "a\\r\\nInjected: 1"}'},
     "invalid llm.extra_headers = {'X-Team': 'a\\r\\nInjected: 1'} in environment"),
    ({"OCR_HOOK_LLM_EXTRA_HEADERS": '{"Bad Name": "v"}'},
     "invalid llm.extra_headers = {'Bad Name': 'v'} in environment"),
    ({"OCR_LLM_TOKEN": "sk-secret\nvalue"}, "invalid llm.api_key = '(hidden)' in environment"),
])
def test_settings_http_cannot_send_are_usage_errors_and_never_print_the_key(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], env: dict[str, str], shown: str,
) -> None:
    repo.stage(APP)
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review"], {**llm.env(), **env}, capsys)
    assert rc == 2 and out == "" and llm.requests == []
    [line] = err.splitlines()
    assert line.startswith(f"ocr-hook: {shown}"), line
    assert "sk-secret" not in err
