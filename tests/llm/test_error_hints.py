"""Issue 28, item 9: an endpoint that answers 404, 405 or 501 gets a one-line error that names
the settings to check (``llm.model``, ``llm.protocol``, the base URL) and the URL the request
went to; 405 and 501 (a server that does not speak the API) are not retried.

Real: a ``git ocr`` process in a temporary git repository, the loopback ScriptedLLM, HTTP.
"""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from ocr_hook.llm import http
from tests.support.cli import GIT_OCR
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM


def git_ocr(repo: GitRepo, *args: str, env: dict[str, str]) -> tuple[int, str, str, float]:
    """``git ocr ARGS`` as a user runs it (git finds ``git-ocr`` on PATH) in ``repo``:
    (exit code, stdout, stderr, seconds)."""
    path = f"{GIT_OCR.parent}{os.pathsep}{repo.env.get('PATH', os.environ['PATH'])}"
    t0 = time.monotonic()
    p = subprocess.run(["git", "ocr", *args], cwd=repo.path, capture_output=True, text=True,
                       env={**repo.env, "PATH": path, **env}, timeout=120, check=False)
    return p.returncode, p.stdout, p.stderr, time.monotonic() - t0


def hint(status: int, server: ScriptedLLM, message: str) -> str:
    """The one-line error the client gives for ``status`` from ``server``."""
    path = "/chat/completions" if server.protocol == "openai" else "/v1/messages"
    where = f"HTTP {status} from {server.url}{path}"
    if status == 404:
        return (f"LLM endpoint or model not found ({where}): {message}; check llm.model"
                f" (scripted-model), llm.protocol ({server.protocol}) and the base URL"
                " (llm.base_url)")
    return (f"LLM endpoint refused the call ({where}): {message}; the server at this URL does"
            f" not take the {server.protocol} API: check the base URL (llm.base_url) and"
            f" llm.protocol ({server.protocol})")


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
@pytest.mark.parametrize("status", [404, 405, 501])
def test_review_names_the_settings_to_check_and_does_not_retry(
        repo: GitRepo, status: int, protocol: str) -> None:
    repo.commit({"a.py": "x = 1\n"}, "init")
    repo.stage({"a.py": "x = 2\n"})
    server = ScriptedLLM(protocol)
    try:
        for _ in range(4):  # enough for every retry the old policy made
            server.reply({"error": {"message": "Not Found"}}, status=status)
        rc, out, err, took = git_ocr(repo, "review", env=server.env())
        requests = len(server.paths)
    finally:
        server.close()
    assert (rc, requests) == (0, 1)  # gate.on_error = allow; one request, no retry
    assert f"NOT REVIEWED: {hint(status, server, 'Not Found')}" in out.splitlines()
    assert "retry" not in err
    assert took < 3.0  # the three retries of a 501 used to take 3.6 s


@pytest.mark.parametrize("status", [404, 405, 501])
def test_llm_test_shows_the_same_hint(repo: GitRepo, llm: ScriptedLLM, status: int) -> None:
    llm.reply({"error": {"message": "no such route"}}, status=status)
    llm.reply({"error": {"message": "no such route"}}, status=status)
    rc, out, err, _ = git_ocr(repo, "llm", "test", env=llm.env())
    assert rc == 3
    assert len(llm.paths) == 1
    assert f"FAILED:   {hint(status, llm, 'no such route')}" in out.splitlines()
    assert "Traceback" not in err


def test_a_wrong_protocol_against_an_openai_server_is_a_404_naming_the_protocol(
        repo: GitRepo, llm: ScriptedLLM) -> None:
    # an OpenAI-only server asked the Anthropic way: http.server answers an unknown path with
    # the scripted 404 all the same, and the hint names the protocol that was used
    llm.reply({"error": {"message": "Not Found"}}, status=404)
    env = llm.env(OCR_LLM_PROTOCOL="anthropic", OCR_LLM_URL=llm.url.removesuffix("/v1"))
    rc, out, _, _ = git_ocr(repo, "llm", "test", env=env)
    assert rc == 3 and llm.paths == ["/v1/messages"]
    assert (f"FAILED:   LLM endpoint or model not found (HTTP 404 from"
            f" {llm.url}/messages): Not Found; check llm.model (scripted-model), llm.protocol"
            " (anthropic) and the base URL (llm.base_url)") in out.splitlines()


def test_classify_without_a_url_still_names_the_settings() -> None:
    e = http.classify(404, {"error": {"message": "model 'x' not found"}})
    assert str(e) == ("LLM endpoint or model not found (HTTP 404): model 'x' not found; check"
                      " llm.model, llm.protocol and the base URL (llm.base_url)")
    assert (e.kind, e.retryable) == ("bad_request", False)
    e = http.classify(501, "<html><title>501 Not Implemented</title></html>")
    assert str(e) == ("LLM endpoint refused the call (HTTP 501): 501 Not Implemented; the"
                      " server at this URL does not take this API: check the base URL"
                      " (llm.base_url) and llm.protocol")
    assert (e.kind, e.retryable) == ("bad_request", False)


def test_the_hint_never_shows_user_info_or_the_query_of_the_url() -> None:
    e = http.classify(404, "Not Found", url="http://u:hunter2@h:8/v1/chat/completions?key=sk-q",
                      model="m")
    assert str(e) == ("LLM endpoint or model not found (HTTP 404 from"
                      " http://h:8/v1/chat/completions): Not Found; check llm.model (m),"
                      " llm.protocol (openai) and the base URL (llm.base_url)")


def test_other_5xx_are_still_retried() -> None:
    for status in (500, 502, 504):
        assert http.classify(status, "x").retryable is True
