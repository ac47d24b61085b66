"""Secrets in a review (spec §14): deterministic critical findings with
exact lines and no LLM call, redaction of every request, identifiers left alone, allow-lists,
secret paths renamed away. Real: git repositories, HTTP to the scripted loopback model, an MCP
server process, the session file; fake: the model's replies."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from ocr_hook.diff.model import FileDiff, Hunk, Line, render_numbered
from ocr_hook.report.session import sessions_dir
from ocr_hook.secrets import diff_scan
from ocr_hook.secrets.redaction import redact
from tests.support.cli import run_json
from tests.support.gitrepo import GitRepo
from tests.support.home import write_user_config
from tests.support.mcp_servers import SCRIPT
from tests.support.scripted_llm import ScriptedLLM

AWS_KEY = "AKIA" + "IOSFODNN7REALKEY"  # fake; assembled so scanners skip this file
GH_TOKEN = "ghp_" + "R8x2Lq9ZtV4mN7pK3wY6sD1fH5jB0cXe2aGu"  # fake
DB_PASSWORD = "Sup3rS3cretPw"
PEM_BODY = [
    "MIIEowIBAAKCAQEA7bq9dZ3d1Y2l0Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2Rl",
    "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6",
    "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVoxMjM0NTY3ODkwYWJjZGVmZ2hpamts",
]
PEM = "\n".join(["-----BEGIN RSA PRIVATE KEY-----", *PEM_BODY, "-----END RSA PRIVATE KEY-----"])
SECRETS = [AWS_KEY, GH_TOKEN, DB_PASSWORD, *PEM_BODY]
SECRET_CONTENT_START = "Hard-coded secret ("


def spots(data: dict[str, Any]) -> list[tuple[str, int, int, str, str, str]]:
    """(path, start, end, severity, anchor, secret type) of the secret findings."""
    out = []
    for c in data["comments"]:
        if c["content"].startswith(SECRET_CONTENT_START):
            kind = c["content"][len(SECRET_CONTENT_START):].split(")")[0]
            out.append((c["path"], c["start_line"], c["end_line"], c["severity"], c["anchor"],
                        kind))
    return out


def reasons(data: dict[str, Any]) -> dict[str, str]:
    return {f["path"]: f["reason"] for f in data["files"]}


# -- three secrets, exact lines, no LLM call ----------------------------------------------------


@pytest.mark.parametrize("endpoint", [True, False], ids=["endpoint", "no-endpoint"])
def test_aws_key_pem_block_and_github_token_are_three_critical_findings_without_llm(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], endpoint: bool,
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    repo.stage({
        ".env": f"# local settings\nAWS_ACCESS_KEY_ID={AWS_KEY}\nDEBUG=1\n",
        "deploy/id_rsa": PEM + "\n",
        "notes.txt": f"release checklist\ntoken: {GH_TOKEN}\n",
    })
    before = repo.state()
    monkeypatch.chdir(repo.path)
    rc, data, err = run_json(["review", "--format", "json"], llm.env() if endpoint else {}, capsys)
    assert rc == 1, err  # blocked by the critical findings
    assert llm.requests == []  # nothing was reviewable: no LLM call at all
    assert spots(data) == [
        (".env", 2, 2, "critical", "hunk_new", "aws-access-key"),
        ("deploy/id_rsa", 1, 5, "critical", "hunk_new", "private-key"),
        ("notes.txt", 2, 2, "critical", "hunk_new", "github-token"),
    ]
    assert len(data["comments"]) == 3
    assert {c["category"] for c in data["comments"]} == {"security"}
    assert reasons(data) == {".env": "secret_path", "deploy/id_rsa": "secret_path",
                             "notes.txt": "unsupported_ext"}
    assert data["verdict"] == "findings"
    out_text = json.dumps(data)
    assert not [s for s in SECRETS if s in out_text]  # the output never repeats a secret
    assert data["comments"][0]["existing_code"] == "AWS_ACCESS_KEY_ID=[REDACTED:aws-access-key]"
    assert repo.state() == before


def test_mixed_change_sends_no_secret_value_in_any_request(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    app = "\n".join([
        "import os",
        "",
        f'AWS_KEY = "{AWS_KEY}"',
        f'GITHUB = "{GH_TOKEN}"',
        f'DB_URL = "postgres://admin:{DB_PASSWORD}@db.internal:5432/app"',
        'TOKEN = os.environ["GITHUB_TOKEN"]',
        f'PRIVATE = """{PEM}"""',
        "",
        "",
        "def connect():",
        "    return DB_URL",
        "",
    ])
    repo.commit({"README.md": "hi\n"}, "init")
    repo.stage({"app.py": app, "web.js": "const t = process.env.GITHUB_TOKEN;\n"})
    llm.tool_calls(("file_read", {"file_path": "app.py"}),
                   ("code_search", {"search_text": "AWS_KEY ="}),
                   ("file_read_diff", {"path_array": ["app.py"]}))
    llm.tool_calls(("code_comment", {"comments": [{
        "path": "app.py", "existing_code": 'AWS_KEY = "[REDACTED:aws-access-key]"',
        "content": "Credentials must not live in module constants; read them from the vault.",
        "severity": "high", "category": "security"}]}), ("task_done", {"state": "DONE"}))
    llm.tool_calls(("approve_all_comments", {}), match="approve_all_comments")
    monkeypatch.chdir(repo.path)
    rc, data, err = run_json(["review", "--format", "json", "--effort", "low", "--filter"],
                             llm.env(), capsys)
    assert rc == 1, err
    # grouping is deterministic (2 small files): main ×2 and the review filter
    assert len(llm.requests) == 3
    sent = json.dumps(llm.requests)
    assert [s for s in SECRETS if s in sent] == []
    for kind in ("aws-access-key", "github-token", "url-password", "private-key"):
        assert f"[REDACTED:{kind}]" in sent
    prompt = llm.requests[0]["messages"][1]["content"]
    assert ' 6 +TOKEN = os.environ["GITHUB_TOKEN"]' in prompt  # identifiers stay
    assert "const t = process.env.GITHUB_TOKEN;" in prompt
    assert ' 3 +AWS_KEY = "[REDACTED:aws-access-key]"' in prompt  # line numbers unchanged
    assert "\n 8 +[REDACTED:private-key]\n" in prompt
    assert "\n11 +-----END RSA PRIVATE KEY-----" + '"""' in prompt
    results = [m["content"] for m in llm.requests[1]["messages"] if m["role"] == "tool"]
    assert results[0].splitlines()[5:10] == [
        "3|AWS_KEY = \"[REDACTED:aws-access-key]\"", "4|GITHUB = \"[REDACTED:github-token]\"",
        '5|DB_URL = "postgres://admin:[REDACTED:url-password]@db.internal:5432/app"',
        '6|TOKEN = os.environ["GITHUB_TOKEN"]', '7|PRIVATE = """-----BEGIN RSA PRIVATE KEY-----']
    assert results[1] == ('File: app.py\nMatch lines: 1\n2-\n3|AWS_KEY = "[REDACTED:aws-access-key]"'
                          '\n4-GITHUB = "[REDACTED:github-token]"')  # context lines redacted too
    assert "[REDACTED:private-key]" in results[2]
    assert spots(data) == [
        ("app.py", 3, 3, "critical", "hunk_new", "aws-access-key"),
        ("app.py", 4, 4, "critical", "hunk_new", "github-token"),
        ("app.py", 5, 5, "critical", "hunk_new", "url-password"),
        ("app.py", 7, 11, "critical", "hunk_new", "private-key"),
    ]
    # the model quoted the placeholder it was shown: anchored to the exact line all the same
    [model] = [c for c in data["comments"] if c["severity"] == "high"]
    assert (model["start_line"], model["end_line"], model["anchor"]) == (3, 3, "hunk_new")
    assert data["files"] == [
        {"path": "app.py", "status": "added", "reviewed": True, "reason": ""},
        {"path": "web.js", "status": "added", "reviewed": True, "reason": ""},
    ]
    # the session log holds the redacted texts the model saw, never the values
    raw = (sessions_dir(repo.path / ".git") / f"{data['session_id']}.jsonl").read_text("utf-8")
    assert [s for s in SECRETS if s in raw] == []
    assert "[REDACTED:aws-access-key]" in raw


