"""The comment pipeline's runtime (spec §8.2, §8.1 re-location): the thread-safe collector,
the anchoring pool that never blocks the caller, and re-location through the real client
against the scripted loopback model. Real: threads, git diffs, HTTP; fake: the model's replies.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from ocr_hook.agent.filtering import first_code_block, relocate_snippet
from ocr_hook.agent.meter import Meter
from ocr_hook.comments.pool import Collector, CommentPool, CommentProcessor
from ocr_hook.findings import Finding, RawComment, RunWarning, finding_id
from ocr_hook.llm import make_client
from ocr_hook.llm.types import Endpoint
from ocr_hook.vocabulary import Severity
from tests.support.cli import cli_environ
from tests.support.gitrepo import GitRepo
from tests.support.samples import APP, GUARD, staged
from tests.support.scripted_llm import ScriptedLLM


def raw(path: str = "app.py", quote: str = "if item.price < 0:", content: str = "c",
        group: str = "g") -> RawComment:
    return RawComment(path, content, quote, "", Severity.HIGH, "bug", None, group)


def found(path: str, n: int) -> Finding:
    return Finding(finding_id(path, "new", f"x{n}", "c"), path, "new", n, n, Severity.LOW,
                   "bug", "c", f"x{n}", "", "hunk_new")


@pytest.fixture
def executor() -> Iterator[ThreadPoolExecutor]:
    ex = ThreadPoolExecutor(max_workers=4, thread_name_prefix="test-comment")
    yield ex
    ex.shutdown(wait=True, cancel_futures=True)


def test_collector_is_safe_under_concurrent_adds_and_removes() -> None:
    c: Collector = Collector()

    def work(t: int) -> None:
        for n in range(200):
            c.add(found(f"f{t}.py", n))
        c.remove([found(f"f{t}.py", n).id for n in range(0, 200, 2)])

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(c) == 8 * 100
    assert [f.start_line for f in c.for_path("f3.py")] == list(range(1, 200, 2))


def test_collector_snapshot_and_warnings_are_copies_and_remove_is_by_id() -> None:
    c: Collector = Collector()
    a, b = found("a.py", 1), found("b.py", 2)
    c.add(a)
    c.add(b)
    c.warn(RunWarning("comment_refiled", "a.py", "moved"))
    snap = c.snapshot()
    snap.clear()
    c.warnings.clear()
    assert c.snapshot() == [a, b]
    assert c.warnings == [RunWarning("comment_refiled", "a.py", "moved")]
    assert c.for_path("b.py") == [b]
    assert c.remove([a.id, "no-such-id"]) == [a]
    assert c.snapshot() == [b]
    assert c.remove([a.id]) == []


def test_submit_returns_before_anchoring_finishes(executor: ThreadPoolExecutor) -> None:
    release = threading.Event()
    started = threading.Event()

    def slow(c: RawComment) -> tuple[Finding, list[RunWarning]]:
        started.set()
        assert release.wait(10)
        return found(c.path, 7), [RunWarning("comment_refiled", c.path, "w")]

    collector: Collector = Collector()
    pool = CommentPool(executor, slow, collector)
    pool.submit([raw("a.py"), raw("b.py")], "g1")  # must not wait for `slow`
    assert started.wait(10)
    assert len(collector) == 0 and not release.is_set()
    release.set()
    got = pool.drain("g1")
    assert [f.path for f in got] == ["a.py", "b.py"]
    assert sorted(f.path for f in collector.snapshot()) == ["a.py", "b.py"]
    assert len(collector.warnings) == 2
    assert pool.drain("g1") == []  # drained once


def test_drain_waits_only_for_its_own_key(executor: ThreadPoolExecutor) -> None:
    release = threading.Event()

    def process(c: RawComment) -> tuple[Finding, list[RunWarning]]:
        if c.group == "slow":
            assert release.wait(10)
        return found(c.path, 1), []

    pool = CommentPool(executor, process, Collector())
    pool.submit([raw("s.py", group="slow")], "slow")
    pool.submit([raw("q.py", group="quick")], "quick")
    assert [f.path for f in pool.drain("quick")] == ["q.py"]
    release.set()
    assert [f.path for f in pool.drain("slow")] == ["s.py"]


def test_a_crashing_anchor_keeps_the_comment_unanchored(executor: ThreadPoolExecutor) -> None:
    def broken(c: RawComment) -> tuple[Finding, list[RunWarning]]:
        raise RuntimeError("bug")

    collector: Collector = Collector()
    pool = CommentPool(executor, broken, collector)
    pool.submit([raw("a.py")], "k")
    [f] = pool.drain("k")
    assert (f.path, f.start_line, f.end_line, f.anchor) == ("a.py", 0, 0, "none")
    assert collector.snapshot() == [f]


# ---- re-location (spec §8.1) through the real client ----------------------------------------

def client_for(llm: ScriptedLLM):  # type: ignore[no-untyped-def]
    return make_client(Endpoint(url=llm.url, model="scripted-model", api_key="k",
                                protocol=llm.protocol, max_retries=0))


def processor(repo: GitRepo, llm: ScriptedLLM) -> CommentProcessor:
    files, lines, reviewed = staged(repo, {"app.py": APP}, {"app.py": GUARD})
    client = client_for(llm)
    meter = Meter()
    return CommentProcessor(files, lines, reviewed, relocate=lambda fd, c: relocate_snippet(
        client, fd, c, meter=meter, label=c.group))


def test_paraphrased_quote_is_relocated_to_exact_lines(repo: GitRepo, llm: ScriptedLLM) -> None:
    process = processor(repo, llm)
    llm.text('```python\nif item.price < 0:\n    raise ValueError("negative price")\n```')
    quote = 'if item.price <= 0:\n    raise ValueError("bad price")'
    finding, warnings = process(raw(quote=quote, content="Zero prices pass the check."))
    assert (finding.path, finding.side, finding.start_line, finding.end_line, finding.anchor) == (
        "app.py", "new", 13, 14, "relocated")
    assert finding.existing_code == 'if item.price < 0:\n    raise ValueError("negative price")'
    assert finding.id == finding_id("app.py", "new", quote, "Zero prices pass the check.")
    assert warnings == []
    [req] = llm.requests
    assert "tools" not in req and "tool_choice" not in req
    user = req["messages"][1]["content"]
    assert "+        if item.price < 0:" in user and quote in user
    assert "Zero prices pass the check." in user


def test_implausible_quote_makes_no_relocation_call(repo: GitRepo, llm: ScriptedLLM) -> None:
    process = processor(repo, llm)
    finding, _ = process(raw(quote="def unrelated_function(arg):\n    return arg * 2"))
    assert (finding.start_line, finding.end_line, finding.anchor) == (0, 0, "none")
    assert llm.requests == []


def test_anchored_quote_makes_no_relocation_call(repo: GitRepo, llm: ScriptedLLM) -> None:
    finding, _ = processor(repo, llm)(raw(quote="if item.price < 0:"))
    assert (finding.start_line, finding.anchor) == (13, "hunk_new")
    assert llm.requests == []


@pytest.mark.parametrize("reply", [
    "```\nreturn totally_made_up()\n```",  # a snippet that is not in the diff
    "NONE",
    "",
])
def test_relocation_answer_outside_the_diff_stays_unanchored(
    repo: GitRepo, llm: ScriptedLLM, reply: str
) -> None:
    process = processor(repo, llm)
    llm.text(reply)
    finding, _ = process(raw(quote="if item.price <= 0:"))
    assert (finding.start_line, finding.end_line, finding.anchor) == (0, 0, "none")
    assert finding.existing_code == "if item.price <= 0:"
    assert len(llm.requests) == 1


def test_relocation_snippet_of_unchanged_code_is_rejected(repo: GitRepo, llm: ScriptedLLM) -> None:
    """A re-located snippet must come from the diff: the whole-file tier is not used."""
    process = processor(repo, llm)
    llm.text("```\ndef load(path):\n```")
    finding, _ = process(raw(quote="if item.price <= 0:"))
    assert finding.anchor == "none"


def test_relocation_failure_keeps_the_comment(repo: GitRepo, llm: ScriptedLLM) -> None:
    process = processor(repo, llm)
    llm.reply({"error": {"message": "bad request", "type": "invalid_request_error"}}, status=400)
    finding, _ = process(raw(quote="if item.price <= 0:"))
    assert (finding.start_line, finding.anchor) == (0, "none")
    assert len(llm.requests) == 1  # 400 is never retried


def test_relocation_over_anthropic(repo: GitRepo, anthropic_llm: ScriptedLLM) -> None:
    process = processor(repo, anthropic_llm)
    anthropic_llm.text('Here:\n```\nraise ValueError("negative price")\n```')
    finding, _ = process(raw(quote='raise ValueError("negative")'))
    assert (finding.start_line, finding.end_line, finding.anchor) == (14, 14, "relocated")
    assert anthropic_llm.paths == ["/v1/messages"]


@pytest.mark.parametrize(("text", "want"), [
    ("```py\na = 1\nb = 2\n```", "a = 1\nb = 2"),
    ("<think>hmm ```x```</think>\n```\nc = 3\n```\n```\nd = 4\n```", "c = 3"),
    ("```\nunterminated = 1", "unterminated = 1"),
    ("plain = 1", "plain = 1"),
    ("NONE", None),
    ("  ", None),
])
def test_first_code_block(text: str, want: str | None) -> None:
    assert first_code_block(text) == want


# ---- whole reviews: every comment carries side and anchor into each output format -----------

def test_review_relocates_refiles_and_reports_old_side_in_every_format(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    from ocr_hook import cli

    repo.commit({"app.py": APP, "util.py": "def util():\n    pass\n"}, "init")
    repo.stage({"app.py": GUARD.replace("    return user.name\n", "    return user.nick\n"),
                "util.py": "def util():\n    return os.environ['HOME']\n"})
    comments = [
        {"path": "app.py", "content": "Zero prices pass.", "existing_code": "if item.price <= 0:",
         "severity": "high", "category": "bug"},
        {"path": "app.py", "content": "The old accessor was the documented one.",
         "existing_code": "-    return user.name", "severity": "low", "category": "other"},
        {"path": "app.py", "content": "HOME may be unset: KeyError.",
         "existing_code": "return os.environ['HOME']", "severity": "medium", "category": "bug"},
    ]
    llm.tool_calls(("code_comment", {"comments": comments}), ("task_done", {"state": "DONE"}))
    llm.text("```\nif item.price < 0:\n```")  # the re-location answer
    monkeypatch.chdir(repo.path)
    env = cli_environ(llm.env())
    outputs = {}
    for fmt in ("json", "text", "sarif"):
        if fmt != "json":
            llm.tool_calls(("code_comment", {"comments": comments}),
                           ("task_done", {"state": "DONE"}))
            llm.text("```\nif item.price < 0:\n```")
        rc = cli.main(["review", "--no-cache", "--no-filter", "--effort", "low", "--format", fmt],
                      environ=env)
        assert rc == 1
        outputs[fmt] = capsys.readouterr().out
    data = json.loads(outputs["json"])
    got = sorted((c["path"], c["side"], c["start_line"], c["end_line"], c["anchor"])
                 for c in data["comments"])
    assert got == [("app.py", "new", 13, 13, "relocated"), ("app.py", "old", 18, 18, "hunk_old"),
                   ("util.py", "new", 2, 2, "refiled")]
    assert [w["type"] for w in data["warnings"]].count("comment_refiled") == 1
    relocations = [r for r in llm.requests if "<quoted_code>" in r["messages"][1]["content"]]
    assert len(relocations) == 3  # one per run: only the paraphrased quote needed it
    text = outputs["text"]
    assert "BLOCKING app.py:13 (anchor: relocated) [high · bug] id " in text
    assert "\napp.py:18 (old side) [low · other] id " in text
    assert "\nutil.py:2 (anchor: refiled) [medium · bug] id " in text
    sarif = json.loads(outputs["sarif"])
    props = sorted((r["properties"]["side"], r["properties"]["anchor"])
                   for r in sarif["runs"][0]["results"])
    assert props == [("new", "refiled"), ("new", "relocated"), ("old", "hunk_old")]
    old = [r for r in sarif["runs"][0]["results"] if r["properties"]["side"] == "old"][0]
    # shown where the old line was removed: its replacement, new line 20
    assert old["locations"][0]["physicalLocation"]["region"] == {"startLine": 20}


def test_line_hint_of_code_comment_picks_between_identical_added_lines(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    from ocr_hook import cli

    repo.commit({"app.py": APP}, "init")
    repo.stage({"app.py": APP + "\n\ndef a():\n    return None\n\n\ndef b():\n    return None\n"})
    hinted = [{"path": "app.py", "content": f"Returns None silently ({n}).",
               "existing_code": "return None", "severity": "low", "category": "bug", **extra}
              for n, extra in (("a", {"line": 21}), ("b", {"line": 27}), ("c", {}))]
    llm.tool_calls(("code_comment", {"comments": hinted}), ("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    assert cli.main(["review", "--no-cache", "--no-filter", "--effort", "low", "--format",
                     "json"], environ=cli_environ(llm.env())) == 0
    data = json.loads(capsys.readouterr().out)
    got = {c["content"][-3:-2]: (c["start_line"], c["ambiguous"]) for c in data["comments"]}
    assert got == {"a": (22, False), "b": (26, False), "c": (22, True)}


# ---- comments outside the change are dropped, never findings (spec §8.2) -------------------

def scoped(repo: GitRepo) -> CommentProcessor:
    """A processor over a change of app.py (reviewed) and notes.txt (changed, not reviewed),
    with README.md committed and unchanged."""
    files, lines, reviewed = staged(repo, {"app.py": APP, "README.md": "hello\n",
                                           "notes.txt": "a\n"},
                                    {"app.py": GUARD, "notes.txt": "a\nb\n"})
    assert sorted(reviewed) == ["app.py", "notes.txt"]
    return CommentProcessor(files, lines, ["app.py"])


@pytest.mark.parametrize("path", ["../../etc/passwd", "/etc/passwd", "README.md", "notes.txt",
                                  "no/such/file.py"])
def test_a_comment_on_no_reviewed_file_is_dropped_with_one_warning(
    repo: GitRepo, executor: ThreadPoolExecutor, path: str,
) -> None:
    process = scoped(repo)
    collector: Collector = Collector()
    pool = CommentPool(executor, process, collector, place=process.place)
    placed = pool.submit([raw(path, quote="root:x:0:0:root:/root:/bin/bash"),
                          raw(path, quote="b", content="again")], "g")
    assert [type(p).__name__ for p in placed] == ["Dropped", "Dropped"]
    assert pool.drain("g") == []
    assert collector.snapshot() == []
    assert collector.warnings == [RunWarning(
        "comment_outside_change", path, f"comment on {path!r} dropped: not a file under review"
        " (comments count only on the reviewed change)")]


def test_a_comment_filed_on_an_unchanged_file_quoting_the_change_is_refiled_and_kept(
    repo: GitRepo, executor: ThreadPoolExecutor,
) -> None:
    process = scoped(repo)
    collector: Collector = Collector()
    pool = CommentPool(executor, process, collector, place=process.place)
    [f] = pool.submit([raw("README.md", quote="if item.price < 0:")], "g")
    assert isinstance(f, Finding)
    assert (f.path, f.start_line, f.anchor) == ("app.py", 13, "refiled")
    assert [w.type for w in collector.warnings] == ["comment_refiled"]


def test_the_background_path_drops_an_outside_comment_too(repo: GitRepo) -> None:
    process = scoped(repo)  # no place(): every comment is anchored on the executor
    collector: Collector = Collector()
    with ThreadPoolExecutor(max_workers=2) as ex:
        pool = CommentPool(ex, process, collector)
        assert pool.submit([raw("../x.py", quote="if item.price < 0 and x:")], "g") == [None]
        assert pool.drain("g") == []
    assert (collector.snapshot(), [w.file for w in collector.warnings]) == ([], ["../x.py"])


def test_a_path_quoted_in_the_warning_is_cut(repo: GitRepo, executor: ThreadPoolExecutor) -> None:
    process = scoped(repo)
    collector: Collector = Collector()
    CommentPool(executor, process, collector, place=process.place).submit(
        [raw("d/" * 400 + "x.py", quote="nowhere = 1")], "g")
    [w] = collector.warnings
    assert w.file == "d/" * 100 + "…" and len(w.message) < 300
