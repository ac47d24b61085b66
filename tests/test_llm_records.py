"""The LLM path's records (issue 18): what each review builds at import stays cheap, and the
NamedTuples of ``llm.types`` keep the behaviour the dataclasses had (value equality, copies
with changed fields, the API key never in ``repr``, usage summed field by field)."""

from __future__ import annotations

import dataclasses
import importlib

from ocr_hook.llm.types import Endpoint, Message, ToolCall, ToolSpec, Usage

# loaded by every review that calls the model (llm.types: by every run with an endpoint;
# grouping: by every review and cache hit)
LLM_PATH_MODULES = ("ocr_hook.llm.types", "ocr_hook.agent.meter", "ocr_hook.agent.loop",
                    "ocr_hook.tools.snapshot", "ocr_hook.grouping")


def test_the_llm_path_modules_build_no_dataclass() -> None:
    found = []
    for name in LLM_PATH_MODULES:
        mod = importlib.import_module(name)
        found += [f"{name}.{k}" for k, v in vars(mod).items()
                  if isinstance(v, type) and v.__module__ == name and dataclasses.is_dataclass(v)]
    assert found == []


def test_endpoint_repr_names_every_field_but_the_key() -> None:
    ep = Endpoint("http://127.0.0.1:9/v1", "m", api_key="sk-abcdefghijklmnopqrstu",
                  extra_headers=(("X-A", "1"),))
    assert repr(ep) == (
        "Endpoint(url='http://127.0.0.1:9/v1', model='m', protocol='openai', provider='custom',"
        " timeout_s=120.0, connect_timeout_s=10.0, max_retries=3, max_output_tokens=16384,"
        " max_output_tokens_cap=0, output_tokens_field='max_completion_tokens',"
        " anthropic_version='2023-06-01', extra_headers=(('X-A', '1'),), extra_body=(),"
        " auth_header='', tool_choice='')")
    keyless = ep._replace(api_key="")
    assert (keyless.api_key, keyless.url, keyless.extra_headers) == ("", ep.url, (("X-A", "1"),))
    assert keyless == Endpoint("http://127.0.0.1:9/v1", "m", extra_headers=(("X-A", "1"),))
    assert keyless != ep


def test_usage_sums_field_by_field_and_records_compare_by_value() -> None:
    total = Usage(1, 2, 3, 4) + Usage(10, 20, 30, 40, estimated=True)
    assert (total, total.total) == (Usage(11, 22, 33, 44, True), 110)
    call = ToolCall("c1", "task_done", '{"state": "DONE"}', {"state": "DONE"})
    msg = Message("assistant", "<think>x</think>done", tool_calls=(call,))
    assert (msg.text, msg == Message("assistant", "<think>x</think>done", tool_calls=(call,))) == (
        "done", True)
    assert msg._replace(content="ok").tool_calls == (call,)
    assert ToolSpec("t", "d", {})._replace(description="e") == ToolSpec("t", "e", {})
