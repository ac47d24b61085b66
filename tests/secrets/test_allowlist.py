"""security.allow_secrets and the inline ``ocr-hook: allow-secret`` marker (spec §14.1): an
allowed value is not a finding, but it is still redacted in everything sent to the model; an
allow pattern that matches arbitrary values, or that is not a valid regular expression, is a
one-line configuration error (exit 2). Real: git repositories, ``cli.main``, the scripted
loopback model recording every request. Fake: the secrets and the model's replies."""

from __future__ import annotations

import json

import pytest

from ocr_hook.config.layering import Layer, build_config
from ocr_hook.errors import ConfigError
from tests.support.cli import run_cli
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM
from tests.support.secret_corpus import GH_ALLOWED, GH_CLASSIC, SLACK_BOT, STRIPE_RESTRICTED

SECRET_CONTENT_START = "Hard-coded secret ("


def _build(entries: list[str]) -> None:
    build_config([Layer(".ocr-hook.toml", {"security": {"allow_secrets": entries}})])


@pytest.mark.parametrize("pattern", [
    ".*", ".+", "(?s).*", r"\w+", r"\S*", "[^\"]*", "[A-Za-z0-9+/=]{8,}", "[0-9a-f]{32}",
    "ghp_.*", "AKIA[A-Z0-9]{16}", "a|.*x?", "",
])
def test_a_pattern_that_matches_arbitrary_values_is_refused(pattern: str) -> None:
    with pytest.raises(ConfigError) as e:
        _build(["AKIAQWERTY[A-Z]+", pattern])
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("invalid security.allow_secrets = ")
    assert f"{pattern!r} matches arbitrary values" in msg and "in .ocr-hook.toml" in msg


def test_an_invalid_regular_expression_is_refused_naming_the_setting() -> None:
    with pytest.raises(ConfigError) as e:
        _build(["ghp_(fixture"])
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("invalid security.allow_secrets = ['ghp_(fixture'] in .ocr-hook.toml")
    assert "'ghp_(fixture' is not a valid regular expression" in msg


def test_literal_values_and_narrow_patterns_are_accepted() -> None:
    entries = [GH_ALLOWED, "AKIAQWERTY[A-Z]+", r"sk_test_fixture_[0-9]{4}", "ghp_R8x2[A-Za-z0-9]+"]
    assert build_config([Layer(".ocr-hook.toml", {"security": {"allow_secrets": entries}})]
                 ).security.allow_secrets == entries


def test_a_committed_allow_everything_pattern_stops_the_review_with_exit_2(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({".ocr-hook.toml": '[security]\nallow_secrets = [".*"]\n'}, "allow all")
    repo.stage({"app.py": f'TOKEN = "{GH_CLASSIC}"\n'})
    before = repo.state()
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review", "--format", "json"], llm.env(), capsys)
    assert (rc, out, llm.requests) == (2, "", [])
    [line] = err.strip().splitlines()
    assert "invalid security.allow_secrets = ['.*'] in .ocr-hook.toml" in line
    assert "'.*' matches arbitrary values" in line
    assert repo.state() == before


def test_an_invalid_pattern_in_the_environment_is_exit_2(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"app.py": "x = 1\n"})
    monkeypatch.chdir(repo.path)
    env = llm.env(OCR_HOOK_SECURITY_ALLOW_SECRETS="[unclosed")
    rc, out, err = run_cli(["review", "--format", "json"], env, capsys)
    assert (rc, out, llm.requests) == (2, "", [])
    [line] = err.strip().splitlines()
    assert "security.allow_secrets" in line and "'[unclosed' is not a valid regular expression" in line


def test_allowed_values_are_not_findings_but_never_reach_the_model(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({".ocr-hook.toml": (
        f'[security]\nallow_secrets = ["{STRIPE_RESTRICTED}", "xoxb-[0-9]+-[0-9]+-49uO.*"]\n')},
        "team allow-list")
    app = "\n".join([
        "import os",
        f'REPORTING = "{STRIPE_RESTRICTED}"',  # allowed by value
        f'FIXTURE = "{GH_ALLOWED}"  # ocr-hook: allow-secret',  # allowed by marker
        f'slack = WebClient("{SLACK_BOT}")',  # allowed by pattern
        f'TOKEN = "{GH_CLASSIC}"',  # a finding
        "",
    ])
    repo.stage({"app.py": app})
    llm.tool_calls(("file_read", {"file_path": "app.py"}), ("code_search", {"search_text": "="}),
                   ("file_read_diff", {"path_array": ["app.py"]}))
    llm.tool_calls(("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review", "--format", "json", "--effort", "low"], llm.env(), capsys)
    data = json.loads(out)
    assert rc == 1, err
    spots = [(c["start_line"], c["content"][len(SECRET_CONTENT_START):].split(")")[0])
             for c in data["comments"] if c["content"].startswith(SECRET_CONTENT_START)]
    assert spots == [(5, "github-token")]
    assert len(llm.requests) == 2
    sent = json.dumps(llm.requests)
    assert [v for v in (STRIPE_RESTRICTED, GH_ALLOWED, SLACK_BOT, GH_CLASSIC) if v in sent] == []
    prompt = llm.requests[0]["messages"][1]["content"]
    assert '\n2 +REPORTING = "[REDACTED:stripe-live-key]"' in prompt
    assert '\n3 +FIXTURE = "[REDACTED:github-token]"  # ocr-hook: allow-secret' in prompt
    assert '\n4 +slack = WebClient("[REDACTED:slack-token]")' in prompt
    results = [m["content"] for m in llm.requests[1]["messages"] if m["role"] == "tool"]
    assert results[0].splitlines()[4:8] == [
        '2|REPORTING = "[REDACTED:stripe-live-key]"',
        '3|FIXTURE = "[REDACTED:github-token]"  # ocr-hook: allow-secret',
        '4|slack = WebClient("[REDACTED:slack-token]")',
        '5|TOKEN = "[REDACTED:github-token]"',
    ]
    assert all("[REDACTED:" in r for r in results)
