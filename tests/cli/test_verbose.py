"""``-v``/``--verbose``: debug lines on stderr (the LLM request's URL and timing), never the API
key. Real: git, HTTP to the loopback model, the command line; fake: the model's replies."""

from __future__ import annotations

import re
import sys

import pytest

from tests.support.cli import run_cli
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

KEY = "sk-verbose-secret-123456"


def review(repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
           capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    monkeypatch.chdir(repo.path)
    llm.tool_calls(("task_done", {"state": "DONE"}))
    rc, _, err = run_cli(args, llm.env(OCR_LLM_TOKEN=KEY, OCR_HOOK_EFFORT="low"), capsys,
                         review_filter=False)
    return rc, err


@pytest.mark.parametrize("argv", [("review", "-v"), ("-v", "review"), ("review",)])
def test_verbose_logs_the_llm_request_url_and_timing_but_never_the_key(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    repo.stage({"ok.py": "X = 1\n"})
    rc, err = review(repo, llm, monkeypatch, capsys, *argv, "--no-cache")
    assert rc == 0 and len(llm.requests) == 1
    sent = [ln for ln in err.splitlines() if ln.startswith("ocr-hook: LLM request 1: ")]
    if "-v" not in argv:
        assert sent == []
        return
    found = re.fullmatch(r"ocr-hook: LLM request 1: POST (\S+) \((\d+) bytes\)", sent[0])
    assert found and found.group(1) == f"{llm.url}/chat/completions", sent
    assert found.group(2) == llm.headers[0]["content-length"]
    assert re.fullmatch(r"ocr-hook: LLM request 1: answer after \d+\.\d\ds", sent[1]), sent
    assert len(sent) == 2
    assert llm.headers[0]["authorization"] == f"Bearer {KEY}"  # the key was in use
    assert KEY not in err and KEY[-6:] not in err


@pytest.mark.parametrize(("argv", "hint"), [
    (["cache", "stats"], "run again as `git ocr -v cache …` for details"),
    (["hook", "pre-commit"], "for details, run the review by hand with -v: `git ocr -v review`"),
    (["-v", "cache", "stats"], "traceback below"),
])
def test_internal_error_names_the_flag_that_shows_the_traceback(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    argv: list[str], hint: str,
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    monkeypatch.chdir(repo.path)

    def boom(*_a: object) -> int:  # a bug in a command: the one error boundary catches it
        raise RuntimeError("unexpected state")

    monkeypatch.setattr(sys.modules["ocr_hook.cli.main"], "_dispatch", boom)
    rc, _, err = run_cli(argv, {}, capsys)
    assert rc == 0
    assert err.splitlines()[0] == ("ocr-hook: NOT REVIEWED: internal error RuntimeError:"
                                   f" unexpected state ({hint})")
    assert ("Traceback (most recent call last)" in err) == ("-v" in argv)
