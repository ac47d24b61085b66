"""Every tool result passes the diff's scanner, whatever file it comes from (spec §14.2): the
realistic fake secrets of ``tests/support/secret_corpus.py``, in files that are not reviewed
(excluded by ``select.exclude``, an unsupported extension, a test fixture, a provider
directory, too large for the model, unchanged since the last commit, on the secret-path list)
and in a file name, read by the model through ``file_read``, ``code_search``, ``file_find``,
``file_read_diff`` and an MCP server that reads files, never reach the next model request;
each tool did return those files (placeholders, exact rows).

Real: git repositories, ``git ocr review`` (``cli.main``), HTTP to the scripted loopback model
that records every request, an MCP server process (the SDK's stdio transport). Fake: the
secrets (never issued) and the model's replies.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from ocr_hook.tools.mcp.text import RESULT_MAX_CHARS
from tests.support import secret_corpus as corpus
from tests.support.cli import run_json
from tests.support.gitrepo import GitRepo
from tests.support.home import write_user_config
from tests.support.scripted_llm import ScriptedLLM

FILES = corpus.corpus_files()  # path -> text, every corpus case
FILLER = "# filler line of a file too large for the model\n" * 24_000  # > 1 MiB
NAMED = f"tokens/{corpus.GH_APP}.txt"  # a secret in a file name
BARE = "ci/token.txt"  # a token alone on its line
ENV = f"GITHUB_TOKEN={corpus.GH_CLASSIC}\n"
LEAKS = (*corpus.all_leaks(), *(token[j:j + 8] for token in (corpus.GH_APP, corpus.GH_CLASSIC)
                                 for j in range(4, len(token) - 7)))
# Where each copy of the corpus lives, and why it is not reviewed.
PLACES = {
    "excluded/{}": "user_exclude",
    "{}.txt": "unsupported_ext",
    "tests/fixtures/{}": "default_path",
    "node_modules/acme/{}": "provider_directory",
}
OLD = "old/{}"  # committed before: unchanged
SETTINGS_ROWS = ['1|AWS_ACCESS_KEY_ID = "[REDACTED:aws-access-key]"',
                 '2|aws_secret_access_key = "[REDACTED:aws-secret-key]"',
                 '3|LEGACY_KEY_ID = ("[REDACTED:aws-access-key]"',
                 '4|                 "[REDACTED:aws-access-key]")']
BIG = "big/settings.py"  # the Python corpus file and a megabyte of comments: too_large
MCP_SERVER = '''
import sys
from mcp.server import MCPServer

server = MCPServer("files")


@server.tool()
def read_text(path: str, pad: int = 0) -> str:
    """A repository file's text, after a line of pad characters when pad is given."""
    with open(path, encoding="utf-8", newline="") as f:
        return ("y" * pad + "\\n" if pad else "") + f.read()


