"""``git ocr llm test`` and ``git ocr llm providers`` through ``cli.main`` against the loopback
server. Real: HTTP, JSON, the config layers; fake: the model's replies."""

from __future__ import annotations

import json

import pytest

from ocr_hook.config import layering
from ocr_hook.tools.registry import load_tool_specs
from tests.support.cli import run_cli
from tests.support.scripted_llm import ScriptedLLM, openai_text


def test_llm_test_sends_the_review_request_shape_and_reports(
        llm: ScriptedLLM, capsys: pytest.CaptureFixture[str], tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    llm.tool_calls(("task_done", {"state": "DONE"}))
    rc, out, err = run_cli(["llm", "test", "--json"], llm.env(OCR_LLM_TOKEN="sk-test-1234567890"),
                           capsys)
    assert rc == 0, err
    report = json.loads(out)
    assert report["outcome"] == "tool_call" and report["tool_calls"] == ["task_done"]
    assert (report["provider"], report["protocol"], report["model"]) == (
        "custom", "openai", "scripted-model")
    assert report["url"] == f"{llm.url}/chat/completions"
    assert report["api_key"] == "sk-t…7890"
    assert report["requests"] == 1 and report["latency_s"] >= 0
    assert report["usage"] == {"input": 100, "output": 20, "cache_read": 0, "cache_write": 0,
                               "estimated": False}
    [body] = llm.requests
    main_tools = {n for n, (_s, _p, main) in load_tool_specs().items() if main}
    assert {t["function"]["name"] for t in body["tools"]} == main_tools
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert "sk-test-1234567890" not in out


def test_llm_test_reports_a_model_that_does_not_call_tools(
        llm: ScriptedLLM, capsys: pytest.CaptureFixture[str], tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    llm.text("Everything is DONE, nothing to review.")
    rc, out, _ = run_cli(["llm", "test"], llm.env(), capsys)
    assert rc == 1
    assert "FAILED:   model does not call tools" in out
    assert "api key:  ***" in out


def test_llm_test_accepts_tool_calls_written_as_text(
        llm: ScriptedLLM, capsys: pytest.CaptureFixture[str], tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    llm.reply(openai_text('<tool_call>{"name": "task_done", "arguments": {"state": "DONE"}}'
                          "</tool_call>"))
    rc, out, _ = run_cli(["llm", "test", "--json"], llm.env(), capsys)
    assert rc == 0
    assert json.loads(out)["outcome"] == "tool_call_as_text"


def test_llm_test_request_failure_exits_3_with_the_typed_error(
        anthropic_llm: ScriptedLLM, capsys: pytest.CaptureFixture[str], tmp_path,
        monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    anthropic_llm.reply({"type": "error", "error": {"type": "authentication_error",
                                                    "message": "invalid x-api-key"}},
                        status=401)
    rc, out, _ = run_cli(["llm", "test", "--json"], anthropic_llm.env(), capsys)
    report = json.loads(out)
    assert rc == 3
    assert (report["outcome"], report["error_kind"], report["requests"]) == (
        "request_failed", "auth", 1)
    assert report["url"] == f"{anthropic_llm.url}/v1/messages"


def test_llm_test_without_endpoint_is_a_usage_error(
        capsys: pytest.CaptureFixture[str], tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    rc, out, err = run_cli(["llm", "test"], {}, capsys)
    assert rc == 2 and out == ""
    assert "no LLM endpoint configured (missing url, model)" in err


def test_llm_providers_lists_every_preset(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_cli(["llm", "providers"], {}, capsys)
    assert rc == 0
    rows, _, footer = out.rstrip("\n").rpartition("\n\n")  # the table, a blank line, the hint
    names = [line.split()[0] for line in rows.splitlines()[1:]]
    assert names == list(layering.provider_presets())  # every preset of config/providers.json
    assert {"openai", "anthropic", "azure-openai", "deepseek", "ollama", "llama-cpp"} <= set(names)
    assert footer.startswith("Use: git ocr config set llm.provider NAME")
    header, *lines = rows.splitlines()
    assert "PROMPT CACHE" in header
    anthropic = next(line for line in lines if line.startswith("anthropic "))
    assert "cache_control breakpoints" in anthropic
    rc, out, _ = run_cli(["llm", "providers", "--json"], {}, capsys)
    table = json.loads(out)
    assert table["ollama"]["base_url"] == "http://localhost:11434/v1"
    assert table["azure-openai"]["auth_header"] == "api-key"
