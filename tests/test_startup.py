"""Start-up cost (SPEC §15, issue 18): heavy modules load only on the paths that need them:
no pydantic (validation of data that needs converting), requests (HTTP), tiktoken (token
tables) or pathspec (globs) on a run that never reaches them. Each check runs in a fresh
interpreter, because this test process has long imported everything.

Real: a subprocess interpreter, ``cli.main``, git, HTTP to the scripted loopback model.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("tiktoken", "mcp", "mcp_types", "anyio", "httpx2", "requests", "detect_secrets",
         "pydantic", "pathspec")

PROBE = """\
import json, sys
from ocr_hook import cli
rc = cli.main(sys.argv[1:])
heavy = {heavy!r}
loaded = sorted(m for m in sys.modules if m.split(".")[0] in heavy)
sys.stderr.write("\\nLOADED=" + json.dumps(sorted({{m.split(".")[0] for m in loaded}})) + "\\n")
sys.stderr.write("RC=" + str(rc) + "\\n")
"""


def probe(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, list[str], str]:
    """Run ``cli.main(argv)`` in a new interpreter; return (rc, top-level heavy modules, stdout)."""
    full = dict(os.environ)
    full.update(env)
    full["PYTHONPATH"] = str(ROOT)
    p = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY), *argv], cwd=cwd,
                       env=full, capture_output=True, text=True, timeout=120, check=False)
    lines = p.stderr.splitlines()
    loaded = json.loads(next(ln for ln in lines if ln.startswith("LOADED="))[7:])
    rc = int(next(ln for ln in lines if ln.startswith("RC="))[3:])
    return rc, loaded, p.stdout


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
    assert loaded == ["pathspec"]  # the rule map's patterns: the rules are part of the key


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
