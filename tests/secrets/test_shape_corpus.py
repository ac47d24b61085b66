"""Secret detection by shape family on ``tests/secrets/shape_corpus.py``: realistic fake
credentials, each in the kind of file it lives in (URL passwords with reserved characters,
tokens passed to SDK constructors, literals joined on one line, tokens with dots inside,
Authorization values, CLI password flags, npm credentials, AGE / OpenSSH / PGP / PKCS#8 / PuTTY
keys, ...), and realistic text that is no secret (hashes, UUIDs, placeholders, code).

Real: the shipped rule file, the redaction every text sent to a model goes through, the
hook's diff scan, and for the whole corpus a git repository reviewed through ``cli.main`` with
the scripted loopback model recording every request. Fake: the credentials (derived from seeds
when the corpus is imported, never issued) and the model's replies.
"""

from __future__ import annotations

import json
from unittest import mock

import pytest

from ocr_hook.diff.model import FileDiff, Hunk, Line
from ocr_hook.report.session import sessions_dir
from ocr_hook.secrets import diff_scan, redaction
from ocr_hook.secrets.patterns import rules
from ocr_hook.secrets.redaction import find_secrets, redact
from tests.secrets.shape_corpus import CLEAN, SHAPES, Clean, Shape, shapes_by_path
from tests.secrets.test_corpus import SECRET_CONTENT_START
from tests.support.cli import run_cli
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

# Shapes a hostile repository uses to slip a credential past a scanner that matches strings,
# each pinned by name: a URL password
# with "@" and "/", a token passed to an SDK constructor, "a" + "b", "".join([...]), a JS
# template, Vault hvs., curl Basic and Bearer, mysqldump -p, Mapbox sk., a UUID npm _authToken
# (in .npmrc and in a file that is neither reviewed nor a secret path) and an age key.
ATTACK_SHAPES = (
    "url-at-and-slash", "url-email-user", "sdk-openai-positional", "join-plus-java",
    "join-python-join", "join-js-template-literal", "vault-hvs-env", "curl-basic",
    "curl-bearer", "mysqldump-p-quoted", "mapbox-sk-gradle", "npmrc-uuid", "npmrc-template-uuid",
    "age-key-file",
)


def test_the_corpus_has_80_fakes_in_40_shapes_and_30_non_secrets() -> None:
    assert len(SHAPES) >= 80
    assert len({s.name for s in SHAPES}) == len(SHAPES)
    assert len({s.shape for s in SHAPES}) >= 40
    assert len({s.path.rsplit(".", 1)[-1] for s in SHAPES}) >= 25  # file types, roughly
    assert len(CLEAN) >= 30
    assert len({c.name for c in CLEAN}) == len(CLEAN)
    assert set(ATTACK_SHAPES) <= {s.name for s in SHAPES}


@pytest.mark.parametrize("case", SHAPES, ids=[s.name for s in SHAPES])
def test_each_fake_is_redacted_and_named_by_its_type(case: Shape) -> None:
    redacted, count = redact(case.text)
    assert [leak for leak in case.leaks if leak in redacted] == []
    assert f"[REDACTED:{case.type}]" in redacted
    assert count >= 1
    assert redacted.count("\n") == case.text.count("\n")
    hits = find_secrets(case.text)
    assert case.type in [h.type for h in hits
                         if h.line <= case.line <= h.line + h.value.count("\n")], hits


@pytest.mark.parametrize("case", CLEAN, ids=[c.name for c in CLEAN])
def test_non_secrets_are_left_unchanged(case: Clean) -> None:
    assert find_secrets(case.text) == []
    assert redact(case.text) == (case.text, 0)


def test_the_whole_corpus_as_files_leaks_nothing_and_the_clean_files_stay() -> None:
    sent = "\n".join(redact(text)[0] for text in shapes_by_path().values())
    assert [leak for s in SHAPES for leak in s.leaks if leak in sent] == []
    clean = "".join(c.text for c in CLEAN)
    assert redact(clean) == (clean, 0)


def test_the_prefilters_change_nothing_on_the_corpus() -> None:
    """Keywords and the assignment test skip rules a text cannot match: on every corpus text
    the result equals a scan with every rule run over the whole text, and every match of every
    rule passes its own rule's prefilter."""
    full = tuple(r._replace(keywords=(), assignment=False) for r in rules())
    texts = [s.text for s in SHAPES] + [c.text for c in CLEAN]
    for text in texts:
        with mock.patch.object(redaction, "rules", lambda: full):
            unfiltered = (find_secrets(text), redact(text))
        assert (find_secrets(text), redact(text)) == unfiltered, text
        for rule in rules():
            for m in rule.pattern.finditer(text):
                assert rule.may_match(m.group(0).lower()), (rule.where, text)