def test_environment_variable_names_produce_nothing(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = ("const token = process.env.GITHUB_TOKEN;\nconst key = process.env.API_KEY;\n"
            "const AWS_SECRET_ACCESS_KEY = process.env.AWS_SECRET_ACCESS_KEY;\n")
    repo.stage({"app.js": code, "cfg.py": 'API_KEY = os.environ["API_KEY"]\n'})
    monkeypatch.chdir(repo.path)
    rc, data, err = run_json(["review", "--format", "json", "--effort", "low"], llm.env(), capsys)
    assert rc == 0, err
    assert data["comments"] == []
    prompt = llm.requests[0]["messages"][1]["content"]
    assert "REDACTED" not in json.dumps(llm.requests)
    for line in code.splitlines():
        assert line in prompt
    assert 'API_KEY = os.environ["API_KEY"]' in prompt


def test_mcp_tool_results_and_resent_arguments_are_redacted(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_user_config(f"[mcp.servers.tracker]\ncommand = {json.dumps(sys.executable)}\n"
                      f"args = {json.dumps([SCRIPT, 'tracker'])}\n")
    repo.stage({"app.py": "x = 1\n"})
    # a tool whose result carries a secret (the ticket tool echoes its argument)
    llm.tool_calls(("lookup_ticket", {"ticket_id": GH_TOKEN}))
    llm.tool_calls(("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    rc, _, err = run_json(["review", "--format", "json", "--effort", "low"], llm.env(), capsys)
    assert rc == 0, err
    assert len(llm.requests) == 2
    second = llm.requests[1]["messages"]
    [tool] = [m["content"] for m in second if m["role"] == "tool"]
    assert tool == "ticket [REDACTED:github-token] from tracker: owner=alice status=open"
    [call] = next(m for m in second if m["role"] == "assistant")["tool_calls"]
    assert json.loads(call["function"]["arguments"]) == {"ticket_id": "[REDACTED:github-token]"}
    assert GH_TOKEN not in json.dumps(llm.requests)


# -- allow-lists ---------------------------------------------------------------------------


def test_inline_marker_and_configured_allow_list_silence_a_value(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    repo.stage({"fixtures.txt": (
        f"aws = {AWS_KEY}  # ocr-hook: allow-secret\n"
        f"gh = {GH_TOKEN}\n"
        "other = AKIA" "QWERTYUIOPASDFGH\n"
    )})
    monkeypatch.chdir(repo.path)
    rc, data, _ = run_json(["review", "--format", "json"], llm.env(), capsys)
    assert rc == 1
    assert [(s[1], s[5]) for s in spots(data)] == [(2, "github-token"), (3, "aws-access-key")]
    env = llm.env(OCR_HOOK_SECURITY_ALLOW_SECRETS=f"{GH_TOKEN},AKIAQWERTY[A-Z]+")
    rc, data, _ = run_json(["review", "--format", "json"], env, capsys)
    assert (rc, data["comments"]) == (0, [])
    assert llm.requests == []


def test_allow_list_is_read_from_head_so_a_commit_cannot_allow_its_own_secret(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({".ocr-hook.toml": '[security]\nallow_secrets = ["AKIAIOSFODNN7[A-Z]+"]\n'},
                "team allow-list")
    repo.stage({
        ".ocr-hook.toml": ('[security]\nallow_secrets = ["AKIAIOSFODNN7[A-Z]+", '
                           '"ghp_R8x2[A-Za-z0-9]+"]\n'),
        "keys.txt": f"a = {AWS_KEY}\nb = {GH_TOKEN}\n",
    })
    monkeypatch.chdir(repo.path)
    rc, data, err = run_json(["review", "--format", "json"], llm.env(), capsys)
    assert rc == 1, err
    assert [(s[0], s[1], s[5]) for s in spots(data)] == [("keys.txt", 2, "github-token")]


# -- a secret path renamed away -----------------------------------------------------------------


def test_renamed_env_file_is_still_excluded_and_its_secrets_flagged(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    env_text = f"# dev\nAWS_ACCESS_KEY_ID={AWS_KEY}\nGITHUB_TOKEN={GH_TOKEN}\nDEBUG=1\n"
    repo.commit({".env": env_text}, "oops")
    repo.git("mv", ".env", "notes.txt")
    before = repo.state()
    monkeypatch.chdir(repo.path)
    rc, data, err = run_json(["review", "--format", "json"], llm.env(), capsys)
    assert rc == 1, err
    assert data["files"] == [{"path": "notes.txt", "status": "renamed", "reviewed": False,
                              "reason": "secret_path", "old_path": ".env"}]
    assert spots(data) == [
        ("notes.txt", 2, 2, "critical", "file", "aws-access-key"),
        ("notes.txt", 3, 3, "critical", "file", "github-token"),
    ]
    assert llm.requests == []
    assert repo.state() == before


def test_renamed_env_file_with_an_edit_and_a_reviewable_neighbour(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines = [f"KEY_{i}=value{i}" for i in range(12)]
    repo.commit({".env": "\n".join([*lines[:4], f"AWS_ACCESS_KEY_ID={AWS_KEY}", *lines[4:]])
                 + "\n", "app.py": "x = 1\n"}, "init")
    repo.git("mv", ".env", "settings.py")
    text = (repo.path / "settings.py").read_text()
    repo.stage({"settings.py": text + f"GITHUB_TOKEN={GH_TOKEN}\n", "app.py": "x = 2\n"})
    llm.tool_calls(("file_read", {"file_path": "settings.py"}),
                   ("code_search", {"search_text": "KEY_1"}),
                   ("file_read_diff", {"path_array": ["settings.py"]}))
    llm.tool_calls(("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    rc, data, err = run_json(["review", "--format", "json", "--effort", "low"], llm.env(), capsys)
    assert rc == 1, err
    # renamed away from a secret path to a source file: reviewed whole (spec §4), every line
    # an added line, secrets redacted; the tools still never share it
    assert reasons(data) == {"settings.py": "", "app.py": ""}
    assert [f.get("whole") for f in data["files"]] == [None, "secret_path"]
    assert spots(data) == [
        ("settings.py", 5, 5, "critical", "hunk_new", "aws-access-key"),
        ("settings.py", 14, 14, "critical", "hunk_new", "github-token"),
    ]
    assert AWS_KEY not in json.dumps(llm.requests) and GH_TOKEN not in json.dumps(llm.requests)
    results = [m["content"] for m in llm.requests[1]["messages"] if m["role"] == "tool"]
    assert results == [
        ('Error: "settings.py" is on the secret-path list (keys, .env, credentials); its content'
         " is never shared"),
        "No matches found",
        "Error: diff not found for the requested paths",
    ]
    assert "+KEY_1=value1" in llm.requests[0]["messages"][-1]["content"]


# -- the scanner on its own ----------------------------------------------------------------


def _fd(lines: list[Line], path: str = "a.py") -> FileDiff:
    olds = [ln for ln in lines if ln.old_line is not None]
    news = [ln for ln in lines if ln.new_line is not None]
    h = Hunk(olds[0].old_line if olds else 0, len(olds), news[0].new_line if news else 0,
             len(news), "@@ -1 +1 @@", tuple(lines))
    return FileDiff("modified", path, path, hunks=(h,), insertions=1, deletions=1,
                    patch="\n".join(ln.kind + ln.text for ln in lines))


def test_a_secret_on_a_context_or_deleted_line_is_not_this_change() -> None:
    fd = _fd([
        Line(" ", f"old = '{AWS_KEY}'", 10, 20),
        Line("-", f"gone = '{GH_TOKEN}'", 11, None),
        Line("+", "gone = os.environ['GH']", None, 21),
        Line("+", "new = 'ASIAQWERTYUIOPASDFGH'", None, 22),
    ])
    [f] = diff_scan.secret_findings([fd])
    assert (f.start_line, f.end_line, f.existing_code) == (
        22, 22, "new = '[REDACTED:aws-access-key]'")


def test_redacting_a_diff_keeps_every_line_number_and_marker() -> None:
    fd = _fd([
        Line(" ", "def f():", 1, 1),
        Line("-", f"    k = '{AWS_KEY}'", 2, None),
        Line("+", "    k = '-----BEGIN EC PRIVATE KEY-----", None, 2),
        *[Line("+", b, None, 3 + i) for i, b in enumerate(PEM_BODY)],
        Line("+", "-----END EC PRIVATE KEY-----'", None, 6),
    ])
    before = [(ln.kind, ln.old_line, ln.new_line) for ln in fd.hunks[0].lines]
    diff_scan.redact_file_diff(fd, lambda s: redact(s)[0])
    after = fd.hunks[0].lines
    assert [(ln.kind, ln.old_line, ln.new_line) for ln in after] == before
    assert [ln.text for ln in after] == [
        "def f():", "    k = '[REDACTED:aws-access-key]'",
        "    k = '-----BEGIN EC PRIVATE KEY-----", *["[REDACTED:private-key]"] * 3,
        "-----END EC PRIVATE KEY-----'",
    ]
    shown = render_numbered(fd)
    assert not [s for s in SECRETS if s in shown + fd.patch]


def test_file_read_diff_of_a_file_not_reviewed_is_redacted(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    repo.stage({"app.py": "x = 1\n",
                "tests/test_keys.py": f'KEY = "{AWS_KEY}"\nPRIVATE = """{PEM}"""\n'})
    llm.tool_calls(("file_read_diff", {"path_array": ["tests/test_keys.py"]}))
    llm.tool_calls(("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    rc, data, err = run_json(["review", "--format", "json", "--effort", "low"], llm.env(), capsys)
    assert rc == 1, err
    assert reasons(data) == {"app.py": "", "tests/test_keys.py": "default_path"}
    assert [s for s in SECRETS if s in json.dumps(llm.requests)] == []
    [result] = [m["content"] for m in llm.requests[1]["messages"] if m["role"] == "tool"]
    assert result == "\n".join([
        "==== FILE: tests/test_keys.py ====",
        "diff --git a/tests/test_keys.py b/tests/test_keys.py", "new file mode 100644",
        "--- /dev/null", "+++ b/tests/test_keys.py", "@@ -0,0 +1,6 @@",
        '+KEY = "[REDACTED:aws-access-key]"', '+PRIVATE = """-----BEGIN RSA PRIVATE KEY-----',
        *["+[REDACTED:private-key]"] * 3, '+-----END RSA PRIVATE KEY-----"""'])
