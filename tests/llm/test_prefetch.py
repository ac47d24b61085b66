"""Tests for ocr_hook.llm.prefetch: the HTTP stack imported on a background thread once a
review is certain to call the LLM, and ``make_client`` waiting for it.

Each check runs in a fresh interpreter (this test process has long imported ``requests``).
A failing or slow import is made real with a meta-path finder placed in front of the normal
ones: it refuses ``requests`` (as a missing install would) or sleeps before letting the normal
finders find it.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

from tests.support.cli import run_python
from tests.support.gitrepo import GitRepo
from tests.support.paths import ROOT
from tests.support.scripted_llm import ScriptedLLM

FINDERS = """\
import sys, threading, time

class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name == "requests":
            raise ModuleNotFoundError("No module named 'requests'", name="requests")
        return None

class Slow:
    seen = []
    def find_spec(self, name, path=None, target=None):
        if name == "requests":
            Slow.seen.append(threading.current_thread().name)
            time.sleep(0.3)
        return None

def endpoint():
    from ocr_hook.llm.types import Endpoint
    return Endpoint(protocol="openai", url="http://127.0.0.1:9/v1", model="m", api_key="k")
"""


def run(code: str, env: dict[str, str] | None = None, cwd: Path = ROOT
        ) -> subprocess.CompletedProcess[str]:
    """``code`` (dedented) after FINDERS in a fresh interpreter."""
    return run_python(["-c", FINDERS + textwrap.dedent(code)], cwd=cwd, env=env)


def test_a_failed_background_import_changes_nothing() -> None:
    p = run("""
        sys.meta_path.insert(0, Blocker())
        from ocr_hook.llm import make_client, prefetch
        print(prefetch.start_prefetch(), prefetch.start_prefetch())
        prefetch.wait()
        print(prefetch._thread.is_alive(), "requests" in sys.modules)
        try:
            make_client(endpoint())
        except ModuleNotFoundError as e:
            print("raised", e.name)
        sys.meta_path.pop(0)
        print(type(make_client(endpoint())).__name__)
    """)
    assert p.stdout.splitlines() == ["True False", "False False", "raised requests",
                                     "OpenAIClient"]
    assert p.stderr == ""  # the thread's failure is not printed (make_client raised it)


def test_a_slow_background_import_is_waited_for_and_done_once() -> None:
    p = run("""
        sys.meta_path.insert(0, Slow())
        from ocr_hook.llm import prefetch
        prefetch.start_prefetch()
        prefetch.wait(0.01)  # returns while the thread still imports
        print(prefetch._thread.is_alive())
        import ocr_hook.llm.http  # blocks on the module until the thread has imported it
        prefetch.wait()
        print(prefetch._thread.is_alive(), Slow.seen,
              ocr_hook.llm.http.requests is sys.modules["requests"])
        from ocr_hook.llm import make_client
        print(type(make_client(endpoint())).__name__, len(Slow.seen))
    """)
    assert p.stdout.splitlines() == ["True", "False ['ocr-http-import'] True",
                                     "OpenAIClient 1"], p.stderr
    assert p.stderr == ""


def test_no_thread_once_the_http_stack_is_imported() -> None:
    p = run("""
        import ocr_hook.llm.http
        from ocr_hook.llm import prefetch
        print(prefetch.start_prefetch(), prefetch._thread)
    """)
    assert p.stdout.splitlines() == ["False None"]


PROBE = """\
import json, sys
from ocr_hook.llm import prefetch
snap = {}
real_start, real_wait = prefetch.start_prefetch, prefetch.wait
def start():
    snap["at_start"] = sorted(sys.modules)
    return real_start() if MODE == "real" else False
def wait(timeout=prefetch.JOIN_TIMEOUT_S):
    snap.setdefault("at_wait", sorted(sys.modules))
    return real_wait(timeout)
prefetch.start_prefetch, prefetch.wait = start, wait
from ocr_hook import cli
rc = cli.main(sys.argv[1:])
thread = prefetch._thread
snap.update(rc=rc, thread=thread.name if thread else None,
            alive=bool(thread and thread.is_alive()))
sys.stderr.write("\\nSNAP=" + json.dumps(snap) + "\\n")
"""


def probe(mode: str, argv: list[str], cwd: Path, env: dict[str, str]) -> dict[str, object]:
    p = run_python(["-c", f"MODE = {mode!r}\n" + PROBE, *argv], cwd=cwd, env=env)
    line = next(ln for ln in p.stderr.splitlines() if ln.startswith("SNAP="))
    return dict(json.loads(line[5:]))


def test_a_review_imports_http_in_the_background_without_sharing_modules(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    """The thread starts once the LLM is certain (after the cache lookup) and make_client waits
    for it. While it runs, the main thread imports only modules the HTTP stack does not: two
    threads importing the same modules could wait on each other's module locks."""
    repo.stage({"app.py": "x = 1\n"})
    llm.tool_calls(("task_done", {"state": "DONE"}))
    llm.tool_calls(("task_done", {"state": "DONE"}))
    argv = ["review", "--format", "json", "--no-cache"]
    real = probe("real", argv, repo.path, llm.env())
    assert (real["rc"], real["thread"], real["alive"], len(llm.requests)) == (
        0, "ocr-http-import", False, 1)
    # the same run without the thread: what the main thread imports between start and wait
    alone = probe("off", argv, repo.path, llm.env())
    assert (alone["rc"], alone["thread"], len(llm.requests)) == (0, None, 2)
    at_start = [m for m in alone["at_start"] if not m.startswith("__")]  # type: ignore[union-attr]
    main_window = {m for m in alone["at_wait"]  # type: ignore[union-attr]
                   if not m.startswith("__")} - set(at_start)
    code = ("import importlib, json, sys\n"
            f"for m in {at_start!r}:\n"
            "    try:\n        importlib.import_module(m)\n"
            "    except Exception:\n        pass\n"
            "before = set(sys.modules)\nimport ocr_hook.llm.http\n"
            "print(json.dumps(sorted(set(sys.modules) - before)))\n")
    out = run_python(["-c", code], cwd=repo.path, check=True).stdout
    http_stack = set(json.loads(out.splitlines()[-1]))
    assert "requests" in http_stack and "urllib3" in http_stack
    assert main_window and not main_window & http_stack


def test_no_thread_for_a_cache_hit_or_a_preview(repo: GitRepo, llm: ScriptedLLM) -> None:
    repo.stage({"app.py": "x = 1\n"})
    snap = probe("real", ["review", "--preview"], repo.path, llm.env())
    assert (snap["rc"], snap["thread"], "at_start" in snap) == (0, None, False)
    llm.tool_calls(("task_done", {"state": "DONE"}))
    snap = probe("real", ["review", "--format", "json"], repo.path, llm.env())
    assert (snap["rc"], snap["thread"]) == (0, "ocr-http-import")
    snap = probe("real", ["review", "--format", "json"], repo.path, llm.env())  # cache hit
    assert (snap["rc"], snap["thread"], "at_start" in snap, len(llm.requests)) == (
        0, None, False, 1)