def _added(path: str, text: str) -> FileDiff:
    rows = text.split("\n")[:-1]
    lines = tuple(Line("+", t, None, i) for i, t in enumerate(rows, 1))
    hunk = Hunk(0, 0, 1, len(lines), f"@@ -0,0 +1,{len(lines)} @@", lines)
    return FileDiff("added", path, path, hunks=(hunk,), insertions=len(lines),
                    patch="\n".join("+" + t for t in rows))


@pytest.mark.parametrize("case", SHAPES, ids=[s.name for s in SHAPES])
def test_each_fake_staged_as_a_new_file_is_a_finding_on_its_line(case: Shape) -> None:
    """The hook's own form: the added lines of a diff, scanned with their `+` markers."""
    fd = _added(case.path, case.text)
    found = diff_scan.secret_findings([fd])
    on_line = {f.content[len(SECRET_CONTENT_START):].split(")")[0] for f in found
               if f.start_line <= case.line <= f.end_line}
    # flagged on its line (the type is pinned on the plain text above: with the diff's "+" at
    # a line start, an anchored rule such as npm's "_auth =" leaves the naming to a broader one)
    assert on_line, found
    assert {(f.severity.name, f.category) for f in found} == {("CRITICAL", "security")}
    diff_scan.redact_file_diff(fd, lambda s: redact(s)[0])
    sent = fd.patch + "".join(ln.text for h in fd.hunks for ln in h.lines)
    assert [leak for leak in case.leaks if leak in sent] == []
    assert [leak for f in found for leak in case.leaks if leak in (f.existing_code or "")] == []


def test_a_review_of_the_shape_corpus_sends_no_fake_in_any_request(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every corpus file staged in a real repository, reviewed through the CLI; the scripted
    model reads every file (reviewed or not), searches for credential words and reads the
    diffs. No fake value reaches any request, the output or the session file."""
    files = shapes_by_path()
    repo.commit({"README.md": "hi\n"}, "init")
    repo.stage(dict(files))
    before = repo.state()
    calls = [("file_read", {"file_path": p}) for p in files]
    calls += [("code_search", {"search_text": w}) for w in
              ("password", "token", "Authorization", "_authToken", "SECRET", "-p")]
    calls.append(("file_read_diff", {"path_array": list(files)}))
    for at in range(0, len(calls), 40):  # TOOL_CALLS_PER_TURN_MAX is 50
        # every request of the group that holds backup/nightly.sh, and none other, has this word
        llm.tool_calls(*calls[at:at + 40], match="mysqldump")
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review", "--format", "json", "--effort", "low", "--no-cache"],
                           llm.env(), capsys)
    assert rc == 1, err  # every file adds a secret: critical findings block
    data = json.loads(out)
    leaks = [leak for s in SHAPES for leak in s.leaks]
    sent = [json.dumps(m) for r in llm.requests for m in r["messages"]]
    # the group of backup/nightly.sh: its three scripted turns of tool calls and the last one
    assert sum("mysqldump" in json.dumps(r) for r in llm.requests) == len(range(0, len(calls), 40)) + 1
    [last] = [r for r in llm.requests if "mysqldump" in json.dumps(r)][-1:]
    tool_results = [m["content"] for m in last["messages"] if m["role"] == "tool"]
    assert len(tool_results) == len(calls)
    refused = [a.get("file_path") for (_, a), r in zip(calls, tool_results, strict=True)
               if "is on the secret-path list" in r]
    assert refused == [".env", ".env.production", ".env.local", "deploy/id_ed25519",
                       "certs/server.key", ".npmrc", "ci/.npmrc", "web/.npmrc",
                       ".docker/config.json", ".pypirc"]
    # every other file read, search and the diffs hold a secret, shown as its placeholder
    assert [c for c, r in zip(calls, tool_results, strict=True)
            if "is on the secret-path list" not in r and "[REDACTED:" not in r] == []
    assert [leak for leak in leaks if any(leak in m for m in sent)] == []
    assert [leak for leak in leaks if leak in out or leak in err] == []
    raw = (sessions_dir(repo.path / ".git") / f"{data['session_id']}.jsonl").read_text("utf-8")
    assert [leak for leak in leaks if leak in raw] == []
    assert repo.state() == before
