"""Issue 28, item 9: a bad setting is one line on stderr and exit 2, never a traceback; the line
names the key, exactly where the value came from (the variable, the command-line option, the
file, or ``git ocr config set KEY``) and what the key takes, in words (never "allowed: int").

Real: ``git ocr`` processes in a temporary git repository with an isolated HOME.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ocr_hook.config import Layer, build_config, merge_layers, parse_value
from ocr_hook.config.layering import env_layer
from ocr_hook.errors import ConfigError
from tests.support.cli import GIT_OCR
from tests.support.gitrepo import GitRepo
from tests.support.home import user_file, write_user_config
from tests.support.scripted_llm import ScriptedLLM


def git_ocr(repo: GitRepo, *args: str, env: dict[str, str] | None = None
            ) -> tuple[int, str, str]:
    """``git ocr ARGS`` as a user runs it (git finds ``git-ocr`` on PATH): (exit code, stdout,
    stderr)."""
    path = f"{GIT_OCR.parent}{os.pathsep}{repo.env.get('PATH', os.environ['PATH'])}"
    p = subprocess.run(["git", "ocr", *args], cwd=repo.path, capture_output=True, text=True,
                       env={**repo.env, "PATH": path, **(env or {})}, timeout=120, check=False)
    return p.returncode, p.stdout, p.stderr


@pytest.fixture
def staged(repo: GitRepo) -> GitRepo:
    repo.commit({"a.py": "x = 1\n"}, "init")
    repo.stage({"a.py": "x = 2\n"})
    return repo


ENV_CASES = [
    ({"OCR_LLM_PROTOCOL": "grpc"},
     "invalid llm.protocol = 'grpc' in environment variable OCR_LLM_PROTOCOL: must be openai or"
     " anthropic"),
    ({"OCR_HOOK_LLM_PROTOCOL": "grpc"},
     "invalid llm.protocol = 'grpc' in environment variable OCR_HOOK_LLM_PROTOCOL: must be"
     " openai or anthropic"),
    ({"OCR_HOOK_REVIEW_CONCURRENCY": "abc"},
     "invalid review.concurrency = 'abc' in environment variable OCR_HOOK_REVIEW_CONCURRENCY:"
     " must be a whole number from 1 to 64"),
    ({"OCR_HOOK_CONCURRENCY": "0"},
     "invalid review.concurrency = '0' in environment variable OCR_HOOK_CONCURRENCY: must be a"
     " whole number from 1 to 64"),
    ({"OCR_HOOK_REVIEW_CONCURRENCY": "1.5"},
     "invalid review.concurrency = '1.5' in environment variable OCR_HOOK_REVIEW_CONCURRENCY:"
     " must be a whole number from 1 to 64"),
    ({"OCR_HOOK_REVIEW_EFFORT": "max"},
     "invalid review.effort = 'max' in environment variable OCR_HOOK_REVIEW_EFFORT: must be low,"
     " medium or high"),
    ({"OCR_HOOK_EFFORT": "max"},
     "invalid review.effort = 'max' in environment variable OCR_HOOK_EFFORT: must be low,"
     " medium or high"),
    ({"OCR_HOOK_LLM_TIMEOUT_S": "soon"},
     "invalid llm.timeout_s = 'soon' in environment variable OCR_HOOK_LLM_TIMEOUT_S: must be a"
     " number of seconds above 0 and at most 86400"),
    ({"OCR_HOOK_LLM_MAX_RETRIES": "11"},
     "invalid llm.max_retries = '11' in environment variable OCR_HOOK_LLM_MAX_RETRIES: must be a"
     " whole number from 0 to 10"),
    ({"OCR_HOOK_SELECT_MAX_FILES": "-1"},
     "invalid select.max_files = '-1' in environment variable OCR_HOOK_SELECT_MAX_FILES: must be"
     " a whole number of 0 or more"),
    ({"OCR_HOOK_CACHE_ENABLED": "maybe"},
     "invalid cache.enabled = 'maybe' in environment variable OCR_HOOK_CACHE_ENABLED: must be"
     " true or false"),
    ({"OCR_HOOK_GATE_FAIL_ON": "urgent"},
     "invalid gate.fail_on = 'urgent' in environment variable OCR_HOOK_GATE_FAIL_ON: must be"
     " critical, high, medium or low"),
    ({"OCR_HOOK_ON_ERROR": "x"},
     "invalid gate.on_error = 'x' in environment variable OCR_HOOK_ON_ERROR: must be allow or"
     " block"),
    ({"OCR_HOOK_LLM_EXTRA_HEADERS": "nojson"},
     "invalid llm.extra_headers in environment variable OCR_HOOK_LLM_EXTRA_HEADERS: not valid"
     " JSON (Expecting value: line 1 column 1 (char 0))"),
    ({"OCR_HOOK_LLM_PROVIDER": "openai", "OPENAI_BASE_URL": "ftp://x", "OCR_LLM_URL": ""},
     "invalid llm.base_url = 'ftp://x' in environment variable OPENAI_BASE_URL (openai preset):"
     " must be an http:// or https:// URL with a host"),
]


@pytest.mark.parametrize(("env", "line"), ENV_CASES, ids=[next(iter(e)) for e, _ in ENV_CASES])
def test_a_bad_variable_is_named_with_the_allowed_values_in_words(
        staged: GitRepo, llm: ScriptedLLM, env: dict[str, str], line: str) -> None:
    rc, out, err = git_ocr(staged, "review", env=llm.env(**env))
    assert (rc, out, err) == (2, "", f"ocr-hook: {line}\n")
    assert llm.paths == []


FLAG_CASES = [
    (["--concurrency", "0"], "invalid review.concurrency = 0 in command-line option"
     " --concurrency: must be a whole number from 1 to 64"),
    (["--timeout", "0"], "invalid review.timeout_s = 0.0 in command-line option --timeout:"
     " must be a number of seconds above 0 and at most 604800"),
    (["--tools", "nosuch.json"], "cannot read tools file nosuch.json (tools.file, --tools): No"
     " such file or directory"),
    (["--tools", "."], "cannot read tools file . (tools.file, --tools): Is a directory"),
    (["--background-file", "nosuch.txt"], "cannot read background file nosuch.txt"
     " (review.background_file, --background-file): No such file or directory"),
]


@pytest.mark.parametrize(("args", "line"), FLAG_CASES, ids=[" ".join(a) for a, _ in FLAG_CASES])
def test_a_bad_option_is_named(staged: GitRepo, llm: ScriptedLLM, args: list[str],
                               line: str) -> None:
    rc, out, err = git_ocr(staged, "review", *args, env=llm.env())
    assert (rc, out, err) == (2, "", f"ocr-hook: {line}\n")


def test_a_tools_file_that_is_not_text_is_one_line(staged: GitRepo, llm: ScriptedLLM) -> None:
    (staged.path / "tools.bin").write_bytes(b"\xff\xfe\x00binary")
    rc, out, err = git_ocr(staged, "review", "--tools", "tools.bin", env=llm.env())
    assert (rc, out, err) == (2, "", "ocr-hook: cannot read tools file tools.bin (tools.file,"
                                     " --tools): not UTF-8 text\n")


SET_CASES = [
    ("gate.mode", "strict", "'strict'", "must be blocking or advisory"),
    ("review.effort", "max", "'max'", "must be low, medium or high"),
    ("review.concurrency", "abc", "'abc'", "must be a whole number from 1 to 64"),
    ("review.concurrency", "0", "0", "must be a whole number from 1 to 64"),
    ("llm.max_retries", "11", "11", "must be a whole number from 0 to 10"),
    ("llm.timeout_s", "-1", "-1.0", "must be a number of seconds above 0 and at most 86400"),
    ("cache.enabled", "maybe", "'maybe'", "must be true or false"),
    ("llm.protocol", "grpc", "'grpc'", "must be openai or anthropic"),
    ("llm.extra_headers", "x", "'x'",
     'must be a table such as {"X-Team" = "core"} or a JSON object'),
]


@pytest.mark.parametrize(("key", "value", "shown", "why"), SET_CASES,
                         ids=[f"{k}={v}" for k, v, _, _ in SET_CASES])
def test_config_set_names_the_command_and_writes_nothing(
        repo: GitRepo, key: str, value: str, shown: str, why: str) -> None:
    rc, out, err = git_ocr(repo, "config", "set", key, value)
    assert (rc, out, err) == (
        2, "", f"ocr-hook: invalid {key} = {shown} in `git ocr config set {key}`: {why}\n")
    assert not user_file("config.toml").exists()


FILE_CASES = [
    ('[review]\neffort = "max"\n', "review.effort = 'max'", "must be low, medium or high"),
    ('[review]\nconcurrency = "abc"\n', "review.concurrency = 'abc'",
     "must be a whole number from 1 to 64"),
    ("[review]\nconcurrency = 0\n", "review.concurrency = 0",
     "must be a whole number from 1 to 64"),
    ('[llm]\nprotocol = "grpc"\n', "llm.protocol = 'grpc'", "must be openai or anthropic"),
    ("[llm]\nextra_headers = 5\n", "llm.extra_headers = 5", "must be a table of texts"),
    ("[select]\ninclude = [1]\n", "select.include = [1]", "must be a list of texts"),
    # a TOML boolean is no number (pydantic would read true as 1: a $1 cap, a 1 s timeout)
    ("[budget]\ndaily_usd = true\n", "budget.daily_usd = true", "must be a number of 0 or more"),
    ("[review]\ntimeout_s = true\n", "review.timeout_s = true",
     "must be a number of seconds above 0 and at most 604800"),
    ("[review]\nconcurrency = false\n", "review.concurrency = false",
     "must be a whole number from 1 to 64"),
]


@pytest.mark.parametrize(("text", "what", "why"), FILE_CASES,
                         ids=[w for _, w, _ in FILE_CASES])
def test_a_bad_value_in_the_user_file_names_the_file(
        staged: GitRepo, llm: ScriptedLLM, text: str, what: str, why: str) -> None:
    path = write_user_config(text)
    env = llm.env()
    env.pop("OCR_LLM_PROTOCOL")  # the file's protocol is the one to check
    rc, out, err = git_ocr(staged, "review", env=env)
    assert (rc, out, err) == (2, "", f"ocr-hook: invalid {what} in {path}: {why}\n")


def test_a_bad_value_in_the_repository_file_names_it(staged: GitRepo, llm: ScriptedLLM) -> None:
    staged.commit({".ocr-hook.toml": '[review]\neffort = "max"\n'}, "cfg")
    rc, out, err = git_ocr(staged, "review", env=llm.env())
    assert (rc, out, err) == (2, "", "ocr-hook: invalid review.effort = 'max' in .ocr-hook.toml"
                                     " (HEAD): must be low, medium or high\n")


PROVIDERS = ("must be custom, openai, anthropic, azure-openai, deepseek, dashscope, moonshot,"
             " openrouter, mistral, gemini, ollama, llama-cpp, vllm or litellm"
             " (`git ocr llm providers`)")


def test_an_unknown_provider_names_its_source_and_the_presets(
        staged: GitRepo, llm: ScriptedLLM) -> None:
    rc, out, err = git_ocr(staged, "review", env=llm.env(OCR_HOOK_LLM_PROVIDER="openia"))
    assert (rc, out, err) == (2, "", "ocr-hook: invalid llm.provider = 'openia' in environment"
                                     f" variable OCR_HOOK_LLM_PROVIDER: {PROVIDERS}\n")
    rc, out, err = git_ocr(staged, "review", "--provider", "openia", env=llm.env())
    assert (rc, out, err) == (2, "", "ocr-hook: invalid llm.provider = 'openia' in command-line"
                                     f" option --provider: {PROVIDERS}\n")
    rc, out, err = git_ocr(staged, "llm", "test", "--provider", "openia", env=llm.env())
    assert (rc, out, err) == (2, "", "ocr-hook: invalid llm.provider = 'openia' in command-line"
                                     f" option --provider: {PROVIDERS}\n")
    rc, out, err = git_ocr(staged, "config", "set", "llm.provider", "openia")
    assert (rc, out, err) == (2, "", "ocr-hook: invalid llm.provider = 'openia' in `git ocr"
                                     f" config set llm.provider`: {PROVIDERS}\n")


def test_show_origin_names_the_variable(repo: GitRepo) -> None:
    rc, out, _ = git_ocr(repo, "config", "list", "--show-origin",
                         env={"OCR_HOOK_GATE_MODE": "advisory", "OCR_LLM_MODEL": "m"})
    assert rc == 0
    lines = out.splitlines()
    assert 'gate.mode = "advisory"\t# environment variable OCR_HOOK_GATE_MODE' in lines
    assert 'llm.model = "m"\t# environment variable OCR_LLM_MODEL' in lines
    assert 'gate.fail_on = "high"\t# default' in lines


def test_the_variable_that_set_a_key_is_its_origin() -> None:
    layer = env_layer({"OCR_HOOK_FAIL_ON": "low", "OCR_HOOK_REVIEW_EFFORT": "high"})
    _, origin = merge_layers([layer])
    assert origin == {"gate.fail_on": "environment variable OCR_HOOK_FAIL_ON",
                      "review.effort": "environment variable OCR_HOOK_REVIEW_EFFORT"}


def test_parse_value_without_a_source_still_says_what_the_key_takes() -> None:
    with pytest.raises(ConfigError) as e:
        parse_value("review.max_tool_rounds", "lots")
    assert str(e.value) == ("invalid review.max_tool_rounds = 'lots': must be a whole number of"
                            " 1 or more")


def test_build_config_reports_the_first_bad_value_of_a_file_layer(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        build_config([Layer(str(tmp_path / "c.toml"), {"review": {"max_push_commits": 0}})])
    assert str(e.value) == (f"invalid review.max_push_commits = 0 in {tmp_path / 'c.toml'}:"
                            " must be a whole number of 1 or more")