server.run()
'''


def copies(*places: str) -> dict[str, str]:
    """Path of each copy of the corpus in ``places`` -> the corpus path it copies."""
    return {place.format(p): p for place in places for p in FILES}


def staged_paths() -> list[str]:
    return list(copies(*PLACES))


@pytest.fixture
def change(repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> GitRepo:
    """The corpus committed under old/, staged again in every place of PLACES and in BIG,
    .env and NAMED staged, and app.py, the one file reviewed."""
    write_user_config('[select]\nexclude = ["excluded/**"]\n')
    repo.commit({"README.md": "hi\n", **{OLD.format(p): t for p, t in FILES.items()}}, "init")
    repo.stage({"app.py": "x = 1\n", ".env": ENV, NAMED: "ok\n", BARE: corpus.GH_CLASSIC + "\n",
                BIG: FILES[corpus.PY] + FILLER,
                **{place.format(p): t for place in PLACES for p, t in FILES.items()}})
    monkeypatch.chdir(repo.path)
    return repo


def review(repo: GitRepo, llm: ScriptedLLM, capsys: pytest.CaptureFixture[str],
           *calls: tuple[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """One review whose model makes ``calls`` in its first reply, then ends: (the JSON
    result, the tool results of the second request). Asserts the exit code (the staged
    secrets are blocking findings), the reasons of the files and that no request carries a
    leak of the corpus, the name or the .env token."""
    llm.tool_calls(*calls)
    llm.tool_calls(("task_done", {"state": "DONE"}))
    before = repo.state()
    rc, data, err = run_json(["review", "--format", "json", "--effort", "low", "--no-filter"],
                             llm.env(), capsys)
    assert rc == 1, err
    reasons = {f["path"]: f["reason"] for f in data["files"]}
    assert {p: reasons[p] for p in staged_paths()} == {
        place.format(p): why for place, why in PLACES.items() for p in FILES}
    assert (reasons[BIG], reasons[".env"], reasons["app.py"]) == ("too_large", "secret_path", "")
    assert len(llm.requests) == 2
    sent = "\n".join(texts(llm.requests))
    assert [leak for leak in LEAKS if leak in sent] == []
    assert repo.state() == before
    return data, [m["content"] for m in llm.requests[1]["messages"] if m["role"] == "tool"]


def texts(requests: list[dict[str, Any]]) -> list[str]:
    """Every text of the requests as the model reads it (JSON strings decoded): message
    contents and tool-call arguments."""
    out: list[str] = []
    for body in requests:
        for m in body["messages"]:
            content = m.get("content")
            out += [content] if isinstance(content, str) else [
                b.get("text", "") for b in content or [] if isinstance(b, dict)]
            out += [c["function"]["arguments"] for c in m.get("tool_calls") or []]
    return out


def test_file_read_of_files_not_reviewed_sends_no_secret(
        change: GitRepo, llm: ScriptedLLM, capsys: pytest.CaptureFixture[str]) -> None:
    paths = copies(*PLACES, OLD)
    _, results = review(change, llm, capsys, *(("file_read", {"file_path": p}) for p in [
        *paths, ".env", BIG]))
    for (path, source), result in zip(paths.items(), results, strict=False):
        lines = FILES[source].count("\n")
        assert result.startswith(f"File: {path} (Total lines: {lines})"), path
        assert "[REDACTED:" in result
    assert results[len(paths)] == ('Error: ".env" is on the secret-path list (keys, .env,'
                                   " credentials); its content is never shared")
    assert results[-1].startswith(f'Error: "{BIG}" is too large to read')
    settings = [r for (_, source), r in zip(paths.items(), results, strict=False)
                if source == corpus.PY]
    assert [r.split("\n")[3:7] for r in settings] == [SETTINGS_ROWS] * (len(PLACES) + 1)


def test_code_search_in_files_not_reviewed_sends_no_secret(
        change: GitRepo, llm: ScriptedLLM, capsys: pytest.CaptureFixture[str]) -> None:
    searches = [{"search_text": t, "file_patterns": [f"{top}/**"]}
                for t in ("=", ":", "(", "-----") for top in ("excluded", "old", "big")]
    searches += [{"search_text": t, "file_patterns": ["*.txt"]} for t in ("=", '"')]
    searches += [{"search_text": r"^\s*\S", "use_perl_regexp": True}, {"search_text": "KEY"}]
    _, results = review(change, llm, capsys, *(("code_search", s) for s in searches))
    assert all(r.startswith(("File: ", "Note: output truncated")) for r in results), results
    assert sum(r.count("[REDACTED:") for r in results) > 300
    for path, result in zip((f"excluded/{corpus.PY}", f"old/{corpus.PY}", BIG), results,
                            strict=False):
        assert result.split("\n")[:6] == [f"File: {path}", "Match lines: 36", *SETTINGS_ROWS[:3],
            '5|GITHUB_TOKEN = "[REDACTED:github-token]"']  # line 4, a key's piece, has no =


def test_file_find_on_a_secret_in_a_file_name_sends_no_secret(
        change: GitRepo, llm: ScriptedLLM, capsys: pytest.CaptureFixture[str]) -> None:
    _, results = review(change, llm, capsys, ("file_find", {"query_name": "tokens/"}),
                        ("file_find", {"query_name": corpus.GH_APP[:8]}),
                        ("file_find", {"query_name": ".txt"}))
    assert results[0] == "tokens/[REDACTED:github-token].txt"
    assert results[1] == f"No file name or path contains '{corpus.GH_APP[:8]}'."
    assert "tokens/[REDACTED:github-token].txt" in results[2].split("\n")


def test_file_read_diff_of_files_not_reviewed_sends_no_secret(
        change: GitRepo, llm: ScriptedLLM, capsys: pytest.CaptureFixture[str]) -> None:
    paths = [p.format(corpus.PY) for p in PLACES]
    _, results = review(change, llm, capsys, *(("file_read_diff", {"path_array": [p]})
                                               for p in [*paths, ".env", BIG]))
    for path, result in zip(paths, results, strict=False):
        assert result.startswith(f"==== FILE: {path} ====\ndiff --git"), path
        assert '+AWS_ACCESS_KEY_ID = "[REDACTED:aws-access-key]"' in result
    assert results[len(paths)] == "Error: diff not found for the requested paths"
    assert results[-1] == (f"==== FILE: {BIG} ====\n(diff not shown: the file is"
                           f" {len(FILES[corpus.PY] + FILLER)} bytes, above select.max_file_bytes)")


def test_mcp_results_of_files_not_reviewed_send_no_secret(
        change: GitRepo, llm: ScriptedLLM, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    script = tmp_path / "files_server.py"
    script.write_text(MCP_SERVER, encoding="utf-8")
    write_user_config('[select]\nexclude = ["excluded/**"]\n'
                      f"[mcp.servers.files]\ncommand = {json.dumps(sys.executable)}\n"
                      f"args = {json.dumps([str(script)])}\n")
    paths = [*staged_paths(), *(OLD.format(p) for p in FILES), ".env", NAMED, BIG]
    cut = RESULT_MAX_CHARS - 16  # a token whose first 16 characters fit under the cap
    calls = [("read_text", {"path": str(change.path / p)}) for p in paths]
    calls.append(("read_text", {"path": str(change.path / BARE), "pad": cut - 1}))
    _, results = review(change, llm, capsys, *calls)
    assert results[0].split("\n")[:4] == [row.split("|", 1)[1] for row in SETTINGS_ROWS]
    assert all("[REDACTED:" in r for r in results[:len(paths) - 2])
    assert results[len(paths) - 3] == "GITHUB_TOKEN=[REDACTED:github-token]\n"
    assert results[-1] == "y" * (cut - 1) + f"\nNote: result truncated to {RESULT_MAX_CHARS} chars."
