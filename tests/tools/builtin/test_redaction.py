"""The context tools redact a secret written over several lines in its file context, before the
lines are numbered (spec §14.2): file_read, code_search hits on a continuation line, the batch
blob reader behind code_search, and the window limits. Real: git repositories, ``write-tree``
snapshots, ``git grep``/``cat-file``, the rule file. Fake: the secrets (never issued)."""

from __future__ import annotations

import os

from ocr_hook.git import target
from ocr_hook.secrets.redaction import redact
from ocr_hook.tools.builtin.code_search import code_search
from ocr_hook.tools.builtin.file_read import file_read
from ocr_hook.tools.snapshot import SnapshotView
from tests.support import secret_corpus as corpus
from tests.support.gitrepo import GitRepo

SPLIT = (f'KEY_ID = ("{corpus.AWS_SPLIT_ID[:10]}"\n'
         f'          "{corpus.AWS_SPLIT_ID[10:]}")\n')


def redacting_view(repo: GitRepo) -> SnapshotView:
    t = target.staged_snapshot(repo.path, os.environ)
    return SnapshotView(repo.path, t.head, target.load_diff(repo.path, t),
                        lambda s: redact(s)[0])


def test_file_read_redacts_each_piece_of_a_split_key_and_a_pem_body(repo: GitRepo) -> None:
    repo.stage({"keys.py": SPLIT + f'PEM = """{corpus.RSA_PEM}"""\n'})
    out = file_read(redacting_view(repo), {"file_path": "keys.py", "start_line": 2,
                                           "end_line": 4}).text
    assert out.splitlines()[3:] == [
        '2|          "[REDACTED:aws-access-key]")',
        '3|PEM = """-----BEGIN RSA PRIVATE KEY-----',
        "4|[REDACTED:private-key]",
    ]


def test_code_search_redacts_continuation_and_context_lines_in_their_file(
        repo: GitRepo) -> None:
    body = "\n".join(f"line_{i} = {i}" for i in range(100))
    repo.stage({"a.py": body + "\n" + SPLIT, "b.txt": f"{corpus.RSA_PEM}\n",
                "c.json": '{\n  "password":\n    "' + corpus.JSON_PW + '"\n}\n'})
    view = redacting_view(repo)
    # a hit on text the redaction keeps, on the second line of a split key
    assert code_search(view, {"search_text": '")'}).text == (
        'File: a.py\nMatch lines: 1\n101-KEY_ID = ("[REDACTED:aws-access-key]"\n'
        '102|          "[REDACTED:aws-access-key]")')  # context lines redacted in context too
    assert code_search(view, {"search_text": "-----END"}).text == (
        f"File: b.txt\nMatch lines: 1\n{len(corpus.RSA_BODY) + 1}-[REDACTED:private-key]\n"
        f"{len(corpus.RSA_BODY) + 2}|-----END RSA PRIVATE KEY-----")
    assert code_search(view, {"search_text": '"password"'}).text == (
        'File: c.json\nMatch lines: 1\n1-{\n2|  "password":\n3-    "[REDACTED:password]"')
    # the hidden characters themselves are never found, alone or in context
    for hidden in (corpus.AWS_SPLIT_ID[12:16], corpus.RSA_BODY[3][:10], corpus.JSON_PW[:5]):
        assert code_search(view, {"search_text": hidden}).text == "No matches found"


def test_read_many_reads_blobs_in_order_up_to_a_byte_budget(repo: GitRepo) -> None:
    repo.stage({"a b.txt": "x" * 10, "d/c.txt": "y" * 20, "e.txt": "z" * 5})
    view = redacting_view(repo)
    assert view.read_many(["a b.txt", "missing.txt", "d", "d/c.txt", "e.txt"], 100) == {
        "a b.txt": b"x" * 10, "d/c.txt": b"y" * 20, "e.txt": b"z" * 5}
    assert view.read_many(["a b.txt", "d/c.txt", "e.txt"], 29) == {"a b.txt": b"x" * 10}
    assert view.read_many(["bad\nname"], 100) == {}


def test_windows_bound_the_context_a_line_is_redacted_in(repo: GitRepo) -> None:
    lines = [f"x{i} = {i}" for i in range(300)] + corpus.RSA_PEM.split("\n")
    view = redacting_view(repo)
    body_line = 300 + 4  # the third body line, three lines under BEGIN
    assert view.redacted_rows(lines, [body_line], window_lines=3) == {
        body_line: "[REDACTED:private-key]"}
    assert view.redacted_rows(lines, [body_line], window_lines=2) == {
        body_line: corpus.RSA_BODY[2]}  # BEGIN is outside the window: the documented limit
    assert view.redacted_rows(lines, [body_line, 1, 0, 9999]) == {
        1: "x0 = 0", body_line: "[REDACTED:private-key]"}


def test_file_read_diff_redacts_a_secret_the_500_line_cut_goes_through(repo: GitRepo) -> None:
    from ocr_hook.tools.builtin.file_read_diff import file_read_diff

    filler = "".join(f"x{n} = {n}\n" for n in range(493))
    repo.stage({"keys.py": filler + SPLIT + f'PEM = """{corpus.RSA_PEM}"""\n'})
    lines = file_read_diff(redacting_view(repo), {"path_array": ["keys.py"]}).text.split("\n")
    # IS_TRUNCATED, the FILE line and 5 patch header lines, then the added lines: the cut is
    # after the split key's first piece, redacted as part of the whole value
    assert lines[499:503] == ["+x492 = 492", '+KEY_ID = ("[REDACTED:aws-access-key]"', "", (
        f"Note: Results truncated to 500 of {6 + 493 + 2 + len(corpus.RSA_PEM.splitlines())}"
        " diff lines. Request fewer paths per call, or use file_read for the rest of a file.")]


def test_code_search_cuts_a_long_line_after_redacting_it(repo: GitRepo) -> None:
    """A token across the 1000-character cut is replaced whole before the cut: the first
    characters of it never show (a cut first would leave a prefix no rule recognises)."""
    line = "x = f(" + "a, " * 324 + f'"{corpus.GH_CLASSIC}")'
    repo.stage({"long.py": line + "\n"})
    rows = code_search(redacting_view(repo), {"search_text": "x = f("}).text.split("\n")
    assert rows[2] == "1|" + ("x = f(" + "a, " * 324 + '"[REDACTED:github-token]")')[:1000] + (
        " … [line truncated]")
    assert corpus.GH_CLASSIC[:8] not in rows[2]
