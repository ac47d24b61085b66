"""OpenTelemetry traces of a review (spec §11.7): a real loopback OTLP/HTTP collector receives
the run's spans with the GenAI attributes; nothing is sent (or imported) without
configuration; the repository file cannot turn it on or put content in it; a hanging collector
does not hold the hook's exit; without the ``otel`` extra a configured endpoint is one warning.

Real: git, ``cli.main`` and ``git-ocr`` processes, HTTP to the scripted loopback model, the
OpenTelemetry SDK and its OTLP/HTTP exporter, the collector's socket and protobuf decoding.
Fake: the model's replies; the missing extra (a package on ``PYTHONPATH`` whose import fails).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ocr_hook.util import tracing
from tests.support.cli import GIT_OCR, run_cli, run_json, run_python
from tests.support.gitrepo import GitRepo
from tests.support.otlp_collector import OtlpCollector, Span
from tests.support.paths import ROOT
from tests.support.scripted_llm import ScriptedLLM

SOURCE = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
EDITED = SOURCE.replace("return a + b", "return a - b  # add")
LINE = 2
COMMENT = {"comments": [{"path": "calc.py", "existing_code": "return a - b  # add",
                         "severity": "high", "category": "bug",
                         "content": "add subtracts its arguments."}]}
NO_FILTER = {"OCR_HOOK_REVIEW_FILTER": "false"}


@pytest.fixture
def collector() -> Iterator[OtlpCollector]:
    c = OtlpCollector()
    yield c
    c.close()


@pytest.fixture
def hanging() -> Iterator[OtlpCollector]:
    c = OtlpCollector(hang=True)
    yield c
    c.close()


def staged(repo: GitRepo) -> None:
    repo.commit({"calc.py": SOURCE}, "base")
    repo.stage({"calc.py": EDITED})
    assert EDITED.splitlines()[LINE - 1] == "    return a - b  # add"


def script(llm: ScriptedLLM) -> None:
    llm.tool_calls(("code_comment", COMMENT), ("task_done", {"state": "DONE"}))


def wait_for(c: OtlpCollector, name: str, timeout_s: float = 10.0) -> list[Span]:
    """The collector's spans once one called ``name`` has arrived."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if c.named(name):
            return list(c.spans)
        time.sleep(0.02)
    raise AssertionError(f"no span {name!r} received; got {[s.name for s in c.spans]}")


def one(spans: list[Span], name: str) -> Span:
    [s] = [s for s in spans if s.name == name]
    return s


def quiet(err: str) -> bool:
    """stderr says nothing of telemetry (it holds the review's own progress and advice)."""
    return "telemetry" not in err.lower() and "traceback" not in err.lower()


