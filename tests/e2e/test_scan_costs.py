"""``git ocr scan`` with money caps and deterministic findings (spec §3.9, §13.7): the start
check prices one request, not the whole scan; the cap's source is named; secret findings speak
of the scanned file.

Real: ``git ocr`` processes, git repositories, the usage ledger, HTTP to the scripted loopback
model (which reports the token counts); fake: the model's replies."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.e2e.test_budget import done_reply, ledger, ocr, user_file
from tests.e2e.test_budget_ceiling import priced
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM, openai_text

GROUPING = "sort the changed files"  # in the grouping system prompt
NAMES = [f"m{i}.py" for i in range(1, 6)]


def _module(i: int) -> str:
    """About 40 KB of Python: about 13,000 tokens at the estimate's UTF-8 bytes / 3."""
    return "".join(f"VALUE_{i}_{n:04d} = compute({n}, scale=SCALE_{i})  # row {n}\n"
                   for n in range(800))


def test_a_cap_with_room_for_two_requests_reviews_two_files_of_a_five_file_scan(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    repo.commit({n: _module(i) for i, n in enumerate(NAMES, 1)}, "init")
    user_file(repo, "[budget]\ndaily_usd = 0.20\n")
    grouping = openai_text(json.dumps([{"label": n, "files": [n]} for n in NAMES]))
    grouping["usage"] = done_reply()["usage"]  # $0.0012
    llm.reply(grouping, match=GROUPING)
    for _ in NAMES:  # each review answers at once: $0.0606 (4,000 output tokens)
        llm.reply(priced(("task_done", {"state": "DONE"}), output=4000))
    p = ocr(repo, llm, "scan", *NAMES, "--format", "json", OCR_HOOK_REVIEW_CONCURRENCY="1")
    data = json.loads(p.stdout)
    # the whole scan priced as one request would be about $0.29 (> $0.20): refused before; one
    # request with one file is about $0.12, so the run starts and the ceiling stops the third
    # group (spent $0.1224 + about $0.12 > $0.20)
    assert len(llm.requests) == 3, p.stderr  # the grouping call and two reviews
    files = {f["path"]: (f["reviewed"], f["reason"]) for f in data["files"]}
    assert sorted(files.values()) == [(False, "spend_cap")] * 3 + [(True, "")] * 2
    assert [files[n] for n in NAMES[:2]] == [(True, "")] * 2
    [line] = [json.loads(x) for x in ledger(repo).read_text().splitlines()]
    assert (line["requests"], line["cost_usd"]) == (3, 0.1224)
    assert line["cost_usd"] <= 0.20
    [why] = data["incomplete_reasons"]
    user = Path(repo.env["XDG_CONFIG_HOME"]) / "ocr-hook" / "config.toml"
    # the scan names the cap's source, as `git ocr review` does
    assert re.fullmatch(
        r"NOT REVIEWED: 3 of 5 files: daily budget \$0\.2000 would be passed: \$0\.0000 spent today \(UTC\),"
        r" this review spent \$0\.1224 and its next request needs about \$0\.1\d{3}"
        r" \(budget\.daily_usd from " + re.escape(str(user)) + r"; resets at 00:00 UTC; see"
        r" `git ocr llm usage`\)", why), why
    assert p.returncode == 0, p.stderr  # gate.on_error = allow


def test_a_scan_over_the_cap_names_the_environment_variable(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    repo.commit({"m1.py": _module(1)}, "init")
    p = ocr(repo, llm, "scan", "m1.py", OCR_HOOK_BUDGET_DAILY_USD="0.01")
    assert llm.requests == []
    assert ("(budget.daily_usd from environment variable OCR_HOOK_BUDGET_DAILY_USD; resets at"
            " 00:00 UTC; see `git ocr llm usage`)") in p.stdout, p.stdout


KEY = "AKIA" + "Z3MSJV4WZXXT5Q2N"  # an AWS access key id shape (not a real key)


def test_a_secret_in_a_scanned_file_is_worded_for_a_scan(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    repo.commit({"conf.py": f'AWS_KEY = "{KEY}"\n', "README.md": "hi\n"}, "init")
    p = ocr(repo, llm, "scan", "conf.py", "--format", "json", OCR_LLM_URL="")
    data = json.loads(p.stdout)
    [c] = [c for c in data["comments"] if c["category"] == "security"]
    assert (c["path"], c["start_line"], c["severity"]) == ("conf.py", 1, "critical")
    assert c["content"].startswith(
        "Hard-coded secret (aws-access-key) in the scanned file: it is readable by everyone"
        " with the repository and stays in its history. Remove it, rotate it,"), c["content"]
    assert "in the change" not in c["content"] and "once committed" not in c["content"]


def _lines(tag: str, n: int) -> str:
    return "".join(f"{tag}_{k:03d} = {k} * 2 + 1  # a line of forty bytes\n"[:39] + "\n"
                   for k in range(n))


def test_a_bounded_scan_fills_the_byte_budget_with_small_source_files_first(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    # git's path order would take a.json first: it alone passes the budget
    data = "[" + ",".join(f'{{"id": {k}, "name": "row {k:05d}"}}' for k in range(700)) + "]\n"
    repo.commit({"a.json": data, "b.py": _lines("b", 75), "c.py": _lines("c", 25),
                 "d.py": _lines("d", 150), "README.md": "hi\n"}, "init")
    llm.tool_calls(("task_done", {"state": "DONE"}))
    p = ocr(repo, llm, "scan", "--all", "--format", "json",
            OCR_HOOK_SELECT_MAX_TOTAL_BYTES="8000")
    out = json.loads(p.stdout)
    files = {f["path"]: (f["reviewed"], f["reason"]) for f in out["files"]}
    # c.py (about 1.5 KB with headers) and b.py (about 3.5 KB) fit in 8,000 bytes; d.py (about
    # 6.5 KB) and the data file do not
    assert {k: v for k, v in files.items() if k != "README.md"} == {
        "a.json": (False, "over_max_total_bytes"), "b.py": (True, ""), "c.py": (True, ""),
        "d.py": (False, "over_max_total_bytes")}
    [request] = llm.requests
    user = request["messages"][1]["content"]
    assert '<file path="b.py"' in user and '<file path="c.py"' in user
    assert '<file path="d.py"' not in user and '<file path="a.json"' not in user
    assert out["incomplete_reasons"] == [
        "NOT REVIEWED: 2 of 4 files: the files to review are larger than"
        " select.max_total_bytes (7.8 KiB); raise select.max_total_bytes to review them,"
        " `git ocr scan \u2026 --preview` lists them"]
    assert "reviewing 2 files in 1 group with" in p.stderr, p.stderr


def test_a_blocked_scan_names_the_scan_for_every_id_and_html_says_scan_of(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    body = "".join(f"value_{k} = eval(input())\n" for k in range(12))
    repo.commit({"app.py": body}, "init")
    head = repo.git("rev-parse", "HEAD").strip()
    comments = [{"path": "app.py", "existing_code": f"value_{k} = eval(input())",
                 "content": f"eval of user input {k} runs arbitrary code",
                 "severity": "critical", "category": "security"} for k in range(12)]
    llm.tool_calls(("code_comment", {"comments": comments}), ("task_done", {"state": "DONE"}))
    p = ocr(repo, llm, "scan", "app.py", "--format", "html")
    assert p.returncode == 1, p.stderr
    assert f"input: scan of {head}" in p.stdout and "(whole files).." not in p.stdout
    assert ("ocr-hook:   … and 2 more (`git ocr scan \u2026 --format json` lists every id)"
            in p.stderr.splitlines()), p.stderr
    assert "git ocr review` lists every id" not in p.stderr


def test_llm_help_names_usage(repo: GitRepo, llm: ScriptedLLM) -> None:
    p = ocr(repo, llm, "-h")
    text = " ".join(p.stdout.split())
    assert ("llm check the LLM endpoint, list provider presets or show the recorded spend"
            " (usage)") in text, p.stdout


def test_a_scan_preview_says_scanned_and_counts_files(repo: GitRepo, llm: ScriptedLLM) -> None:
    repo.commit({"app.py": "x = 1\ny = 2\n", "README.md": "hi\n"}, "init")
    p = ocr(repo, llm, "scan", "--all", "--preview")
    assert p.returncode == 0, p.stderr
    rows = [line.split() for line in p.stdout.splitlines()]
    assert ["app.py", "scanned", "+2/-0", "yes"] in rows, p.stdout
    assert "2 file(s), 1 to review" in p.stdout.splitlines(), p.stdout
    assert "changed file(s)" not in p.stdout and " added " not in p.stdout
    p = ocr(repo, llm, "scan", "--all", "--preview", "--format", "json")
    # JSON keeps its documented status values: a scanned file is all added lines
    assert {f["path"]: f["status"] for f in json.loads(p.stdout)["files"]} == {
        "app.py": "added", "README.md": "added"}
    assert llm.requests == []
