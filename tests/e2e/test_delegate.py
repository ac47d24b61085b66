"""Delegation (README "Delegation (no API key)", ``pipeline.delegated``): ``git ocr delegate``
prints the review task of the staged snapshot (or ``--commit``/``--from --to``), ``git ocr tool``
reads that snapshot with the confined tools, ``git ocr delegate submit FILE`` anchors, gates and
stores the findings, and the pre-commit hook without an endpoint answers from the stored result.

Real: ``git ocr`` processes, git repositories in temporary folders, the session and cache files
they write. Nothing is faked; an LLM endpoint (the scripted loopback model) is configured
only to show that with one the model reviews and the delegated result is not used.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from ocr_hook import util
from tests.support.cli import GIT_OCR
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

OLD = "def div(a, b):\n    return a / b\n"
NEW = ("def div(a, b):\n    if b == 0:\n        return None\n    return a // b\n\n\n"
       "def avg(xs):\n    return sum(xs) / len(xs)\n")
DEFECT = {"path": "calc.py", "existing_code": "    return sum(xs) / len(xs)",
          "content": "ZeroDivisionError when xs is empty; return 0.0 or raise ValueError first",
          "severity": "high", "category": "bug"}
ENDPOINT_VARS = ("OCR_LLM_URL", "OCR_LLM_MODEL", "OCR_LLM_TOKEN", "OPENAI_API_KEY",
                 "ANTHROPIC_API_KEY")


def ocr(repo: GitRepo, *args: str, stdin: str | None = None,
        **extra: str) -> subprocess.CompletedProcess[str]:
    """A real ``git ocr ARGS`` process in ``repo``, with no LLM endpoint in its environment
    (unless ``extra`` gives one)."""
    env = {**{k: v for k, v in repo.env.items() if k not in ENDPOINT_VARS},
           "OCR_HOOK_REVIEW_FILTER": "false", **extra}
    return subprocess.run([str(GIT_OCR), *args], cwd=repo.path, env=env, capture_output=True,
                          text=True, timeout=120, input=stdin)


def staged_change(repo: GitRepo) -> None:
    """calc.py committed as OLD, NEW staged, and a work-tree edit that is not staged."""
    repo.commit({"calc.py": OLD}, "init")
    repo.stage({"calc.py": NEW})
    repo.write({"calc.py": NEW + "WORK_TREE_ONLY = 1\n"})


def submit(repo: GitRepo, findings: Any, *flags: str) -> tuple[int, dict[str, Any], str]:
    path = repo.path.parent / "findings.json"
    path.write_text(json.dumps(findings), encoding="utf-8")
    p = ocr(repo, "delegate", "submit", str(path), "--format", "json", *flags)
    return p.returncode, json.loads(p.stdout), p.stderr


def test_task_holds_the_numbered_diff_tools_scale_and_findings_format(repo: GitRepo) -> None:
    staged_change(repo)
    p = ocr(repo, "delegate")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    # the numbered diff, exactly as the main prompt shows it (agent.group_fields)
    assert ('<review_files>\n<file path="calc.py" lines="8">\n@@ -1,2 +1,8 @@\n'
            "1  def div(a, b):\n  -    return a / b\n2 +    if b == 0:\n3 +        return None\n"
            "4 +    return a // b\n5 +\n6 +\n7 +def avg(xs):\n8 +    return sum(xs) / len(xs)\n"
            "</file>\n</review_files>\n") in out
    assert "WORK_TREE_ONLY" not in out  # the staged snapshot, not the work tree
    assert "## Group 1 of 1: calc.py" in out
    assert "<review_checklist>\n# Review checklist: Python\n" in out  # the Python rules
    assert util.render_template("severity", {}) in out  # the one severity scale
    for line in ("  git ocr tool file_read PATH [START END]",
                 "  git ocr tool code_search TEXT [PATHSPEC ...]",
                 "  git ocr tool file_find NAME"):
        assert line + "\n" in out
    for field in ('"path"', '"existing_code"', '"content"', '"severity"', '"category"',
                  '"suggestion_code" (optional)'):
        assert field in out
    assert "git ocr delegate submit FILE (FILE - reads stdin)." in out


def test_submit_anchors_blocks_and_the_hook_answers_from_it_with_no_endpoint(
    repo: GitRepo,
) -> None:
    staged_change(repo)
    before = repo.state()
    rc, data, err = submit(repo, [DEFECT])
    assert rc == 1, err  # blocking mode, a high finding
    assert (data["status"], data["verdict"], data["gate"]["blocking"]) == (
        "complete", "findings", True)
    [c] = data["comments"]
    assert {k: c[k] for k in ("path", "side", "start_line", "end_line", "severity", "category",
                              "anchor", "existing_code")} == {
        "path": "calc.py", "side": "new", "start_line": 8, "end_line": 8, "severity": "high",
        "category": "bug", "anchor": "hunk_new", "existing_code": "    return sum(xs) / len(xs)"}
    assert data["summary"]["llm_calls"] == 0
    assert "ocr-hook: Filed: calc.py:8 (new side)" in err.splitlines()
    session = repo.path / ".git" / "ocr-hook" / "sessions" / f"{data['session_id']}.jsonl"
    records = [json.loads(ln) for ln in session.read_text().splitlines()]
    assert [r["start_line"] for r in records if r["type"] == "comment"] == [8]
    assert [r["type"] for r in records][0] == "start"
    entries = list((repo.path / ".git" / "ocr-hook" / "cache" / "delegated").glob("*.json"))
    assert len(entries) == 1

    p = ocr(repo, "hook", "pre-commit", "--format", "json")
    assert p.returncode == 1, p.stderr  # blocked from the stored result
    hook = json.loads(p.stdout)
    assert (hook["status"], hook["verdict"]) == ("complete", "findings")
    assert (hook["summary"]["llm_calls"], hook["summary"]["llm_attempts"],
            hook["summary"]["cache_hits"]) == (0, 0, 1)
    assert [(x["id"], x["start_line"], x["anchor"]) for x in hook["comments"]] == [
        (c["id"], 8, "hunk_new")]
    assert "NOT REVIEWED" not in p.stderr
    assert repo.state() == before  # index, work tree and refs untouched


def test_hook_without_endpoint_or_stored_result_points_to_delegate(repo: GitRepo) -> None:
    staged_change(repo)
    rc, _data, _err = submit(repo, [DEFECT])
    assert rc == 1
    repo.stage({"calc.py": NEW + "\n\ndef one():\n    return 1\n"})  # another snapshot
    p = ocr(repo, "hook", "pre-commit", "--format", "json")
    assert p.returncode == 0, p.stderr  # gate.on_error = allow (the default)
    data = json.loads(p.stdout)
    assert (data["status"], data["comments"]) == ("failed", [])
    [reason] = data["incomplete_reasons"]
    assert reason.startswith("NOT REVIEWED: no LLM endpoint configured (missing url, model)")
    assert reason.endswith("; or let your own coding agent review without an API key: `git ocr"
                           " delegate` prints the task, `git ocr delegate submit FILE` records"
                           " its findings")


def test_tool_file_read_reads_the_staged_snapshot_not_the_work_tree(repo: GitRepo) -> None:
    staged_change(repo)
    p = ocr(repo, "tool", "file_read", "calc.py", "7", "8")
    assert (p.returncode, p.stderr) == (0, "")
    assert p.stdout == ("File: calc.py (Total lines: 8)\nIS_TRUNCATED: false\nLINE_RANGE: 7-8\n"
                        "7|def avg(xs):\n8|    return sum(xs) / len(xs)\n")
    whole = ocr(repo, "tool", "file_read", "calc.py")
    assert whole.returncode == 0 and "WORK_TREE_ONLY" not in whole.stdout
    assert "8|    return sum(xs) / len(xs)" in whole.stdout
    search = ocr(repo, "tool", "code_search", "WORK_TREE_ONLY")
    assert (search.returncode, search.stdout) == (0, "No matches found\n")
    found = ocr(repo, "tool", "code_search", "len(xs)")
    assert found.returncode == 0 and "calc.py" in found.stdout and "8" in found.stdout
    outside = ocr(repo, "tool", "file_read", "../etc/passwd")
    assert outside.returncode == 1 and outside.stdout.startswith("Error")
    usage = ocr(repo, "tool", "file_read", "calc.py", "7")
    assert usage.returncode == 2
    assert usage.stderr == "ocr-hook: usage: git ocr tool file_read PATH [START END]\n"


def test_commit_mode_task_and_tools_name_the_commit(repo: GitRepo) -> None:
    repo.commit({"calc.py": OLD}, "init")
    repo.commit({"calc.py": NEW}, "add avg")
    repo.write({"calc.py": "gone\n"})  # the work tree differs; the commit is reviewed
    p = ocr(repo, "delegate", "--commit", "HEAD")
    assert p.returncode == 0, p.stderr
    assert "  git ocr tool file_read PATH [START END] --commit HEAD\n" in p.stdout
    assert "git ocr delegate submit FILE --commit HEAD" in p.stdout
    assert "8 +    return sum(xs) / len(xs)\n" in p.stdout
    t = ocr(repo, "tool", "file_read", "calc.py", "8", "8", "--commit", "HEAD")
    assert t.returncode == 0 and t.stdout.endswith("8|    return sum(xs) / len(xs)\n")
    rc, data, err = submit(repo, [DEFECT], "--commit", "HEAD")
    assert rc == 1, err
    assert [(c["start_line"], c["anchor"]) for c in data["comments"]] == [(8, "hunk_new")]
    r = ocr(repo, "delegate", "--from", "HEAD~1", "--to", "HEAD")
    assert r.returncode == 0, r.stderr
    assert "  git ocr tool file_find NAME --from 'HEAD~1' --to HEAD\n" in r.stdout  # shell-quoted
    assert "8 +    return sum(xs) / len(xs)\n" in r.stdout
    rc, data, err = submit(repo, [DEFECT], "--from", "HEAD~1", "--to", "HEAD")
    assert (rc, data["input"]["mode"]) == (1, "range"), err
    assert [c["start_line"] for c in data["comments"]] == [8]


def test_a_quote_not_in_the_diff_is_reported_unanchored_and_other_files_dropped(
    repo: GitRepo,
) -> None:
    staged_change(repo)
    ghost = {**DEFECT, "existing_code": "    return mean(values)", "severity": "low",
             "content": "this code is not in the change"}
    outside = {**DEFECT, "path": "other.py", "existing_code": "import os"}
    rc, data, err = submit(repo, [ghost, outside])
    assert rc == 0, err  # a low finding does not block; the one on other.py is dropped
    [c] = data["comments"]
    assert (c["path"], c["start_line"], c["end_line"], c["anchor"], c["severity"]) == (
        "calc.py", 0, 0, "none", "low")
    assert [(w["type"], w["file"]) for w in data["warnings"]] == [
        ("comment_outside_change", "other.py")]
    lines = err.splitlines()
    assert "ocr-hook: Filed 2 comments:" in lines
    assert ("ocr-hook: 1. calc.py: not found in the diff; quote the exact lines from the diff"
            " (file it again)") in lines


def test_bad_findings_input_is_one_line_and_exit_2(repo: GitRepo, tmp_path: Path) -> None:
    staged_change(repo)
    bad = tmp_path / "bad.json"
    bad.write_text("[{", encoding="utf-8")
    p = ocr(repo, "delegate", "submit", str(bad))
    assert (p.returncode, p.stdout) == (2, "")
    assert len(p.stderr.splitlines()) == 1
    assert p.stderr.startswith(f"ocr-hook: {bad}: not valid JSON (")
    assert p.stderr.endswith("); expected a JSON list of findings (`git ocr delegate` shows"
                             " the format)\n")
    p = ocr(repo, "delegate", "submit", "-", stdin='{"path": "calc.py"}')
    assert (p.returncode, p.stderr) == (
        2, "ocr-hook: stdin: expected a JSON list of findings, got dict\n")
    p = ocr(repo, "delegate", "submit", str(tmp_path / "missing.json"))
    assert p.returncode == 2
    assert p.stderr == (f"ocr-hook: cannot read findings file {tmp_path / 'missing.json'}:"
                        " No such file or directory\n")
    # a severity that is not on the scale would have filed a high finding as low: refused
    for severity, shown in (("urgent", '"urgent"'), (None, "null")):
        item = {**DEFECT, "severity": severity}
        p = ocr(repo, "delegate", "submit", "-", stdin=json.dumps([DEFECT, item]))
        assert (p.returncode, p.stderr) == (
            2, "ocr-hook: stdin: finding 2: severity must be critical, high, medium or low,"
               f" got {shown}\n")
    assert not (repo.path / ".git" / "ocr-hook" / "cache" / "delegated").exists()


def test_the_task_carries_the_agent_guidance_and_its_key_follows_it(repo: GitRepo) -> None:
    repo.commit({"AGENTS.md": "Division helpers raise ValueError on an empty list.\n"}, "docs")
    staged_change(repo)
    task = ocr(repo, "delegate")
    assert task.returncode == 0, task.stderr
    head = task.stdout.split("## Group 1 of 1")[1].split("<review_files>")[0]
    assert "<project_guidance>" in head
    assert "Division helpers raise ValueError on an empty list." in head
    rc, _, err = submit(repo, [DEFECT])
    assert rc == 1, err
    assert ocr(repo, "hook", "pre-commit").returncode == 1  # answered from the stored result
    # a new HEAD with the same guidance still answers; other guidance at HEAD does not
    (repo.path / "README.md").write_text("readme\n", encoding="utf-8")
    repo.git("add", "README.md")
    repo.git("commit", "-q", "-m", "readme", "--only", "README.md")
    hit = ocr(repo, "hook", "pre-commit", "--format", "json")
    assert (hit.returncode, json.loads(hit.stdout)["summary"]["cache_hits"]) == (1, 1)
    (repo.path / "AGENTS.md").write_text("Prefer returning 0.0.\n", encoding="utf-8")
    repo.git("commit", "-q", "-m", "docs 2", "--only", "AGENTS.md")
    miss = ocr(repo, "hook", "pre-commit", "--format", "json")
    data = json.loads(miss.stdout)
    assert (miss.returncode, data["summary"]["cache_hits"], data["verdict"]) == (
        0, 0, "incomplete")


def test_submit_from_stdin_with_no_finding_passes_the_hook(repo: GitRepo) -> None:
    staged_change(repo)
    p = ocr(repo, "delegate", "submit", "-", "--format", "json", stdin="[]")
    assert p.returncode == 0, p.stderr
    assert (json.loads(p.stdout)["verdict"], json.loads(p.stdout)["comments"]) == ("pass", [])
    hook = ocr(repo, "hook", "pre-commit", "--format", "json")
    assert hook.returncode == 0, hook.stderr
    data = json.loads(hook.stdout)
    assert (data["status"], data["verdict"], data["summary"]["cache_hits"]) == (
        "complete", "pass", 1)


def test_with_an_endpoint_the_model_reviews_and_the_delegated_result_is_not_used(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    staged_change(repo)
    rc, _data, _err = submit(repo, [DEFECT])
    assert rc == 1
    llm.tool_calls(("task_done", {"state": "DONE"}))
    p = ocr(repo, "hook", "pre-commit", "--format", "json", **llm.env())
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert (data["status"], data["verdict"], data["comments"]) == ("complete", "pass", [])
    assert (len(llm.requests), data["summary"]["llm_calls"], data["summary"]["cache_hits"]) == (
        1, 1, 0)


def test_task_and_tools_redact_a_staged_secret_as_requests_do(repo: GitRepo) -> None:
    key = "AKIA" + "IOSFODNN7LATEKEY"  # fake; assembled so scanners skip this file
    repo.commit({"calc.py": OLD}, "init")
    repo.stage({"calc.py": OLD + f'KEY = "{key}"\n'})
    task = ocr(repo, "delegate")
    assert task.returncode == 0, task.stderr
    assert key not in task.stdout and '3 +KEY = "' in task.stdout
    read = ocr(repo, "tool", "file_read", "calc.py")
    assert read.returncode == 0, read.stderr
    assert key not in read.stdout and '3|KEY = "' in read.stdout
    found = ocr(repo, "tool", "code_search", "KEY")
    assert found.returncode == 0 and key not in found.stdout
