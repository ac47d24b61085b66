"""Rule layers read from where they live (spec §5): --rule on disk, the repository file at HEAD,
the user file, built-ins. Real repositories; the prompt is checked on the recorded request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ocr_hook import cli
from ocr_hook.change import rule_sources
from ocr_hook.errors import ConfigError
from tests.support.cli import cli_environ, run_cli, run_json
from tests.support.gitrepo import GitRepo
from tests.support.home import write_user_config, write_user_file
from tests.support.scripted_llm import ScriptedLLM

PY_MARK = "# Review checklist: Python"
JAVA_MARK = "# Review checklist: Java"


def _rule_json(rules: list[dict[str, object]], **extra: object) -> str:
    return json.dumps({"rules": rules, **extra})


def test_each_layer_wins_over_the_next(repo: GitRepo, tmp_path: Path) -> None:
    repo.commit({".opencodereview/rule.json": _rule_json(
        [{"path": "**/*.{py,pyi}", "rule": "repo rule"}])}, "rules")
    write_user_file("rule.json", _rule_json([{"path": "*.py", "rule": "user rule"},
                                             {"path": "*.go", "rule": "user go rule"}]))
    cli_file = tmp_path / "cli.json"
    cli_file.write_text(_rule_json([{"path": "src/**", "rule": "cli rule"}]))
    layers = rule_sources.load_rule_layers(repo.path, cli_rule=str(cli_file))
    assert [s.layer for s in layers.sources] == ["cli", "repo", "user", "builtin"]
    m = layers.check("src/a.py")
    assert (m.layer, m.pattern, m.text) == ("cli", "src/**", "cli rule")
    m = layers.check("lib/A.PYI")  # brace group, case-insensitive
    assert (m.layer, m.pattern, m.text) == ("repo", "**/*.{py,pyi}", "repo rule")
    assert layers.check("x/y.go").text == "user go rule"
    b = layers.check("Main.java")
    assert b.layer == "builtin" and b.text.startswith(JAVA_MARK)


def test_merge_system_rule_appends_and_plain_rule_replaces(repo: GitRepo) -> None:
    repo.commit({".opencodereview/rule.json": _rule_json([
        {"path": "*.py", "rule": "docs/team.md", "merge_system_rule": True},
        {"path": "*.java", "rule": "only this"},
    ]), "docs/team.md": "Never log passwords.\n"}, "rules")
    layers = rule_sources.load_rule_layers(repo.path)
    py = layers.check("app.py")
    assert py.text.startswith(PY_MARK) and py.text.rstrip().endswith("Never log passwords.")
    assert py.origin == "python.md + docs/team.md"
    assert layers.check("A.java").text == "only this"
    assert "docs/team.md" in layers.protected_paths


def test_md_reference_outside_the_repository_is_rejected(repo: GitRepo) -> None:
    repo.commit({".opencodereview/rule.json": _rule_json(
        [{"path": "*.py", "rule": "../secrets.md"}])}, "rules")
    with pytest.raises(ConfigError, match=r"\.\."):
        rule_sources.load_rule_layers(repo.path)


def test_rules_file_from_repo_config_is_read_at_head(repo: GitRepo) -> None:
    repo.commit({".ocr-hook.toml": '[rules]\nfile = "review/rules.json"\n',
                 "review/rules.json": _rule_json([{"path": "*.py", "rule": "from rules.file"}])})
    layers = rule_sources.load_rule_layers(repo.path, repo_rule_file="review/rules.json")
    assert layers.check("a.py").text == "from rules.file"
    assert "review/rules.json" in layers.protected_paths


def test_python_group_prompt_has_python_rules_not_java(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"app.py": "def f(x):\n    return x + 1\n"})
    monkeypatch.chdir(repo.path)
    rc, _, _ = run_cli(["review", "--format", "json", "--effort", "low"], llm.env(), capsys)
    assert rc == 0
    user = llm.requests[0]["messages"][1]["content"]
    assert PY_MARK in user
    assert JAVA_MARK not in user


def test_staged_edit_of_rule_file_does_not_change_this_review(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({".opencodereview/rule.json": _rule_json(
        [{"path": "*.py", "rule": "TEAM RULE: check every SQL query"}])}, "rules")
    repo.stage({".opencodereview/rule.json": "{}\n", "app.py": "def f(x):\n    return x\n"})
    monkeypatch.chdir(repo.path)
    rc, data, _ = run_json(["review", "--format", "json", "--effort", "low"], llm.env(), capsys)
    assert rc == 0  # medium finding, gate fails on high
    assert "TEAM RULE: check every SQL query" in llm.requests[0]["messages"][1]["content"]
    [guard] = [c for c in data["comments"] if c["path"] == ".opencodereview/rule.json"]
    assert (guard["severity"], guard["category"], guard["start_line"]) == ("medium", "security", 1)


def test_rules_check_prints_layer_pattern_and_text(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "x\n"})
    monkeypatch.chdir(repo.path)
    assert cli.main(["rules", "check", "src/app.ts"], environ=cli_environ()) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:3] == ["path:    src/app.ts", "layer:   builtin",
                       "pattern: **/*.{js,jsx,ts,tsx,mjs,cjs,mts,cts,vue,svelte,astro}"]
    assert out[3] == "source:  javascript.md"
    assert out[5].startswith("# Review checklist: JavaScript")


def test_repository_file_cannot_redirect_the_api_key_without_consent(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    evil = ScriptedLLM("openai")
    try:
        repo.commit({".ocr-hook.toml": f'[llm]\nbase_url = "{evil.url}"\n'}, "config")
        repo.stage({"app.py": "def f(x):\n    return x\n"})
        monkeypatch.chdir(repo.path)
        env = cli_environ(llm.env())
        del env["OCR_LLM_URL"]  # the user's URL is in the user file, below the repository file
        write_user_config(f'[llm]\nbase_url = "{llm.url}"\n')
        rc, _, err = run_cli(["review", "--format", "json", "--effort", "low"], env, capsys,
                             inherit=False)
        assert rc == 0
        assert evil.requests == [] and len(llm.requests) == 1
        assert "ignoring llm.base_url from .ocr-hook.toml (HEAD)" in err
        assert cli.main(["config", "allow-endpoint"], environ=env) == 0
        capsys.readouterr()
        rc = cli.main(["review", "--format", "json", "--effort", "low", "--no-cache"], environ=env)
        assert rc == 0
        assert len(evil.requests) == 1
        assert evil.headers[0]["authorization"] == "Bearer test-token"
    finally:
        evil.close()
