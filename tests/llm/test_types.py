"""The LLM path's records: the NamedTuples of ``llm.types`` behave as values (value equality,
copies with changed fields, the API key never in ``repr``, usage summed field by field), and
the dataclasses a review builds are the listed ones, so a new one is a conscious choice (each
costs several times a NamedTuple to build, on every review)."""

from __future__ import annotations

import dataclasses
import importlib
import json

from ocr_hook.llm.types import Endpoint, Message, ToolCall, ToolSpec, Usage
from tests.support.cli import run_python
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

# loaded by every review that calls the model (llm.types: by every run with an endpoint;
# grouping: by every review and cache hit)
LLM_PATH_MODULES = ("ocr_hook.llm.types", "ocr_hook.agent.meter", "ocr_hook.agent.loop",
                    "ocr_hook.tools.snapshot", "ocr_hook.agent.grouping")


def test_the_llm_path_modules_build_only_the_loop_state_as_a_dataclass() -> None:
    found = []
    for name in LLM_PATH_MODULES:
        mod = importlib.import_module(name)
        found += [f"{name}.{k}" for k, v in vars(mod).items()
                  if isinstance(v, type) and v.__module__ == name and dataclasses.is_dataclass(v)]
    assert found == ["ocr_hook.agent.loop._State"]  # mutable, one per loop


def test_endpoint_repr_names_every_field_but_the_key() -> None:
    ep = Endpoint("http://127.0.0.1:9/v1", "m", api_key="sk-abcdefghijklmnopqrstu",
                  extra_headers=(("X-A", "1"),))
    assert repr(ep) == (
        "Endpoint(url='http://127.0.0.1:9/v1', model='m', protocol='openai', provider='custom',"
        " timeout_s=120.0, connect_timeout_s=10.0, max_retries=3, max_output_tokens=16384,"
        " max_output_tokens_cap=0, output_tokens_field='max_completion_tokens',"
        " anthropic_version='2023-06-01', extra_headers=(('X-A', '1'),), extra_body=(),"
        " auth_header='', tool_choice='', prompt_caching=True, prompt_cache_key=False)")
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


PROBE = """\
import dataclasses, json, sys
from ocr_hook import cli
rc = cli.main(sys.argv[1:])
found = sorted(
    f"{name}.{obj.__name__}" for name, mod in list(sys.modules.items())
    if name.startswith("ocr_hook") for obj in vars(mod).values()
    if isinstance(obj, type) and obj.__module__ == name and dataclasses.is_dataclass(obj))
sys.stderr.write("\\nDATACLASSES=" + json.dumps(found) + "\\nRC=" + str(rc) + "\\n")
"""


def test_a_review_with_a_finding_builds_two_dataclasses_of_the_llm_part(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    """A 1-file review whose model files a comment and approves it in the (opt-in) review
    filter: the
    dataclasses built are those of the shared path (settings, results, the change set) and,
    of the LLM part, only the services the groups share and the loop's state (none in the
    clients, tools, comments or grouping)."""
    repo.commit({"app.py": "def f(x):\n    return x + 1\n"}, "init")
    repo.stage({"app.py": "def f(x):\n    return x - 1\n"})
    llm.tool_calls(("code_comment", {"comments": [{
        "path": "app.py", "existing_code": "return x - 1", "severity": "low",
        "category": "other", "content": "Subtracts."}]}), ("task_done", {"state": "DONE"}))
    llm.tool_calls(("approve_all_comments", {}))
    p = run_python(["-c", PROBE, "review", "--format", "json", "--no-cache", "--effort", "low",
                    "--filter"], cwd=repo.path, env=llm.env())
    line = next(ln for ln in p.stderr.splitlines() if ln.startswith("DATACLASSES="))
    data = json.loads(p.stdout)
    assert ([c["start_line"] for c in data["comments"]], len(llm.requests)) == ([2], 2)
    shared = {f"ocr_hook.config.models.{c}" for c in (
        "Config", "LlmConfig", "ReviewConfig", "SelectConfig", "RulesConfig", "GateConfig",
        "CacheConfig", "ToolsConfig", "McpConfig", "SecurityConfig",
        "TelemetryConfig", "BudgetConfig")} | {
        f"ocr_hook.report.result.{c}" for c in (
            "FileOutcome", "GroupOutcome", "GroupReport", "ReviewResult")} | {
        "ocr_hook.diff.model.FileDiff", "ocr_hook.change.changeset.ChangeSet", "ocr_hook.secrets.blobs.BlobScan",
        "ocr_hook.change.scan.ChangeScan"}
    llm_part = {"ocr_hook.pipeline.group.GroupDeps", "ocr_hook.agent.loop._State"}
    assert set(json.loads(line[12:])) == shared | llm_part
