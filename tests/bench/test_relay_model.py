"""bench/relay_model.py, the hand-answered loopback model: real HTTP on 127.0.0.1 (port 0), the
project's real OpenAI client, answers written through the relay's own ``answer`` command in a
thread. Nothing is faked."""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
from pathlib import Path
from types import ModuleType

import pytest

from ocr_hook.llm.openai import OpenAIClient
from ocr_hook.llm.types import Endpoint, Message, ToolSpec
from ocr_hook.util.tokens import count_tokens
from tests.support.paths import ROOT

RELAY_PATH = ROOT / "bench" / "relay_model.py"
READ = ToolSpec("file_read", "Read a file.", {
    "type": "object",
    "properties": {"file_path": {"type": "string", "description": "repo path"},
                   "start_line": {"type": "integer"}},
    "required": ["file_path"],
})


@pytest.fixture(scope="module")
def relay_mod() -> ModuleType:
    spec = importlib.util.spec_from_file_location("relay_model", RELAY_PATH)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["relay_model"] = mod
    spec.loader.exec_module(mod)
    return mod


def _answer_when_asked(relay_mod: ModuleType, folder: Path, answers: list[str],
                       codes: list[int]) -> threading.Thread:
    """Answer each request as it appears with the next text of ``answers`` (via the CLI)."""
    def run() -> None:
        for n, text in enumerate(answers, 1):
            assert relay_mod.cmd_wait(folder, 10.0) == 0
            src = folder / f"a{n}.json"
            src.write_text(text)
            codes.append(relay_mod.main(["answer", "--dir", str(folder), str(n), str(src)]))
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_tool_call_then_text_round_trip(relay_mod: ModuleType, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "case"
    server, relay = relay_mod.start(folder, 0, "trial-model")
    try:
        port = server.server_address[1]
        client = OpenAIClient(Endpoint(url=f"http://127.0.0.1:{port}/v1", model="trial-model",
                                       max_retries=0, output_tokens_field="max_tokens"))
        codes: list[int] = []
        t = _answer_when_asked(relay_mod, folder, [
            '{"tool_calls": [{"name": "file_read", "arguments": {"file_path": "a.py"}}]}',
            '{"content": "no problems"}',
        ], codes)
        msgs = [Message(role="system", content="review ```this```"),
                Message(role="user", content="diff here")]
        first = client.complete(msgs, [READ], max_output_tokens=100)
        call = first.message.tool_calls[0]
        assert (call.id, call.name, call.arguments) == ("call_1_1", "file_read",
                                                         {"file_path": "a.py"})
        assert first.finish_reason == "tool_calls"
        body1 = json.loads((folder / "1.request.json").read_text())
        want = count_tokens(relay_mod.prompt_text(body1), "trial-model")
        assert (first.usage.input_tokens, first.usage.estimated) == (want, False)
        msgs += [first.message, Message(role="tool", content="x = 1", tool_call_id=call.id)]
        second = client.complete(msgs, [READ])
        assert (second.message.content, second.finish_reason) == ("no problems", "stop")
        t.join(10)
        assert codes == [0, 0]
    finally:
        relay.stopping.set()
        server.shutdown()
        server.server_close()

    md = (folder / "2.request.md").read_text()
    assert "model: trial-model | tool_choice: not sent (auto) | max_tokens: 16384" in md
    assert "- `file_path` (string, required): repo path" in md
    assert "````\nreview ```this```\n````" in md  # fence longer than the content's backticks
    assert "### [4] tool (result of call_1_1)\n\n```\nx = 1\n```" in md
    assert 'tool call `call_1_1`: **file_read**\n\n```json\n{\n  "file_path": "a.py"\n}' in md
    log = [json.loads(ln) for ln in (folder / "log.jsonl").read_text().splitlines()]
    assert [(e["n"], e["messages"], e["tool_calls"]) for e in log] == [
        (1, 2, ["file_read"]), (2, 4, [])]
    capsys.readouterr()
    (folder / "done").write_text("")
    assert relay_mod.cmd_wait(folder, 1.0) == 3
    assert capsys.readouterr().out == "done\n"


def test_answer_refuses_bad_shapes(relay_mod: ModuleType, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "task_done"}}]}
    (tmp_path / "1.request.json").write_text(json.dumps(body))
    cases = [
        ('{"tool_calls": [{"name": "shell", "arguments": {}}]}',
         "tool 'shell' was not offered in this request (offered: task_done)"),
        ('{"tool_calls": [{"name": "task_done", "arguments": "x"}]}',
         "tool_calls[0].arguments must be a JSON object"),
        ('{"text": "hi"}', "unknown answer field(s): text"),
        ("[1]", "the answer must be a JSON object"),
    ]
    for text, message in cases:
        (tmp_path / "a.json").write_text(text)
        assert relay_mod.main(["answer", str(tmp_path / "1.request.md"),
                               str(tmp_path / "a.json")]) == 2
        assert capsys.readouterr().err == f"relay_model: answer not written: {message}\n"
    assert not (tmp_path / "1.answer.json").exists()
    assert relay_mod.main(["answer", "--dir", str(tmp_path), "7", "-"]) == 2
    assert capsys.readouterr().err == f"relay_model: no request 7 in {tmp_path}\n"
