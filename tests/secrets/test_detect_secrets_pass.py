"""The opt-in detect-secrets pass (spec §14.3, ``security.detect_secrets``): values only
detect-secrets reports are critical findings on their lines and never reach the model; off by
default; without the package, one warning and the review goes on.

Real: git repositories, ``cli.main`` (in-process, and in a fresh interpreter for the missing
package), detect-secrets 1.x (the ``test`` extra), the scripted loopback model recording every
request. Fake: the values (hex digests of fixed seeds, no real secret) and the model's replies.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from ocr_hook.agent.redactor import Redactor
from ocr_hook.secrets.detect_secrets_pass import placeholder_type
from ocr_hook.secrets.redaction import redact
from tests.support.cli import run_cli, run_json, run_python
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM
from tests.support.secret_corpus import GH_CLASSIC

# Quoted random hex under names that do not look secret: our rules leave them alone (they need
# a known format or a secret-like name), detect-secrets' hex high-entropy plugin reports them.
CHECKSUM = hashlib.sha256(b"ocr-hook detect-secrets fixture 1").hexdigest()[:40]
MIRROR = hashlib.sha256(b"ocr-hook detect-secrets fixture 2").hexdigest()[:40]
HEX_TYPE = "detect-secrets:hex-high-entropy-string"
APP = "\n".join([
    "import os",
    f'CHECKSUM = "{CHECKSUM}"',  # only detect-secrets: a finding when on
    f'MIRROR = "{MIRROR}"  # ocr-hook: allow-secret',  # allowed: no finding, still redacted
    f'TOKEN = "{GH_CLASSIC}"',  # ours (and detect-secrets'): one finding, ours
    "",
])
ON = {"OCR_HOOK_SECURITY_DETECT_SECRETS": "true"}


def review(repo: GitRepo, llm: ScriptedLLM, env: dict[str, str], monkeypatch: pytest.MonkeyPatch,
           capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any], str]:
    repo.stage({"app.py": APP})
    llm.tool_calls(("file_read", {"file_path": "app.py"}),
                   ("code_search", {"search_text": "CHECKSUM"}))
    llm.tool_calls(("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    return run_json(["review", "--format", "json", "--effort", "low", "--no-cache"],
                    llm.env(**env), capsys)


def secret_spots(data: dict[str, Any]) -> list[tuple[int, str, str]]:
    return [(c["start_line"], c["severity"], c["content"].split("(", 1)[1].split(")")[0])
            for c in data["comments"] if c["content"].startswith("Hard-coded secret (")]


def test_a_value_only_detect_secrets_finds_is_a_finding_and_never_sent(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, data, err = review(repo, llm, ON, monkeypatch, capsys)
    assert rc == 1, err
    assert secret_spots(data) == [(2, "critical", HEX_TYPE), (4, "critical", "github-token")]
    [ds] = [c for c in data["comments"] if HEX_TYPE in c["content"]]
    assert (ds["path"], ds["end_line"], ds["category"]) == ("app.py", 2, "security")
    assert ds["existing_code"] == f'CHECKSUM = "[REDACTED:{HEX_TYPE}]"'
    assert [w for w in data["warnings"] if w["type"] == "detect_secrets"] == []
    assert len(llm.requests) == 2
    sent = json.dumps(llm.requests)
    assert [v for v in (CHECKSUM, MIRROR, GH_CLASSIC) if v in sent] == []
    prompt = llm.requests[0]["messages"][1]["content"]
    assert f'\n2 +CHECKSUM = "[REDACTED:{HEX_TYPE}]"' in prompt
    assert f'\n3 +MIRROR = "[REDACTED:{HEX_TYPE}]"  # ocr-hook: allow-secret' in prompt
    assert '\n4 +TOKEN = "[REDACTED:github-token]"' in prompt
    tools = [m["content"] for m in llm.requests[1]["messages"] if m["role"] == "tool"]
    assert f'2|CHECKSUM = "[REDACTED:{HEX_TYPE}]"' in tools[0]  # file_read
    assert tools[1] == (f'File: app.py\nMatch lines: 1\n1-import os\n'
                        f'2|CHECKSUM = "[REDACTED:{HEX_TYPE}]"\n'
                        f'3-MIRROR = "[REDACTED:{HEX_TYPE}]"  # ocr-hook: allow-secret')


def test_off_by_default_the_value_is_no_finding(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, data, err = review(repo, llm, {}, monkeypatch, capsys)
    assert rc == 1, err
    assert secret_spots(data) == [(4, "critical", "github-token")]
    sent = json.dumps(llm.requests)
    assert CHECKSUM in sent and GH_CLASSIC not in sent  # ours only: the hex is no secret to it


WITHOUT_PACKAGE = """\
import sys
sys.modules["detect_secrets"] = None  # as if installed without the [detect-secrets] extra
from ocr_hook import cli
sys.exit(cli.main(sys.argv[1:]))
"""


def test_on_without_the_package_is_one_warning_and_the_review_goes_on(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    repo.stage({"app.py": APP})
    llm.tool_calls(("task_done", {"state": "DONE"}))
    p = run_python(["-c", WITHOUT_PACKAGE, "review", "--format", "json", "--effort", "low",
                    "--no-cache"], cwd=repo.path, env=llm.env(**ON))
    message = ("security.detect_secrets is on but detect-secrets is not installed (or not"
               " version 1.x): pip install 'ocr-hook[detect-secrets]'; secrets were looked for"
               " with ocr-hook's own rules only")
    assert p.returncode == 1, p.stderr
    data = json.loads(p.stdout)
    assert data["status"] == "complete" and len(llm.requests) == 1
    assert secret_spots(data) == [(4, "critical", "github-token")]
    assert [w for w in data["warnings"] if w["type"] == "detect_secrets"] == [
        {"type": "detect_secrets", "file": "", "message": message}]
    assert [ln for ln in p.stderr.splitlines() if "detect-secrets" in ln] == [
        f"ocr-hook: {message}"]


def test_literals_are_redacted_everywhere_and_a_rule_keeps_its_type() -> None:
    text = f'a = "{CHECKSUM}"\nb = {CHECKSUM[:8]}\nt = "{GH_CLASSIC}"'
    out, n = redact(text, {CHECKSUM: HEX_TYPE, GH_CLASSIC: "detect-secrets:github-token"})
    assert (out, n) == (f'a = "[REDACTED:{HEX_TYPE}]"\nb = {CHECKSUM[:8]}\n'
                        't = "[REDACTED:github-token]"', 2)
    keyword = {"secret-scan": "detect-secrets:secret-keyword"}  # a short value it may report
    once = redact('SOURCE = "secret-scan"', keyword)[0]
    assert once == 'SOURCE = "[REDACTED:detect-secrets:secret-keyword]"'
    assert redact(once, {**keyword, "secret": "detect-secrets:secret-keyword"}) == (once, 0)
    red = Redactor({CHECKSUM: HEX_TYPE})
    assert red(f"x{CHECKSUM}y {CHECKSUM}") == f"x[REDACTED:{HEX_TYPE}]y [REDACTED:{HEX_TYPE}]"
    assert red.replaced == 2
    assert placeholder_type("Base64 High Entropy String") == (
        "detect-secrets:base64-high-entropy-string")


def test_only_added_lines_are_scanned(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"app.py": f'CHECKSUM = "{CHECKSUM}"\n'}, "old value")  # not this change
    repo.stage({"app.py": f'CHECKSUM = "{CHECKSUM}"\nMIRROR = "{MIRROR}"\n'})
    llm.tool_calls(("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review", "--format", "json", "--effort", "low", "--no-cache"],
                           llm.env(**ON), capsys)
    assert rc == 1, err
    assert secret_spots(json.loads(out)) == [(2, "critical", HEX_TYPE)]
    sent = json.dumps(llm.requests)
    assert MIRROR not in sent and CHECKSUM in sent  # an old line's value: not found, as ours
