"""Start-up cost (spec §15): heavy modules load only on the paths that need them:
no pydantic (validation of data that needs converting), requests (HTTP), tiktoken (token
tables) or pathspec (globs) on a run that never reaches them. Each check runs in a fresh
interpreter, because this test process has long imported everything.

Real: a subprocess interpreter, ``cli.main``, git, HTTP to the scripted loopback model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import run_python
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

STDLIB = ("logging", "typing", "dataclasses", "subprocess", "json")  # reported by the probe
HEAVY = ("tiktoken", "mcp", "mcp_types", "anyio", "httpx2", "requests", "detect_secrets",
         "pydantic", "pathspec")

PROBE = """\
import json, sys
from ocr_hook import cli
rc = cli.main(sys.argv[1:])
heavy = {heavy!r}
loaded = sorted(m for m in sys.modules if m.split(".")[0] in heavy)
sys.stderr.write("\\nLOADED=" + json.dumps(sorted({{m.split(".")[0] for m in loaded}})) + "\\n")
sys.stderr.write("OCR=" + json.dumps(sorted(m for m in sys.modules if m.startswith("ocr_hook")))
                 + "\\n")
sys.stderr.write("STD=" + json.dumps(sorted(m for m in {std!r} if m in sys.modules)) + "\\n")
sys.stderr.write("RC=" + str(rc) + "\\n")
"""


def probe(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, list[str], str]:
    """Run ``cli.main(argv)`` in a new interpreter; return (rc, top-level heavy modules, stdout)."""
    rc, loaded, _, out = probe_all(argv, cwd, env)[:4]
    return rc, loaded, out


def probe_all(argv: list[str], cwd: Path, env: dict[str, str]
              ) -> tuple[int, list[str], set[str], str, list[str]]:
    """As :func:`probe`, plus the set of ``ocr_hook`` modules the run imported and which
    modules of STDLIB it imported (the probe itself imports ``json``)."""
    p = run_python(["-c", PROBE.format(heavy=HEAVY, std=STDLIB), *argv], cwd=cwd, env=env)
    lines = p.stderr.splitlines()
    loaded = json.loads(next(ln for ln in lines if ln.startswith("LOADED="))[7:])
    ours = set(json.loads(next(ln for ln in lines if ln.startswith("OCR="))[4:]))
    std = json.loads(next(ln for ln in lines if ln.startswith("STD="))[4:])
    rc = int(next(ln for ln in lines if ln.startswith("RC="))[3:])
    return rc, loaded, ours, p.stdout, std


def test_help_imports_no_heavy_module(tmp_path: Path) -> None:
    rc, loaded, out = probe(["-h"], tmp_path, {})
    assert rc == 0 and "usage: git ocr" in out
    assert loaded == []


def test_review_without_mcp_servers_does_not_import_mcp(repo: GitRepo, llm: ScriptedLLM) -> None:
    repo.stage({"app.py": "x = 1\n"})
    llm.tool_calls(("file_read", {"file_path": "app.py"}), ("code_search", {"search_text": "x"}))
    llm.tool_calls(("task_done", {"state": "DONE"}))
    rc, loaded, out = probe(["review", "--format", "json", "--no-cache"], repo.path, llm.env())
    assert (rc, json.loads(out)["status"], len(llm.requests)) == (0, "complete", 2)
    assert "mcp" not in loaded and "mcp_types" not in loaded and "anyio" not in loaded
    assert "httpx2" not in loaded and "detect_secrets" not in loaded  # security.detect_secrets off
    assert "requests" in loaded  # the probe sees what a review imports
    assert "pydantic" not in loaded and "tiktoken" not in loaded  # small diff: no exact count


def test_nothing_to_review_imports_no_heavy_module(repo: GitRepo, llm: ScriptedLLM) -> None:
    repo.commit({"app.py": "x = 1\n"}, "init")
    rc, loaded, out = probe(["review", "--format", "json"], repo.path, llm.env())
    assert (rc, json.loads(out)["files"], len(llm.requests)) == (0, [], 0)
    assert loaded == []


def test_preview_and_cache_hit_import_neither_pydantic_nor_requests(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    repo.stage({"app.py": "x = 1\n"})
    rc, loaded, out = probe(["review", "--preview", "--format", "json"], repo.path, llm.env())
    assert (rc, json.loads(out)["files"][0]["will_review"], len(llm.requests)) == (0, True, 0)
    assert loaded == []  # app.py holds no literal of the built-in path lists: none compiled
    llm.tool_calls(("task_done", {"state": "DONE"}))
    probe(["review", "--format", "json"], repo.path, llm.env())
    assert len(llm.requests) == 1
    rc, loaded, out = probe(["review", "--format", "json"], repo.path, llm.env())
    assert (rc, json.loads(out)["summary"]["cache_hits"], len(llm.requests)) == (0, 1, 1)
    assert loaded == []  # the rule map's patterns, part of the key, match by shipped regexes


def test_settings_that_need_converting_are_validated_by_pydantic(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    """Plain environment text (OCR_HOOK_REVIEW_CONCURRENCY=4, OCR_HOOK_REVIEW_FILTER=false) is
    converted without pydantic; anything else is left to pydantic, which names the problem."""
    repo.commit({"app.py": "x = 1\n"}, "init")
    env = llm.env(OCR_HOOK_REVIEW_CONCURRENCY="4", OCR_HOOK_REVIEW_FILTER="false")
    rc, loaded, _ = probe(["review"], repo.path, env)
    assert (rc, loaded) == (0, [])
    rc, loaded, _ = probe(["review"], repo.path, llm.env(OCR_HOOK_REVIEW_CONCURRENCY="4.0"))
    assert (rc, loaded) == (0, ["pydantic"])  # pydantic's own conversion
    rc, loaded, _ = probe(["review"], repo.path, llm.env(OCR_HOOK_REVIEW_CONCURRENCY="x"))
    assert (rc, loaded) == (2, ["pydantic"])


def test_skipped_hook_imports_no_heavy_module(repo: GitRepo, llm: ScriptedLLM) -> None:
    repo.stage({"app.py": "x = 1\n"})
    rc, loaded, _ = probe(["hook", "pre-commit"], repo.path, llm.env(OCR_HOOK_SKIP="1"))
    assert (rc, loaded, len(llm.requests)) == (0, [], 0)


def test_detect_secrets_loads_only_when_on_and_never_for_a_preview(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    repo.stage({"app.py": "x = 1\n"})
    on = {**llm.env(), "OCR_HOOK_SECURITY_DETECT_SECRETS": "true"}
    rc, loaded, _ = probe(["review", "--preview"], repo.path, on)
    assert (rc, "detect_secrets" in loaded, llm.requests) == (0, False, [])
    llm.tool_calls(("task_done", {"state": "DONE"}))
    rc, loaded, out = probe(["review", "--format", "json", "--no-cache"], repo.path, on)
    assert (rc, json.loads(out)["status"], "detect_secrets" in loaded) == (0, "complete", True)


# The LLM part of a run: loaded only when there is something to send to a
# model and no cached result answers it.
LLM_ONLY = {"ocr_hook.pipeline.llm_stage", "ocr_hook.agent.prompts", "ocr_hook.pipeline.group",
            "ocr_hook.util.workers", "ocr_hook.util.templates", "ocr_hook.comments.pool", "ocr_hook.comments.anchor",
            "ocr_hook.agent.loop", "ocr_hook.agent.meter", "ocr_hook.llm.http", "ocr_hook.tools",
            "ocr_hook.util.tokens", "ocr_hook.pipeline.ranges"}
# ... and what a cache hit needs besides: the redaction of the diffs (the key), the lock, the
# cached groups
CACHE_HIT = {"ocr_hook.agent", "ocr_hook.agent.redactor", "ocr_hook.pipeline.lock",
             "ocr_hook.pipeline.cache.policy", "ocr_hook.agent.grouping"}
# The command layer only: what `-h` and a skipped hook import.
COMMAND_LAYER = {"ocr_hook", "ocr_hook.cli", "ocr_hook.cli.main", "ocr_hook.cli.parser",
                 "ocr_hook.cli.common", "ocr_hook.errors", "ocr_hook.exitcodes", "ocr_hook.util"}
# ... and, for a parser with review flags (a hook's), the --format names: the registry alone
FORMAT_NAMES = {"ocr_hook.report", "ocr_hook.report.formats"}


def test_cheap_paths_import_none_of_the_llm_machinery(repo: GitRepo, llm: ScriptedLLM) -> None:
    """Nothing to review, a preview and a cache hit load no LLM-only module; the first two
    neither the run lock nor the result cache (nothing is cached or locked without a model)."""
    repo.commit({"README.md": "hi\n"}, "init")
    rc, _, ours, out, _ = probe_all(["review", "--format", "json"], repo.path, llm.env())
    assert (rc, json.loads(out)["status"]) == (0, "skipped")
    assert ours & (LLM_ONLY | CACHE_HIT | {"ocr_hook.pipeline.cache.store", "ocr_hook.comments.dismissals",
                                           "ocr_hook.report.session_read"}) == set()
    # the index matches HEAD: no change set to load or scan
    assert ours & {"ocr_hook.pipeline.input", "ocr_hook.change.changeset", "ocr_hook.change.scan"} == set()
    assert "ocr_hook.report.session" in ours  # every real run keeps its session log (spec §12)
    repo.stage({"app.py": "x = 1\n"})
    rc, _, ours, out, _ = probe_all(["review", "--preview", "--format", "json"], repo.path,
                                 llm.env())
    assert (rc, [(f["path"], f["will_review"]) for f in json.loads(out)["files"]]) == (
        0, [("app.py", True)])
    assert ours & (LLM_ONLY | CACHE_HIT | {"ocr_hook.pipeline.cache.store", "ocr_hook.report.session",
                                           "ocr_hook.report.progress", "ocr_hook.comments.dismissals"}) == set()
    llm.tool_calls(("task_done", {"state": "DONE"}))
    rc, _, ours, out, _ = probe_all(["review", "--format", "json"], repo.path, llm.env())
    assert (rc, json.loads(out)["summary"]["cache_hits"], len(llm.requests)) == (0, 0, 1)
    assert LLM_ONLY - {"ocr_hook.pipeline.ranges", "ocr_hook.util.tokens"} <= ours  # the probe sees it run
    rc, _, ours, out, _ = probe_all(["review", "--format", "json"], repo.path, llm.env())
    assert (rc, json.loads(out)["summary"]["cache_hits"], len(llm.requests)) == (0, 1, 1)
    assert ours & LLM_ONLY == set()
    assert CACHE_HIT <= ours


@pytest.mark.parametrize(("argv", "env", "names"), [
    (["-h"], {}, set()),
    (["hook", "pre-commit"], {"OCR_HOOK_SKIP": "1"}, FORMAT_NAMES),
])
def test_help_and_a_skipped_hook_import_only_the_command_layer(
    repo: GitRepo, argv: list[str], env: dict[str, str], names: set[str],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    rc, loaded, ours, _, std = probe_all(argv, repo.path, env)
    assert (rc, loaded, ours) == (0, [], COMMAND_LAYER | names)
    assert std == ["json"]  # neither logging nor typing: only argparse and the parser


def test_rule_layers_name_the_shared_dismissal_file_without_importing_dismiss() -> None:
    from ocr_hook.change import rule_sources
    from ocr_hook.comments import dismissals

    assert rule_sources.SHARED_DISMISSALS == dismissals.SHARED_FILE == ".ocr-hook-dismissed.json"
