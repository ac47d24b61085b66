"""A review's output does not depend on thread timing: groups are merged in group
order, comments and their warnings in (group, submission) order, whatever order the group and
anchoring threads finish in.

Real: git repository, HTTP to the loopback model server, the group, comment and compression
pools at concurrency 8, JSON output and session logs. Fake: the model's replies, routed to each
group by a substring of its diff, with a per-request latency that reverses between the runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ocr_hook.comments.pool import Collector
from ocr_hook.findings import Finding, RunWarning, finding_id
from ocr_hook.vocabulary import Severity
from tests.support.cli import run_cli
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM, openai_text, openai_tool_calls

GROUPING = "sort the changed files"  # in the grouping system prompt
DONE = ("task_done", {"state": "DONE"})
N_FILES = 16
STEP_S = 0.02  # latency step between groups: 0 … 0.3 s


def name(i: int) -> str:
    return f"f{i:02d}.py"


def content(i: int) -> str:
    lines = 60 if i % 4 == 1 else 12  # a larger file among small ones
    return "".join(f"value_f{i:02d}_{n} = {n}\n" for n in range(lines))


def comment(path: str, quote: str, text: str) -> dict[str, Any]:
    return {"path": path, "content": text, "existing_code": quote, "severity": "medium",
            "category": "bug"}


def script(llm: ScriptedLLM, delay_of: dict[int, float]) -> None:
    """One run's replies. Group i (one file each) by i % 4: 0 the main request fails (HTTP
    400: subtask_error); 1 one comment on a 60-line file; 2 a comment whose
    quote is in the next file (comment_refiled) and one on its own line 3; 3 two comments on
    line 3 with the same severity (a tie the output order must still break the same way)."""
    names = [name(i) for i in range(N_FILES)]
    llm.reply(openai_text(json.dumps([{"label": n, "files": [n]} for n in names])),
              match=GROUPING)
    for i in range(N_FILES):
        tag, delay = f"value_f{i:02d}_", delay_of[i]
        own = f"value_f{i:02d}_3 = 3"
        if i % 4 == 0:
            llm.reply({"error": {"message": f"bad request {i}"}}, status=400, delay_s=delay,
                      match=tag)
            continue
        if i % 4 == 1:
            calls = [comment(name(i), own, f"Constant {i} is unused.")]
        elif i % 4 == 2:
            nxt = f"value_f{i + 1:02d}_5 = 5"
            calls = [comment(name(i), nxt, f"Refiled claim from group {i}."),
                     comment(name(i), own, f"Constant {i} shadows a builtin.")]
        else:
            calls = [comment(name(i), own, f"Zeta claim {i} about overflow."),
                     comment(name(i), own, f"Alpha claim {i} about rounding.")]
        llm.reply(openai_tool_calls(("code_comment", {"comments": calls}), DONE),
                  delay_s=delay, match=tag)


def review(llm: ScriptedLLM, capsys: pytest.CaptureFixture[str]) -> str:
    rc, out, _ = run_cli(["review", "--format", "json", "--no-cache", "--no-filter", "--effort",
                          "low", "--concurrency", "8"], llm.env(), capsys)
    assert rc == 0  # medium findings pass the default gate; failed groups: on_error = allow
    return out


def main_replies_in_completion_order(session_file: Path) -> list[str]:
    rows = [json.loads(line) for line in session_file.read_text().splitlines()]
    return [r["group"] for r in rows
            if r["type"] == "llm_response" and r.get("task") == "main"]


def test_concurrent_groups_give_byte_identical_output_whatever_finishes_first(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({name(i): content(i) for i in range(N_FILES)})
    monkeypatch.chdir(repo.path)
    outputs: list[dict[str, Any]] = []
    orders: list[list[str]] = []
    sessions = repo.path / ".git" / "ocr-hook" / "sessions"
    for delay_of in ({i: STEP_S * i for i in range(N_FILES)},
                     {i: STEP_S * (N_FILES - 1 - i) for i in range(N_FILES)}):
        script(llm, delay_of)
        data = json.loads(review(llm, capsys))
        orders.append(main_replies_in_completion_order(sessions / f"{data['session_id']}.jsonl"))
        outputs.append(data)
    assert orders[0] != orders[1]  # the groups really finished in different orders
    for data in outputs:
        data["summary"].pop("elapsed_ms")
        data.pop("session_id")
    first, second = (json.dumps(d, indent=2, ensure_ascii=False) for d in outputs)
    assert first == second
    data = outputs[0]
    assert [g["label"] for g in data["groups"]] == [name(i) for i in range(N_FILES)]
    # warnings: each group's own (subtask_error) in group order, then the comments'
    assert [(w["type"], w["file"]) for w in data["warnings"]] == [
        *[("subtask_error", name(i)) for i in range(N_FILES) if i % 4 == 0],
        *[("comment_refiled", name(i)) for i in range(N_FILES) if i % 4 == 2],
    ]
    assert [(c["path"], c["start_line"], c["content"]) for c in data["comments"]] == sorted(
        [(name(i), 4, f"Constant {i} is unused.") for i in range(N_FILES) if i % 4 == 1]
        + [(name(i + 1), 6, f"Refiled claim from group {i}.") for i in range(N_FILES)
           if i % 4 == 2]
        + [(name(i), 4, f"Constant {i} shadows a builtin.") for i in range(N_FILES)
           if i % 4 == 2]
        + [(name(i), 4, text) for i in range(N_FILES) if i % 4 == 3
           for text in (f"Zeta claim {i} about overflow.", f"Alpha claim {i} about rounding.")],
        key=lambda c: (c[0], c[1]))
    assert [f["reviewed"] for f in data["files"]] == [i % 4 != 0 for i in range(N_FILES)]


def test_collector_returns_entries_by_order_key_and_equal_keys_in_arrival_order() -> None:
    c = Collector()
    late, early, tie_a, tie_b = (found(p, n) for p, n in
                                 (("z.py", 1), ("a.py", 9), ("m.py", 2), ("m.py", 1)))
    c.add(late, (3, 0))
    c.add(tie_a, (1, 4))
    c.add(early, (0, 7))
    c.add(tie_b, (1, 4))
    c.warn(RunWarning("comment_refiled", "z.py", "second"), (2, 0, 0))
    c.warn(RunWarning("comment_refiled", "a.py", "first"), (0, 1, 0))
    assert c.snapshot() == [early, tie_a, tie_b, late]
    assert c.for_path("m.py") == [tie_a, tie_b]
    assert [w.message for w in c.warnings] == ["first", "second"]
    assert c.remove([tie_a.id]) == [tie_a] and c.snapshot() == [early, tie_b, late]


def found(path: str, n: int) -> Finding:
    return Finding(finding_id(path, "new", f"x{n}", "c"), path, "new", n, n, Severity.LOW,
                   "bug", "c", f"x{n}", "", "hunk_new")