def all_text(spans: list[Span]) -> str:
    return json.dumps([[s.attributes, s.events] for s in spans])


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_a_review_sends_its_spans_with_the_genai_attributes(
        repo: GitRepo, collector: OtlpCollector, protocol: str,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    server = ScriptedLLM(protocol)
    try:
        staged(repo)
        script(server)
        monkeypatch.chdir(repo.path)
        code, data, err = run_json(["review", "--format", "json"], {
            **server.env(), **NO_FILTER, "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url}, capsys)
    finally:
        server.close()
    assert code == 1, err
    assert data["verdict"] == "findings" and quiet(err)
    spans = wait_for(collector, "ocr.review")
    assert set(collector.paths) == {"/v1/traces"}
    [chat] = [s for s in spans if s.name == "chat scripted-model"]
    assert chat.attributes["gen_ai.system"] == protocol
    assert chat.attributes["gen_ai.provider.name"] == protocol
    assert chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.attributes["gen_ai.request.model"] == "scripted-model"
    [body] = server.requests  # the limit the client put on the wire
    sent = body.get("max_tokens", body.get("max_completion_tokens"))
    assert chat.attributes["gen_ai.request.max_tokens"] == sent == 16384
    assert chat.attributes["gen_ai.response.model"] == "scripted"
    assert chat.attributes["gen_ai.usage.input_tokens"] == 100  # what the server reported
    assert chat.attributes["gen_ai.usage.output_tokens"] == 20
    assert chat.attributes["ocr.usage.estimated"] is False
    assert chat.resource["service.name"] == "ocr-hook"
    # the run, its stages, the group, the call and its tool calls: one trace, nested
    run = one(spans, "ocr.review")
    assert run.parent_id == "" and {s.trace_id for s in spans} == {run.trace_id}
    assert run.attributes["ocr.verdict"] == "findings"
    assert (run.attributes["gen_ai.usage.input_tokens"],
            run.attributes["gen_ai.usage.output_tokens"]) == (100, 20)
    for stage in ("prepare", "context", "grouping", "review", "merge"):
        assert one(spans, f"ocr.stage.{stage}").parent_id == run.span_id
    group = one(spans, "ocr.group")
    assert group.parent_id == one(spans, "ocr.stage.review").span_id
    assert group.attributes["ocr.group.files"] == 1
    assert chat.parent_id == group.span_id
    tools = {s.attributes["gen_ai.tool.name"]: s for s in spans
             if s.attributes.get("gen_ai.operation.name") == "execute_tool"}
    assert set(tools) == {"code_comment", "task_done"}
    assert all(t.parent_id == group.span_id and t.attributes["ocr.tool.ok"] is True
               for t in tools.values())
    # the comment: an event of the run without its text
    [(name, attrs)] = run.events
    assert name == "ocr.comment"
    assert attrs == {"ocr.comment.severity": "high", "ocr.comment.category": "bug",
                     "code.filepath": "calc.py", "code.lineno": LINE,
                     "ocr.comment.end_line": LINE, "ocr.comment.anchor": "hunk_new"}
    # no prompt, code, reply or secret without telemetry.content
    text = all_text(spans)
    for leak in ("return a - b", "subtracts", "test-token", "ocr.prompt", "ocr.completion"):
        assert leak not in text


def test_content_is_sent_only_when_the_user_turns_it_on_and_then_redacted(
        repo: GitRepo, llm: ScriptedLLM, collector: OtlpCollector,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    key = "AKIA" + "QYLPMN5HHHFPZAM2"  # an AWS key id shape: redacted before any request
    repo.commit({"calc.py": SOURCE}, "base")
    repo.stage({"calc.py": EDITED + f'AWS_KEY = "{key}"\n'})
    script(llm)
    monkeypatch.chdir(repo.path)
    code, _data, err = run_json(["review", "--format", "json"], {
        **llm.env(), **NO_FILTER, "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url,
        "OCR_HOOK_TELEMETRY_CONTENT": "true"}, capsys)
    assert code == 1, err
    spans = wait_for(collector, "ocr.review")
    [chat] = [s for s in spans if s.name == "chat scripted-model"]
    assert f"{LINE} +    return a - b  # add" in chat.attributes["ocr.prompt"]
    assert "[REDACTED:" in chat.attributes["ocr.prompt"]
    events = {a["ocr.comment.category"]: a for _, a in one(spans, "ocr.review").events}
    assert events["bug"]["ocr.comment.content"] == "add subtracts its arguments."
    assert events["security"]["ocr.comment.severity"] == "critical"  # the key, found
    assert key not in all_text(spans)


def test_the_repository_file_can_neither_turn_telemetry_on_nor_add_content(
        repo: GitRepo, llm: ScriptedLLM, collector: OtlpCollector,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    repo.commit({"calc.py": SOURCE,
                 ".ocr-hook.toml": "[telemetry]\nenabled = true\ncontent = true\n"}, "base")
    repo.stage({"calc.py": EDITED})
    script(llm)
    monkeypatch.chdir(repo.path)
    # the user's endpoint turns it on; the repository's content = true stays without effect
    code, _data, err = run_json(["review", "--format", "json"], {
        **llm.env(), **NO_FILTER, "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url}, capsys)
    assert code == 1
    assert [ln for ln in err.splitlines() if "telemetry" in ln] == [
        "ocr-hook: ignoring [telemetry] from .ocr-hook.toml (HEAD): only your own settings may"
        " turn on telemetry"]
    spans = wait_for(collector, "ocr.review")
    assert "ocr.prompt" not in all_text(spans) and "return a - b" not in all_text(spans)


def test_without_configuration_nothing_is_sent(
        repo: GitRepo, llm: ScriptedLLM, collector: OtlpCollector,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    staged(repo)
    script(llm)
    monkeypatch.chdir(repo.path)
    # the collector listens where the OTLP default would be for this test: only its URL in a
    # variable other than the endpoint ones (a service name, headers) turns nothing on
    code, data, err = run_json(["review", "--format", "json"], {
        **llm.env(), **NO_FILTER, "OTEL_SERVICE_NAME": "x",
        "OTEL_EXPORTER_OTLP_HEADERS": f"x-url={collector.url}"}, capsys)
    assert (code, data["verdict"], quiet(err)) == (1, "findings", True)
    time.sleep(0.3)
    assert collector.requests == 0
    assert not tracing.on


PROBE = """\
import sys
from ocr_hook import cli
rc = cli.main(sys.argv[1:])
sys.stderr.write("\\nOTEL=" + str(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
                 + " RC=" + str(rc) + "\\n")
"""


def test_a_review_without_telemetry_imports_nothing_of_opentelemetry(
        repo: GitRepo, llm: ScriptedLLM) -> None:
    staged(repo)
    script(llm)
    p = run_python(["-c", PROBE, "review"], cwd=repo.path, env={**llm.env(), **NO_FILTER})
    assert p.stderr.splitlines()[-1] == "OTEL=[] RC=1", p.stderr
    assert len(llm.requests) == 1


def test_a_hanging_collector_does_not_delay_the_hooks_exit(
        repo: GitRepo, llm: ScriptedLLM, hanging: OtlpCollector) -> None:
    """``--format ndjson`` writes each event as it happens: from the group's ``group_done``
    line (the last model reply is in) to the process's exit, the run merges, gates, writes its
    session, flushes telemetry (bounded: FLUSH_BOUND_S) and renders. The collector accepts the
    export and never answers; the exporter's own timeout (EXPORT_TIMEOUT_S, 5 s) would hold an
    unbounded flush far past the margin allowed here."""
    staged(repo)
    script(llm)
    env = {**os.environ, **llm.env(), **NO_FILTER, "OTEL_EXPORTER_OTLP_ENDPOINT": hanging.url}
    proc = subprocess.Popen([str(GIT_OCR), "review", "--format", "ndjson"], cwd=repo.path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    done_at = verdict_at = None
    for line in proc.stdout:
        kind = json.loads(line)["type"]
        if kind == "group_done":
            done_at = time.monotonic()
        elif kind == "verdict":
            verdict_at = time.monotonic()
    rc = proc.wait(timeout=30)
    exited = time.monotonic()
    assert proc.stderr is not None
    err = proc.stderr.read()
    assert rc == 1 and quiet(err), err
    assert done_at is not None and verdict_at is not None
    assert hanging.requests >= 1  # the export was sent and is still unanswered
    assert exited - verdict_at < 0.5
    assert exited - done_at < 1.0, f"{exited - done_at:.3f} s from the last group to exit"


def test_finish_waits_at_most_the_bound_for_a_hanging_collector(hanging: OtlpCollector) -> None:
    assert tracing.start({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{hanging.url}/v1/traces"},
                         enabled=False, content=False, version="test")
    with tracing.span("ocr.review"):
        pass
    t0 = time.monotonic()
    tracing.finish()
    elapsed = time.monotonic() - t0
    end = time.monotonic() + 5
    while hanging.requests == 0 and time.monotonic() < end:
        time.sleep(0.01)
    assert hanging.requests == 1 and hanging.paths == ["/v1/traces"]
    assert elapsed < 0.05 + 0.1, f"finish took {elapsed:.3f} s"  # the bound and a margin
    assert not tracing.on


def shim(tmp_path: Path) -> dict[str, str]:
    """An environment whose ``import opentelemetry`` fails, as without the extra."""
    pkg = tmp_path / "shim" / "opentelemetry"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'opentelemetry'\", name='opentelemetry')\n")
    return {"PYTHONPATH": os.pathsep.join([str(pkg.parent), str(ROOT)])}


def test_without_the_extra_a_configured_endpoint_is_one_warning_line(
        repo: GitRepo, llm: ScriptedLLM, collector: OtlpCollector, tmp_path: Path) -> None:
    staged(repo)
    script(llm)
    env: dict[str, Any] = {**os.environ, **llm.env(), **NO_FILTER, **shim(tmp_path),
                           "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url}
    p = subprocess.run([sys.executable, "-m", "ocr_hook.cli", "review", "--format", "json"],
                       cwd=repo.path, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 1, p.stderr
    assert [ln for ln in p.stderr.splitlines() if "telemetry" in ln.lower()] == [
        "ocr-hook: telemetry is configured (OTEL_EXPORTER_OTLP_ENDPOINT) but OpenTelemetry is"
        " not installed (pip install 'ocr-hook[otel]'); reviewing without it"]
    assert "Traceback" not in p.stderr
    data = json.loads(p.stdout)
    assert data["verdict"] == "findings" and data["comments"][0]["start_line"] == LINE
    assert collector.requests == 0


def test_an_invalid_telemetry_setting_is_one_line_and_exit_2(
        repo: GitRepo, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    staged(repo)
    monkeypatch.chdir(repo.path)


    code, out, err = run_cli(["review"], {"OCR_HOOK_TELEMETRY_ENABLED": "maybe"}, capsys)
    assert (code, out) == (2, "")
    assert err.splitlines()[0] == ("ocr-hook: invalid telemetry.enabled = 'maybe' in environment"
                                   " variable OCR_HOOK_TELEMETRY_ENABLED: must be true or false")


@pytest.mark.parametrize("content", [False, True])
def test_an_llm_error_echoing_the_prompt_is_only_its_type_and_status_without_content(
        repo: GitRepo, llm: ScriptedLLM, collector: OtlpCollector, content: bool,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    marker = "ECHOED-PROMPT-7f3a"
    key = "AKIA" + "QYLPMN5HHHFPZAM2"  # in the echo: redacted even with content on
    staged(repo)
    llm.reply({"error": {"message": f"invalid request: {marker} return a - b  # add {key}",
                         "type": "invalid_request_error"}}, status=400)
    monkeypatch.chdir(repo.path)
    env = {**llm.env(), **NO_FILTER, "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url}
    if content:
        env["OCR_HOOK_TELEMETRY_CONTENT"] = "true"
    code, data, err = run_json(["review", "--format", "json"], env, capsys)
    assert data["status"] == "failed", err
    spans = wait_for(collector, "ocr.review")
    [chat] = [s for s in spans if s.name == "chat scripted-model"]
    assert chat.attributes["ocr.attempts"] == 1
    assert chat.attributes["http.response.status_code"] == 400
    [(name, attrs)] = chat.events
    assert name == "exception"
    if content:
        assert attrs["exception.type"] == "LlmError" and marker in attrs["exception.message"]
        assert "[REDACTED:" in attrs["exception.message"] and key not in all_text(spans)
        assert "exception.stacktrace" not in attrs
    else:
        assert attrs == {"exception.type": "LlmError", "http.response.status_code": 400}
        assert marker not in all_text(spans)
