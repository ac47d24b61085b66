"""No PASS for what was not reviewed (README "Gate and exit codes", spec §4, §9, §14.1): a text
source file that could not be fitted (too large for the model's context, too large to load) is
not reviewed and makes the review incomplete; the secret scan reads every staged text file to
its end, or the review is incomplete and names what was not scanned; a text file with a stray
NUL byte is secret-scanned. Deliberate exclusions (binary content, generated files, the user's
own ``select.exclude``, a rename without edits) stay fine.

Real: ``git ocr`` processes (``review``, ``hook pre-commit``, a native hook run by ``git
commit``), git repositories, HTTP to the scripted loopback model; fake: the model's replies.
Every run leaves the index, work tree and refs byte-identical."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.cli import GIT_OCR
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

AWS_KEY = "AKIA" + "IOSFODNN7LATEKEY"  # fake; assembled so scanners skip this file
SECRET = "Hard-coded secret (aws-access-key)"
PASS_NO_FINDING = "PASS: no finding"
LET_THROUGH = "PASS: review incomplete, let through by gate.on_error = allow (blocking mode)"
BLOCKED = "BLOCKED: review incomplete and gate.on_error = block (blocking mode)"


def ocr(repo: GitRepo, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """A real ``git ocr ARGS`` process in ``repo`` with ``env`` on top of the repository's."""
    full = {**repo.env, "OCR_HOOK_REVIEW_FILTER": "false", **env}
    return subprocess.run([str(GIT_OCR), *args], cwd=repo.path, env=full, capture_output=True,
                          text=True, timeout=120)


def review_json(repo: GitRepo, **env: str) -> tuple[int, dict[str, Any], str]:
    p = ocr(repo, "review", "--format", "json", **env)
    return p.returncode, json.loads(p.stdout), p.stderr


def files(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["path"]: f for f in data["files"]}


def many_hunks(n: int) -> tuple[str, str]:
    """(old, new) text of a Python module of 8·n four-byte lines where every 8th line changes:
    changes 7 lines apart, more than twice git's 3 context lines, so n hunks."""
    old = "a=0\n" * (8 * n)
    new = "".join("a=1\n" if i % 8 == 4 else "a=0\n" for i in range(8 * n))
    return old, new


# -- a file too large for the model's context ---------------------------------------------------


