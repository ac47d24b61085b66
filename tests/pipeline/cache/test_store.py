"""Result cache (spec §10) through ``cli.main`` on real repositories against the scripted
loopback model. Real: git, HTTP, the cache files on disk, concurrent processes; fake: the
model's replies. Requests are counted on the scripted server."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ocr_hook import cli
from ocr_hook.pipeline.cache.entries import parse_envelope
from ocr_hook.pipeline.cache.store import ResultCache, cache_dir
from tests.support.cli import GIT_OCR, cli_environ, run_cli, run_json
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM, openai_text, openai_tool_calls

BUGGY = "def div(a, b):\n    return a / b\n"
DIV_QUOTE = "    return a / b"


def div_comment(path: str) -> dict[str, Any]:
    return {"comments": [{
        "path": path, "content": "Division by zero when b is 0.",
        "existing_code": DIV_QUOTE, "suggestion_code": "    return a / b if b else 0",
        "severity": "high", "category": "bug",
    }]}


def main_requests(llm: ScriptedLLM, start: int = 0) -> list[dict[str, Any]]:
    """Main-loop requests (those offering ``code_comment``) from index ``start`` on."""
    return [r for r in llm.requests[start:]
            if any(t.get("function", {}).get("name") == "code_comment" for t in r.get("tools", []))]


def user_text(request: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in request["messages"]
                     if m["role"] == "user" and isinstance(m["content"], str))


def cache_files(repo: GitRepo) -> list[Path]:
    return sorted(p for p in cache_dir(repo.path / ".git").rglob("*") if p.is_file())


def test_unchanged_snapshot_is_answered_from_the_cache_with_zero_llm_requests(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    repo.stage({"calc.py": BUGGY})
    llm.tool_calls(("code_comment", div_comment("calc.py")), ("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    rc1, first, _ = run_json(["review", "--format", "json", "--effort", "low"], llm.env(), capsys,
                             review_filter=False)
    assert rc1 == 1
    assert len(llm.requests) == 1
    assert first["summary"]["cache_hits"] == 0 and first["summary"]["llm_calls"] == 1
    rc2, second, _ = run_json(["review", "--format", "json", "--effort", "low"], llm.env(), capsys,
                              review_filter=False)
    assert len(llm.requests) == 1  # no request at all on the second run
    assert rc2 == 1
    assert second["comments"] == first["comments"]
    assert second["comments"][0]["start_line"] == 2
    assert second["summary"]["cache_hits"] == 1
    assert second["summary"]["llm_calls"] == 0
    assert second["status"] == "complete" and second["verdict"] == "findings"
    assert second["files"] == first["files"]
    # text output says it is a cached result
    rc3, out, _ = run_cli(["review", "--effort", "low"], llm.env(), capsys, review_filter=False)
    assert rc3 == 1 and len(llm.requests) == 1
    assert "(cached result: this snapshot was reviewed before with the same settings)" in out
    assert "1 cache hit(s)" in out


def test_no_cache_flag_bypasses_reads_and_writes(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"calc.py": BUGGY})
    monkeypatch.chdir(repo.path)
    args = ["review", "--format", "json", "--effort", "low", "--no-cache"]
    run_json(args, llm.env(), capsys, review_filter=False)
    _, data, _ = run_json(args, llm.env(), capsys, review_filter=False)
    assert len(llm.requests) == 2
    assert data["summary"]["cache_hits"] == 0
    assert cache_files(repo) == []
    _, data, _ = run_json(["review", "--format", "json", "--effort", "low"],
                          llm.env(OCR_HOOK_NO_CACHE="1"), capsys, review_filter=False)
    assert len(llm.requests) == 3 and cache_files(repo) == []


def test_editing_one_of_ten_files_reviews_exactly_one_group_again(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    files = {f"mod{i}.py": f"def f{i}(x):\n    return x + {i}\n" for i in range(10)}
    files["mod3.py"] = BUGGY
    repo.stage(files)
    # the grouping call (≥ 4 files, spec §6.1) sees the file list; answer: one group per file
    answer = [{"label": f"module {i}", "files": [f"mod{i}.py"]} for i in range(10)]
    llm.reply(openai_text(json.dumps(answer)), match="[0] ADDED mod0.py")
    llm.reply(openai_tool_calls(("code_comment", div_comment("mod3.py")),
                                ("task_done", {"state": "DONE"})),
              match='<file path=\\"mod3.py\\"')
    monkeypatch.chdir(repo.path)
    args = ["review", "--format", "json", "--effort", "low"]
    _, first, _ = run_json(args, llm.env(), capsys, review_filter=False)
    assert len(llm.requests) == 11 and len(main_requests(llm)) == 10
    assert first["groups"] == [{"label": f"module {i}", "files": [f"mod{i}.py"]} for i in range(10)]
    assert [(c["path"], c["start_line"]) for c in first["comments"]] == [("mod3.py", 2)]
    # edit one file; same line counts, so the file list and its stats are unchanged
    before = len(llm.requests)
    repo.stage({"mod7.py": "def f7(x):\n    return x - 7\n"})
    _, second, _ = run_json(args, llm.env(), capsys, review_filter=False)
    assert len(llm.requests) == before + 1  # no grouping call: its answer is cached too
    [again] = main_requests(llm, before)
    assert '<file path="mod7.py"' in user_text(again)
    assert second["summary"]["cache_hits"] == 10  # the grouping answer and nine groups
    assert second["groups"] == first["groups"]
    assert second["comments"] == first["comments"]  # mod3's finding comes from the cache
    assert all(f["reviewed"] for f in second["files"] if f["path"] != "README.md")


@pytest.mark.parametrize("change", ["model", "effort", "rules", "headers"])
def test_changing_model_effort_rules_or_headers_invalidates_the_cache(
    change: str, repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    repo.stage({"calc.py": BUGGY})
    monkeypatch.chdir(repo.path)
    base = ["review", "--format", "json", "--effort", "low"]
    run_json(base, llm.env(), capsys, review_filter=False)
    assert len(llm.requests) == 1
    rule = tmp_path / "team-rule.md"
    rule.write_text("- Flag every division without a zero check.\n", encoding="utf-8")
    args, env = list(base), llm.env()
    if change == "model":
        env = llm.env(OCR_LLM_MODEL="another-model")
    elif change == "headers":  # e.g. a gateway's routing header: another backend answers
        env = llm.env(OCR_HOOK_LLM_EXTRA_HEADERS='{"X-Route": "eu-large"}')
    elif change == "effort":
        args[-1] = "high"
    else:
        args += ["--rule", str(rule)]
    _, data, _ = run_json(args, env, capsys, review_filter=False)
    assert len(llm.requests) == 2
    assert data["summary"]["cache_hits"] == 0
    if change == "model":
        assert llm.requests[1]["model"] == "another-model"
    if change == "rules":
        assert "Flag every division without a zero check." in user_text(llm.requests[1])
    if change == "headers":
        assert (llm.headers[0].get("x-route"), llm.headers[1]["x-route"]) == (None, "eu-large")
    # both variants are now cached side by side
    run_json(base, llm.env(), capsys, review_filter=False)
    run_json(args, env, capsys, review_filter=False)
    assert len(llm.requests) == 2


def test_incomplete_results_are_not_cached(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"calc.py": BUGGY})
    llm.reply({"error": {"message": "bad request", "type": "invalid_request_error"}}, status=400)
    monkeypatch.chdir(repo.path)
    args = ["review", "--format", "json", "--effort", "low"]
    _, data, _ = run_json(args, llm.env(), capsys, review_filter=False)
    assert data["status"] == "failed" and data["verdict"] == "incomplete"
    assert cache_files(repo) == []
    n = len(llm.requests)
    _, data, _ = run_json(args, llm.env(), capsys, review_filter=False)
    assert len(llm.requests) == n + 1
    assert data["status"] == "complete" and data["summary"]["cache_hits"] == 0


def test_two_concurrent_runs_leave_a_valid_cache(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    repo.stage({f"m{i}.py": f"def g{i}():\n    return {i}\n" for i in range(5)})
    # every reply takes 0.4 s, so the two processes' requests and writes interleave
    llm.default = None
    for _ in range(10):
        llm.tool_calls(("task_done", {"state": "DONE"}), delay_s=0.4)
    exe = GIT_OCR
    env = {**repo.env, **llm.env(), "OCR_HOOK_EFFORT": "low", "OCR_HOOK_REVIEW_FILTER": "false"}
    procs = [subprocess.Popen([str(exe), "review", "--format", "json"], cwd=repo.path, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=60) for p in procs]
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
        assert out.startswith("{"), err
        assert json.loads(out)["status"] == "complete"
    files = cache_files(repo)
    assert files, "nothing was cached"
    assert not [p for p in files if p.name.startswith(".tmp-")]
    for p in files:
        entry = parse_envelope(p.read_bytes())
        assert entry is not None
        assert entry.key == p.stem and entry.kind == p.parent.name
    kinds = {p.parent.name for p in files}
    assert {"run", "group"} <= kinds
    n = len(llm.requests)
    monkeypatch.chdir(repo.path)
    _, data, _ = run_json(["review", "--format", "json", "--effort", "low"], llm.env(), capsys,
                          review_filter=False)
    assert len(llm.requests) == n
    assert data["summary"]["cache_hits"] == 1


def test_cache_commands_stats_prune_and_clear(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"a.py": BUGGY})
    monkeypatch.chdir(repo.path)
    run_json(["review", "--format", "json", "--effort", "low"], llm.env(), capsys,
             review_filter=False)
    repo.stage({"b.py": BUGGY})
    run_json(["review", "--format", "json", "--effort", "low"], llm.env(), capsys,
             review_filter=False)
    assert cli.main(["cache", "stats"], environ=cli_environ()) == 0
    out = capsys.readouterr().out
    root = cache_dir(repo.path / ".git")
    assert f"location: {root}" in out
    # a.py alone, then a.py + b.py as one bundle: two runs, two groups
    assert "entries:  2 run, 2 group, 0 grouping, 0 delegated" in out
    cache = ResultCache(root, 64 << 20)
    total = cache.stats().total_bytes
    assert f"({total} bytes)" in out
    assert cli.main(["cache", "prune", "--max-mb", "0"], environ=cli_environ()) == 0
    assert capsys.readouterr().out == f"pruned 4 file(s), {total} bytes freed\n"
    assert cache.stats().total_bytes == 0
    run_json(["review", "--format", "json", "--effort", "low"], llm.env(), capsys,
             review_filter=False)
    assert cache.stats().entries == {"run": 1, "group": 1, "grouping": 0, "delegated": 0}
    assert cli.main(["cache", "clear"], environ=cli_environ()) == 0
    assert capsys.readouterr().out == f"removed 2 cache entries from {root}\n"
    assert cache_files(repo) == []


def test_prune_removes_least_recently_used_entries_first(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "c", max_bytes=10_000)
    keys = [f"{i:064x}" for i in range(4)]
    for i, k in enumerate(keys):
        cache.put_grouping(k, [("g", [f"file{i}.py" * 50])])
        os.utime(cache.root / "grouping" / f"{k}.json", (1000 + i, 1000 + i))
    assert cache.get_grouping(keys[0]) is not None  # a hit makes it the most recent
    size = {k: (cache.root / "grouping" / f"{k}.json").stat().st_size for k in keys}
    removed, freed = cache.prune(max_bytes=size[keys[0]] + size[keys[3]])
    assert (removed, freed) == (2, size[keys[1]] + size[keys[2]])
    left = sorted(p.stem for p in (cache.root / "grouping").iterdir())
    assert left == sorted([keys[0], keys[3]])
    assert cache.hits == 1


def test_malformed_entry_is_a_miss_and_is_removed(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "c", max_bytes=1 << 20)
    key = "ab" * 32
    (cache.root / "run").mkdir(parents=True)
    (cache.root / "run" / f"{key}.json").write_text('{"format": 1, "kind": "run"', "utf-8")
    assert cache.get_run(key, "low") is None
    assert not (cache.root / "run" / f"{key}.json").exists()
    assert cache.hits == 0


@pytest.mark.parametrize("old_format", [2, 3])
def test_an_entry_of_a_previous_format_is_a_miss(tmp_path: Path, old_format: int) -> None:
    """Format 2 entries hold findings without their anchored ``code`` (dismissals and inline
    markers would miss on every hit); format 3 keys left settings out (``llm.extra_headers``,
    ``llm.api_version``), so such an entry may answer a differently shaped request."""
    cache = ResultCache(tmp_path / "c", max_bytes=1 << 20)
    key = "cd" * 32
    cache.put_grouping(key, [("g", ["a.py"])])
    path = cache.root / "grouping" / f"{key}.json"
    entry = json.loads(path.read_text("utf-8"))
    assert entry["format"] == 4
    path.write_text(json.dumps({**entry, "format": old_format}), "utf-8")
    assert cache.get_grouping(key) is None
    assert cache.hits == 0


def test_a_higher_effort_result_answers_the_hook_and_a_lower_one_does_not_answer_review(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`git ocr review --effort medium` before `git commit` must not pay twice; a hook
    result (low) must not answer a later `git ocr review --effort medium`; both default to
    low, so a hook result answers a plain `git ocr review`."""
    medium = ["review", "--format", "json", "--effort", "medium"]
    repo.commit({"README.md": "hi\n"}, "init")
    repo.stage({"calc.py": BUGGY})
    llm.tool_calls(("code_comment", div_comment("calc.py")), ("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    _, review, _ = run_json(medium, llm.env(), capsys, review_filter=False)
    assert len(main_requests(llm)) == 2  # round 2 finds nothing new
    _, hook, _ = run_json(["hook", "pre-commit", "--format", "json"], llm.env(), capsys,
                          review_filter=False)  # low
    assert len(llm.requests) == 2  # the hook made no request
    assert (hook["summary"]["cache_hits"], hook["summary"]["llm_calls"]) == (1, 0)
    assert hook["comments"] == review["comments"] and hook["verdict"] == "findings"
    # the other way round: a low-effort result does not answer a medium-effort review
    repo.stage({"calc.py": BUGGY + "\n\ndef mul(a, b):\n    return a * b\n"})
    run_json(["hook", "pre-commit", "--format", "json"], llm.env(), capsys, review_filter=False)
    assert len(llm.requests) == 3
    _, plain, _ = run_json(["review", "--format", "json"], llm.env(), capsys, review_filter=False)
    assert (len(llm.requests), plain["summary"]["cache_hits"]) == (3, 1)  # low answers low
    _, again, _ = run_json(medium, llm.env(), capsys, review_filter=False)
    assert len(llm.requests) == 4  # round 1 finds nothing: no round 2
    assert (again["summary"]["cache_hits"], again["summary"]["llm_calls"]) == (0, 1)
    # ... and now the medium result answers both
    run_json(medium, llm.env(), capsys, review_filter=False)
    run_json(["hook", "pre-commit", "--format", "json"], llm.env(), capsys, review_filter=False)
    assert len(llm.requests) == 4