def test_file_with_10000_hunks_too_large_for_the_context_is_not_reviewed_and_gated_on_error(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    old, new = many_hunks(10_000)
    assert len(new) == 320_000
    repo.commit({"big.py": old, "README.md": "x\n"}, "init")
    repo.stage({"big.py": new})
    before = repo.state()

    rc, data, err = review_json(repo, **llm.env())
    assert rc == 0, err  # gate.on_error = allow (the default)
    assert (data["verdict"], data["status"], data["gate"]["blocking"]) == (
        "incomplete", "failed", False)
    big = files(data)["big.py"]
    assert {k: big[k] for k in ("reviewed", "reason", "not_reviewed")} == {
        "reviewed": False, "reason": "too_large", "not_reviewed": True}
    m = re.fullmatch(r"its diff \(10,000 hunks\) is ([\d,]+) tokens, more than 160,000 "
                     r"\(80% of llm\.context_tokens = 200,000\)", big["detail"])
    assert m and int(m.group(1).replace(",", "")) > 160_000, big["detail"]
    reason = ("NOT REVIEWED: 1 of 1 files: big.py too large for the model's context (80% of "
              "llm.context_tokens = 200,000 tokens); `git ocr review --preview` lists them")
    assert data["incomplete_reasons"] == [reason]
    assert reason in err  # JSON on stdout: the NOT REVIEWED line also goes to stderr
    assert llm.requests == []  # nothing the model could be sent
    assert repo.state() == before

    p = ocr(repo, "hook", "pre-commit", **llm.env())  # what a commit prints
    lines = p.stdout.splitlines()
    assert p.returncode == 0, p.stderr
    assert f"not reviewed: big.py (too large for the model's context: {big['detail']})" in lines
    assert reason in lines
    assert "ocr-hook: 0 reviewed, 0 excluded, 1 incomplete;" in p.stdout
    assert lines[-1] == LET_THROUGH
    assert "Nothing to review." not in p.stdout and PASS_NO_FINDING not in p.stdout
    assert repo.state() == before

    p = ocr(repo, "hook", "pre-commit", OCR_HOOK_GATE_ON_ERROR="block", **llm.env())
    assert p.returncode == 3, p.stderr
    assert p.stdout.splitlines()[-1] == BLOCKED
    assert repo.state() == before


def test_a_too_large_file_beside_a_reviewed_one_still_makes_the_review_incomplete(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    old, new = many_hunks(10_000)
    repo.commit({"big.py": old, "small.py": "x = 1\n"}, "init")
    repo.stage({"big.py": new, "small.py": "x = 2\n"})
    before = repo.state()
    rc, data, err = review_json(repo, **llm.env(), OCR_HOOK_GATE_ON_ERROR="block")
    assert rc == 3, err
    assert len(llm.requests) == 1  # small.py: reviewed, task_done in the first reply
    assert {p: (f["reviewed"], f["reason"], f.get("not_reviewed")) for p, f in
            files(data).items()} == {"big.py": (False, "too_large", True),
                                     "small.py": (True, "", None)}
    assert (data["verdict"], data["status"]) == ("incomplete", "partial")
    assert data["incomplete_reasons"][0].startswith(
        "NOT REVIEWED: 1 of 2 files: big.py too large for the model's context")
    assert repo.state() == before


def test_native_hook_with_on_error_block_refuses_the_commit_of_a_file_it_could_not_review(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    old, new = many_hunks(10_000)
    head = repo.commit({"big.py": old}, "init")
    p = ocr(repo, "install")
    assert p.returncode == 0, p.stderr
    repo.stage({"big.py": new})
    env = {**repo.env, **llm.env(), "OCR_HOOK_GATE_ON_ERROR": "block"}
    p = subprocess.run(["git", "commit", "-q", "-m", "big"], cwd=repo.path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode != 0
    out = p.stdout + p.stderr
    assert "not reviewed: big.py (too large for the model's context" in out
    assert BLOCKED in out
    assert repo.git("rev-parse", "HEAD").strip() == head  # no commit was made


def test_pre_push_hook_reports_the_file_as_not_reviewed_and_gates_on_error(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    old, new = many_hunks(10_000)
    c1 = repo.commit({"big.py": old}, "init")
    c2 = repo.commit({"big.py": new}, "many edits")
    before = repo.state()
    stdin = f"refs/heads/main {c2} refs/heads/main {c1}\n"
    for on_error, code, verdict in (("allow", 0, LET_THROUGH), ("block", 3, BLOCKED)):
        p = subprocess.run([str(GIT_OCR), "hook", "pre-push", "origin", "url"], cwd=repo.path,
                           input=stdin, capture_output=True, text=True, timeout=120,
                           env={**repo.env, **llm.env(), "OCR_HOOK_GATE_ON_ERROR": on_error})
        assert p.returncode == code, p.stderr
        lines = p.stdout.splitlines()
        assert f"not reviewed refs/heads/main: {c1[:12]}..{c2[:12]} (1 commit)" in lines
        assert any(ln.startswith("not reviewed: big.py (too large for the model's context: its"
                                 " diff (10,000 hunks) is ") for ln in lines), lines
        assert lines[-1] == verdict
    assert llm.requests == []
    assert repo.state() == before


def test_a_file_larger_than_max_file_bytes_is_not_reviewed(repo: GitRepo, llm: ScriptedLLM
                                                            ) -> None:
    repo.commit({"README.md": "x\n"}, "init")
    table = "".join(f"ROW_{i} = {i}\n" for i in range(100_000))
    repo.stage({"src/table.py": table})
    before = repo.state()
    rc, data, err = review_json(repo, **llm.env())
    assert rc == 0, err
    got = files(data)["src/table.py"]
    assert (got["reason"], got["not_reviewed"], got["size_bytes"]) == (
        "too_large", True, len(table))
    assert got["detail"] == ("1.7 MiB, larger than select.max_file_bytes (1.0 MiB): content not "
                             "read; secret scan: all 1.7 MiB scanned, no secret found")
    assert data["verdict"] == "incomplete"
    assert data["incomplete_reasons"] == [
        "NOT REVIEWED: 1 of 1 files: src/table.py larger than select.max_file_bytes (1.0 MiB);"
        " `git ocr review --preview` lists them"]
    assert repo.state() == before


def test_sarif_and_the_review_page_list_the_file_as_not_reviewed(repo: GitRepo, llm: ScriptedLLM
                                                                 ) -> None:
    old, new = many_hunks(10_000)
    repo.commit({"big.py": old}, "init")
    repo.stage({"big.py": new})
    p = ocr(repo, "review", "--format", "sarif", **llm.env())
    assert p.returncode == 0, p.stderr
    run = json.loads(p.stdout)["runs"][0]
    assert run["properties"]["verdict"] == "incomplete"
    [inv] = run["invocations"]
    assert inv["executionSuccessful"] is False
    assert [n["message"]["text"] for n in inv["toolExecutionNotifications"]
            if n["descriptor"]["id"] == "not_reviewed"] == ["not reviewed: big.py (too_large)"]
    p = ocr(repo, "review", "--format", "html", **llm.env())
    assert p.returncode == 0, p.stderr
    assert '<td class="miss">not reviewed: too large for the model&#x27;s context: its diff' \
        " (10,000 hunks)" in p.stdout


# -- deliberate exclusions stay fine --------------------------------------------------------------


def test_deliberate_exclusions_of_large_files_pass(repo: GitRepo, llm: ScriptedLLM) -> None:
    """A rename without edits, a generated file and binary content, each above
    select.max_file_bytes: excluded, scanned where they add text, and the run passes."""
    table = "".join(f"ROW_{i} = {i}\n" for i in range(80_000))
    repo.commit({"old_table.py": table, "README.md": "x\n"}, "init")
    repo.git("mv", "old_table.py", "table.py")
    repo.stage({"gen/api.ts": "// @generated by protoc\n" + "export const x = 1;\n" * 70_000,
                "src/blob.py": bytes(range(256)) * 5_000})
    before = repo.state()
    rc, data, err = review_json(repo, **llm.env(), OCR_HOOK_GATE_ON_ERROR="block")
    assert rc == 0, err
    got = {p: (f["reason"], f.get("detail", "")) for p, f in files(data).items()}
    assert got == {
        "gen/api.ts": ("default_path", "secret scan: all 1.3 MiB scanned, no secret found"),
        "src/blob.py": ("binary", ""),
        "table.py": ("rename_only", ""),
    }
    assert (data["verdict"], data["incomplete_reasons"]) == ("pass", [])
    assert repo.state() == before


# -- the secret scan reads every staged text file to its end -------------------------------------


def late_secret_module() -> tuple[str, int]:
    """A 1.5 MiB Python module with an AWS key on a line after its first 1.2 MiB: (text, the
    key's line)."""
    rows = [f"VALUE_{i:06d} = {i:08d}  # padding\n" for i in range(40_000)]
    line = len(rows) + 1
    rows.append(f'AWS_ACCESS_KEY_ID = "{AWS_KEY}"\n')
    rows += [f"OTHER_{i:06d} = {i:08d}\n" for i in range(8_000)]
    return "".join(rows), line


def test_secret_after_the_first_mib_of_a_staged_file_is_flagged(repo: GitRepo, llm: ScriptedLLM
                                                                ) -> None:
    text, line = late_secret_module()
    assert text.index(AWS_KEY) > 1_200_000 and len(text) > 1_500_000
    repo.commit({"README.md": "x\n"}, "init")
    repo.stage({"settings.py": text})
    before = repo.state()
    rc, data, err = review_json(repo, **llm.env())
    assert rc == 1, err  # blocked by the critical finding
    [c] = data["comments"]
    assert (c["path"], c["start_line"], c["end_line"], c["severity"], c["anchor"]) == (
        "settings.py", line, line, "critical", "file")
    assert c["content"].startswith(SECRET)
    assert c["existing_code"] == 'AWS_ACCESS_KEY_ID = "[REDACTED:aws-access-key]"'
    assert AWS_KEY not in p_text(data)
    assert data["verdict"] == "findings"
    assert files(data)["settings.py"]["detail"].endswith(
        "secret scan: all 1.5 MiB scanned, 1 secret(s) found (critical finding)")
    assert llm.requests == []
    assert repo.state() == before


def p_text(data: dict[str, Any]) -> str:
    return json.dumps(data)


def test_an_excluded_file_the_scan_could_not_finish_makes_the_review_incomplete(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    """A lock file (a deliberate exclusion from review) whose added text is more than the scan
    budget: named in the NOT REVIEWED line, gated by gate.on_error, never PASS."""
    lock = "".join(f'    "pkg-{i}": "1.0.{i}",\n' for i in range(20_000))  # 0.5 MiB
    repo.commit({"README.md": "x\n"}, "init")
    repo.stage({"package-lock.json": "{\n" + lock + "}\n"})
    before = repo.state()
    budget = {"OCR_HOOK_SECURITY_MAX_SCAN_BYTES": "262144"}
    for on_error, code, verdict in (("allow", 0, LET_THROUGH), ("block", 3, BLOCKED)):
        p = ocr(repo, "hook", "pre-commit", **budget, OCR_HOOK_GATE_ON_ERROR=on_error,
                **llm.env())
        assert p.returncode == code, p.stderr
        lines = p.stdout.splitlines()
        assert lines[-1] == verdict
        assert ("NOT REVIEWED: secret scan incomplete: the text added to 1 file "
                "(package-lock.json) was not all scanned within security.max_scan_bytes "
                "(256.0 KiB); raise it, or name the files in select.exclude") in lines
        assert any(ln.startswith("excluded: package-lock.json (lock file: secret scan: not "
                                 "scanned, its ") for ln in lines), lines
    rc, data, err = review_json(repo, **budget, **llm.env())
    assert (rc, data["verdict"], data["status"]) == (0, "incomplete", "failed"), err
    assert files(data)["package-lock.json"]["secret_scan"] == "incomplete"
    # the same file excluded by the user's own select.exclude: the gap is named, not gated
    rc, data, err = review_json(repo, **budget, **llm.env(),
                                OCR_HOOK_SELECT_EXCLUDE="package-lock.json")
    assert (rc, data["verdict"], data["incomplete_reasons"]) == (0, "pass", []), err
    got = files(data)["package-lock.json"]
    assert got["reason"] == "user_exclude" and "secret_scan" not in got
    assert got["detail"].startswith("secret scan: not scanned, its ")
    assert llm.requests == []
    assert repo.state() == before


def test_budget_used_up_on_a_too_large_file_names_what_was_not_scanned(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    text, _ = late_secret_module()
    repo.commit({"README.md": "x\n"}, "init")
    repo.stage({"settings.py": text})
    rc, data, err = review_json(repo, **llm.env(), OCR_HOOK_SECURITY_MAX_SCAN_BYTES="1048576",
                                OCR_HOOK_GATE_ON_ERROR="block")
    assert rc == 3, err  # the key is past the budget: not found, and the run says so
    assert data["comments"] == []
    got = files(data)["settings.py"]
    assert got["secret_scan"] == "incomplete"
    assert got["detail"].endswith("secret scan: first 1.0 MiB of 1.5 MiB scanned, "
                                  "no secret found")
    assert data["incomplete_reasons"] == [
        "NOT REVIEWED: 1 of 1 files: settings.py larger than select.max_file_bytes (1.0 MiB);"
        " `git ocr review --preview` lists them; secret scan incomplete: the text added to 1"
        " file (settings.py) was not all scanned within security.max_scan_bytes (1.0 MiB);"
        " raise it, or name the files in select.exclude"]


# -- a text file with a NUL byte ------------------------------------------------------------------


def test_a_utf16_file_is_secret_scanned_decoded_and_an_old_key_is_not_this_change(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    """UTF-16 text (PowerShell 5 writes it, with a BOM): git calls it binary; its secret scan
    reads it decoded. In a modified one a key the old blob already held is not this change's."""
    ps1 = "\ufeff$Region = 'eu'\r\n$Key = '" + AWS_KEY + "'\r\n"
    repo.commit({"README.md": "x\n", "old.ps1": ps1.replace("'eu'", "'us'").encode("utf-16-le")},
                "init")
    added = "# deploy\n$Env = 'prod'\n$Secret = '" + AWS_KEY + "'\n"  # no BOM
    repo.stage({"deploy.ps1": added.encode("utf-16-le"), "old.ps1": ps1.encode("utf-16-le")})
    rc, data, err = review_json(repo, **llm.env())
    assert rc == 1, err
    [c] = data["comments"]
    assert (c["path"], c["start_line"], c["anchor"], c["severity"], c["existing_code"]) == (
        "deploy.ps1", 3, "file", "critical", "$Secret = '[REDACTED:aws-access-key]'")
    got = files(data)
    n = len(added.encode("utf-16-le"))
    assert (got["deploy.ps1"]["reason"], got["deploy.ps1"]["detail"]) == (
        "binary", f"secret scan: all {n} B scanned (UTF-16 text), 1 secret(s) found"
                  " (critical finding)")
    assert got["old.ps1"]["detail"] == (f"secret scan: all {len(ps1.encode('utf-16-le'))} B"
                                        " scanned (UTF-16 text), no secret found")
    assert AWS_KEY not in p_text(data)
    assert llm.requests == []


def test_text_file_with_a_nul_byte_is_secret_scanned_and_the_key_flagged(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    repo.commit({"README.md": "x\n", "old.cfg.py": b"A = 1\n\0\n" + f"K = '{AWS_KEY}'\n".encode()},
                "init")
    text = b"import os\n\0\nHOST = 'db'\n" + f"AWS_KEY = '{AWS_KEY}'\n".encode()
    cfg = b"A = 2\n\0\n" + f"K = '{AWS_KEY}'\n".encode()
    repo.stage({"conf.py": text, "old.cfg.py": cfg})
    assert repo.git("diff", "--cached", "--numstat").splitlines()[0].startswith("-\t-\t")
    before = repo.state()
    rc, data, err = review_json(repo, **llm.env())
    assert rc == 1, err
    [c] = data["comments"]  # old.cfg.py's key was already there: not this change's secret
    assert (c["path"], c["start_line"], c["anchor"], c["existing_code"]) == (
        "conf.py", 4, "file", "AWS_KEY = '[REDACTED:aws-access-key]'")
    got = files(data)
    assert (got["conf.py"]["reason"], got["conf.py"]["detail"]) == (
        "binary", f"secret scan: all {len(text)} B scanned (text with NUL bytes), 1 secret(s)"
                  " found (critical finding)")
    assert got["old.cfg.py"]["detail"] == (f"secret scan: all {len(cfg)} B scanned (text with"
                                           " NUL bytes), no secret found")
    assert AWS_KEY not in p_text(data)
    assert llm.requests == []
    p = ocr(repo, "hook", "pre-commit", **llm.env())
    assert p.returncode == 1
    assert "BLOCKING conf.py:4 (anchor: file) [critical · security]" in p.stdout
    assert repo.state() == before


def test_real_binary_content_is_not_scanned_and_passes(repo: GitRepo, llm: ScriptedLLM) -> None:
    png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256)) * 8 + AWS_KEY.encode()
    repo.commit({"README.md": "x\n"}, "init")
    repo.stage({"logo.png": png})
    rc, data, err = review_json(repo, **llm.env(), OCR_HOOK_GATE_ON_ERROR="block")
    assert (rc, data["verdict"], data["comments"]) == (0, "pass", []), err
    assert files(data)["logo.png"] == {"path": "logo.png", "status": "added", "reviewed": False,
                                       "reason": "binary"}


def test_scan_of_a_long_one_line_blob_stays_within_bounded_memory(repo: GitRepo) -> None:
    """The blob scan streams: scanning a 20 MB one-line blob holds a few read chunks at most
    (tracemalloc in a child process), and finds a key at its very end."""
    line = "var a=[" + "1," * 10_000_000 + f'];var k="{AWS_KEY}";'
    repo.commit({"README.md": "x\n"}, "init")
    repo.stage({"bundle.js": line})
    oid = repo.git("rev-parse", ":bundle.js").strip()
    code = f"""
import tracemalloc, sys
from pathlib import Path
from ocr_hook.diff import FileDiff
from ocr_hook.secrets import blobs
fd = FileDiff("added", "bundle.js", "bundle.js", "000000", "100644", old_oid="0" * 40,
              new_oid={oid!r}, size_bytes={len(line)})
tracemalloc.start()
scan = blobs.scan_blob(Path({str(repo.path)!r}), fd, (), 1 << 30)
peak = tracemalloc.get_traced_memory()[1]
print(peak, scan.complete, [(f.start_line, f.content[:34]) for f in scan.findings])
"""
    env = {**repo.env, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    p = subprocess.run([sys.executable, "-c", code], cwd=repo.path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    peak, complete, found = p.stdout.split(" ", 2)
    assert (complete, found.strip()) == ("True", f"[(1, '{SECRET}')]")
    assert int(peak) < 8 * (1 << 20), peak  # the blob is 20 MB: it is never held whole
