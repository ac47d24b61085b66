"""Anchoring (spec §8.1) on diffs produced by real git: each case commits an old version,
stages a new one, reads the staged snapshot's diff with ``target.load_diff`` and anchors a
quote with ``anchor.anchor_comment``. Real: git, the diff parser, blob reads. Nothing is faked.

The property test diffs random real-looking files with ``git diff --no-index``.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ocr_hook.comments.anchor import (
    anchor_comment,
    locate,
    plausibly_in_diff,
    quote_lines,
    split_change_quote,
)
from ocr_hook.diff.model import FileDiff
from ocr_hook.diff.patch import parse_hunks, split_patch_sections
from ocr_hook.findings import RawComment
from ocr_hook.vocabulary import Severity
from tests.support.gitrepo import GitRepo
from tests.support.samples import APP, GUARD, staged

GO = "package main\n\nfunc add(a int, b int) int {\n\treturn a + b\n}\n"

YAML = "steps:\n  - name: build\n    run: make\n"


def _far_apart() -> tuple[str, str]:
    body = [f"value_{i} = {i}" for i in range(1, 41)]
    new = list(body)
    new.insert(5, "first_added = compute_first()")
    new.insert(36, "second_added = compute_second()")
    return "\n".join(body) + "\n", "\n".join(new) + "\n"


FAR_OLD, FAR_NEW = _far_apart()

# id, old files, new files (None = deleted), claimed path, quote, line hint,
# expected (path, side, start_line, end_line, anchor, ambiguous)
Case = tuple[str, dict[str, str], dict[str, str | None], str, str, int | None,
             tuple[str, str, int, int, str, bool]]
CASES: list[Case] = [
    ("exact_added_lines", {"app.py": APP}, {"app.py": GUARD}, "app.py",
     '        if item.price < 0:\n            raise ValueError("negative price")', None,
     ("app.py", "new", 13, 14, "hunk_new", False)),
    ("snippet_reindented", {"app.py": APP}, {"app.py": GUARD}, "app.py",
     'if item.price < 0:\n  raise ValueError("negative price")', None,
     ("app.py", "new", 13, 14, "hunk_new", False)),
    ("quote_copied_with_diff_markers", {"app.py": APP}, {"app.py": GUARD}, "app.py",
     ' \tfor item in items:\n+        if item.price < 0:\n'
     '+            raise ValueError("negative price")',
     None, ("app.py", "new", 12, 14, "hunk_new", False)),
    ("quote_spanning_context_and_added_lines", {"app.py": APP}, {"app.py": GUARD}, "app.py",
     "result = 0\nfor item in items:\n    if item.price < 0:", None,
     ("app.py", "new", 11, 13, "hunk_new", False)),
    ("tabs_in_file_spaces_in_quote", {"main.go": GO},
     {"main.go": GO.replace("\treturn a + b\n",
                            "\tif a < 0 {\n\t\treturn 0\n\t}\n\treturn a + b\n")},
     "main.go", "    if a < 0 {\n        return 0\n    }", None,
     ("main.go", "new", 4, 6, "hunk_new", False)),
    ("inner_tab_vs_space_matches_loose_tier", {"main.go": GO},
     {"main.go": GO.replace("\treturn a + b\n", "\tsum :=\ta + b\n\treturn sum\n")},
     "main.go", "sum := a + b", None,
     ("main.go", "new", 4, 4, "loose", False)),
    ("crlf_file_lf_quote", {"win.py": "a = 1\r\nb = 2\r\n"},
     {"win.py": "a = 1\r\nb = 2\r\nc = a + b\r\nprint(c)\r\n"}, "win.py",
     "c = a + b\nprint(c)", None, ("win.py", "new", 3, 4, "hunk_new", False)),
    ("crlf_file_crlf_quote", {"win.py": "a = 1\r\nb = 2\r\n"},
     {"win.py": "a = 1\r\nb = 2\r\nc = a + b\r\nprint(c)\r\n"}, "win.py",
     "c = a + b\r\nprint(c)\r\n", None, ("win.py", "new", 3, 4, "hunk_new", False)),
    ("trailing_spaces_in_file", {"app.py": APP},
     {"app.py": APP.replace("    return result\n", "    result = round(result, 2)   \n"
                                                   "    return result\n")}, "app.py",
     "result = round(result, 2)", None, ("app.py", "new", 14, 14, "hunk_new", False)),
    ("trailing_spaces_in_quote", {"app.py": APP}, {"app.py": GUARD}, "app.py",
     "if item.price < 0:   \t", None, ("app.py", "new", 13, 13, "hunk_new", False)),
    ("quote_with_blank_lines", {"app.py": APP}, {"app.py": GUARD}, "app.py",
     '\n    if item.price < 0:\n\n\n        raise ValueError("negative price")\n\n', None,
     ("app.py", "new", 13, 14, "hunk_new", False)),
    ("quote_skipping_a_blank_line_of_the_file", {"app.py": APP},
     {"app.py": APP + "\n\ndef helper(x):\n\n    return x * 2\n"}, "app.py",
     "def helper(x):\n    return x * 2", None, ("app.py", "new", 21, 23, "hunk_new", False)),
    ("quote_of_a_deleted_line_is_old_side", {"app.py": APP},
     {"app.py": APP.replace("    return user.name\n", "    return user.display_name\n")},
     "app.py", "return user.name", None, ("app.py", "old", 18, 18, "hunk_old", False)),
    ("deleted_line_marker_quote_is_old_side", {"app.py": APP},
     {"app.py": APP.replace("    result = 0\n", "")}, "app.py", "-    result = 0", None,
     ("app.py", "old", 11, 11, "hunk_old", False)),
    ("identical_line_outside_the_hunk_is_ignored", {"app.py": APP},
     {"app.py": APP + "\n\ndef read_all(fh):\n    data = fh.read()\n    return data\n"},
     "app.py", "return data", None, ("app.py", "new", 23, 23, "hunk_new", False)),
    ("identical_context_and_added_line_prefers_added", {"app.py": APP},
     {"app.py": APP.replace("    return result\n", "    return result\n\n\ndef net(items):\n"
                                                   "    result = total(items)\n"
                                                   "    return result\n")}, "app.py",
     "return result", None, ("app.py", "new", 19, 19, "hunk_new", False)),
    ("two_identical_added_lines_hint_picks_the_nearer", {"app.py": APP},
     {"app.py": APP + "\n\ndef a():\n    return None\n\n\ndef b():\n    return None\n"},
     "app.py", "return None", 25, ("app.py", "new", 26, 26, "hunk_new", False)),
    ("two_identical_added_lines_other_hint", {"app.py": APP},
     {"app.py": APP + "\n\ndef a():\n    return None\n\n\ndef b():\n    return None\n"},
     "app.py", "return None", 20, ("app.py", "new", 22, 22, "hunk_new", False)),
    ("two_identical_added_lines_without_hint_are_ambiguous", {"app.py": APP},
     {"app.py": APP + "\n\ndef a():\n    return None\n\n\ndef b():\n    return None\n"},
     "app.py", "return None", None, ("app.py", "new", 22, 22, "hunk_new", True)),
    ("two_identical_added_lines_equidistant_hint_is_ambiguous", {"app.py": APP},
     {"app.py": APP + "\n\ndef a():\n    return None\n\n\ndef b():\n    return None\n"},
     "app.py", "return None", 24, ("app.py", "new", 22, 22, "hunk_new", True)),
    ("quote_from_another_changed_file_is_refiled",
     {"app.py": APP, "util.py": "def util():\n    pass\n"},
     {"app.py": GUARD, "util.py": "def util():\n    return os.environ['HOME']\n"}, "app.py",
     "return os.environ['HOME']", None, ("util.py", "new", 2, 2, "refiled", False)),
    ("quote_that_exists_nowhere_is_unanchored", {"app.py": APP}, {"app.py": GUARD}, "app.py",
     "if price is None:\n    return 0", None, ("app.py", "new", 0, 0, "none", False)),
    ("quote_spanning_two_unrelated_hunks_is_unanchored", {"v.py": FAR_OLD}, {"v.py": FAR_NEW},
     "v.py", "first_added = compute_first()\nsecond_added = compute_second()", None,
     ("v.py", "new", 0, 0, "none", False)),
    ("unchanged_code_outside_hunks_is_file_tier", {"app.py": APP}, {"app.py": GUARD}, "app.py",
     "def load(path):\n    with open(path) as fh:", None, ("app.py", "new", 4, 5, "file", False)),
    ("last_line_without_trailing_newline", {"app.py": APP},
     {"app.py": APP + "\n\ndef last():\n    return 42"}, "app.py", "return 42", None,
     ("app.py", "new", 22, 22, "hunk_new", False)),
    ("quote_including_no_newline_marker", {"app.py": APP},
     {"app.py": APP + "\n\ndef last():\n    return 42"}, "app.py",
     "def last():\n    return 42\n\\ No newline at end of file", None,
     ("app.py", "new", 21, 22, "hunk_new", False)),
    ("old_last_line_without_newline_gets_one", {"app.py": APP.rstrip("\n")},
     {"app.py": APP + "print(name_of)\n"}, "app.py", "return user.name\nprint(name_of)", None,
     ("app.py", "new", 18, 19, "hunk_new", False)),
    ("yaml_list_item_quoted_without_marker", {"ci.yml": YAML},
     {"ci.yml": YAML + "  - name: test\n    run: make test\n"}, "ci.yml",
     "- name: test\n  run: make test", None, ("ci.yml", "new", 4, 5, "hunk_new", False)),
    ("yaml_list_item_quoted_with_marker", {"ci.yml": YAML},
     {"ci.yml": YAML + "  - name: test\n    run: make test\n"}, "ci.yml",
     "+  - name: test\n+    run: make test", None, ("ci.yml", "new", 4, 5, "hunk_new", False)),
    ("quote_copied_with_the_prompt_line_numbers", {"app.py": APP}, {"app.py": GUARD}, "app.py",
     '12     for item in items:\n13 +        if item.price < 0:\n'
     '14 +            raise ValueError("negative price")', None,
     ("app.py", "new", 12, 14, "hunk_new", False)),
    ("quote_with_line_numbers_that_do_not_hold_that_code", {"app.py": APP}, {"app.py": GUARD},
     "app.py", "20 +        if item.price < 0:", None, ("app.py", "new", 0, 0, "none", False)),
    ("quote_of_a_whole_change_anchors_to_its_added_lines", {"app.py": APP},
     {"app.py": APP.replace("    return user.name\n", "    return user.nick\n")}, "app.py",
     "-    return user.name\n+    return user.nick", None,
     ("app.py", "new", 18, 18, "hunk_new", False)),
    ("renamed_file_claimed_by_old_path", {"old_name.py": APP},
     {"old_name.py": None, "new_name.py": GUARD}, "old_name.py", "if item.price < 0:", None,
     ("new_name.py", "new", 13, 13, "hunk_new", False)),
    ("unknown_path_with_unique_match_is_refiled", {"app.py": APP}, {"app.py": GUARD},
     "src/app.py", 'raise ValueError("negative price")', None,
     ("app.py", "new", 14, 14, "refiled", False)),
]


def comment(path: str, quote: str, hint: int | None = None,
            content: str = "Negative prices are rejected too late.") -> RawComment:
    return RawComment(path, content, quote, "", Severity.HIGH, "bug", hint)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_quote_anchors_to_exact_lines(repo: GitRepo, case: Case) -> None:
    _name, old, new, claimed, quote, hint, expected = case
    files, lines, reviewed = staged(repo, old, new)
    finding, warning = anchor_comment(comment(claimed, quote, hint), files, lines, reviewed)
    got = (finding.path, finding.side, finding.start_line, finding.end_line, finding.anchor,
           finding.ambiguous)
    assert got == expected
    assert bool(warning) == (expected[4] == "refiled")
    if expected[2]:
        # the anchored lines really hold the quoted code on that side
        src = new[expected[0]] if expected[1] == "new" else old[expected[0]]
        assert src is not None
        picked = src.replace("\r", "").split("\n")[expected[2] - 1 : expected[3]]
        split = split_change_quote(quote)
        if split is not None:  # a quote of a whole change: the marked lines of its side
            quote = split[0] if expected[1] == "new" else split[1]
        want = quote_lines(quote, loose=True)
        have = ["".join(ln.split()) for ln in picked if ln.strip()]
        assert len(have) == len(want)
        # quote forms: literal, one diff marker, or the prompt's number column + marker
        assert all(h in (w, w[1:], re.sub(r"^\d+\+?", "", w))
                   for h, w in zip(have, want, strict=True))


def test_refiling_needs_a_unique_match(repo: GitRepo) -> None:
    same = "def util():\n    return os.environ['HOME']\n"
    files, lines, reviewed = staged(
        repo, {"a.py": "x = 1\n", "b.py": "y = 2\n", "c.py": "z = 3\n"},
        {"a.py": "x = 1\nw = 4\n", "b.py": same, "c.py": same})
    finding, warning = anchor_comment(comment("a.py", "return os.environ['HOME']"), files, lines,
                                      reviewed)
    assert (finding.path, finding.start_line, finding.anchor, warning) == ("a.py", 0, "none", "")


def test_refiling_only_considers_reviewed_files(repo: GitRepo) -> None:
    files, lines, _ = staged(repo, {"a.py": "x = 1\n", "b.py": "y = 2\n"},
                             {"a.py": "x = 1\nw = 4\n", "b.py": "y = 2\nsecret = load()\n"})
    finding, _ = anchor_comment(comment("a.py", "secret = load()"), files, lines, ["a.py"])
    assert (finding.path, finding.anchor) == ("a.py", "none")


def test_old_side_numbers_differ_from_new_side(repo: GitRepo) -> None:
    """A deleted line far down a file that grew: the old number is reported, never the new."""
    old = "".join(f"line_{i} = {i}\n" for i in range(1, 31))
    new = "header = 0\n" * 5 + old.replace("line_20 = 20\n", "")
    files, lines, reviewed = staged(repo, {"n.py": old}, {"n.py": new})
    finding, _ = anchor_comment(comment("n.py", "line_20 = 20"), files, lines, reviewed)
    assert (finding.side, finding.start_line, finding.end_line, finding.anchor) == (
        "old", 20, 20, "hunk_old")


def test_comment_on_a_deleted_file_anchors_to_old_side(repo: GitRepo) -> None:
    files, lines, _ = staged(repo, {"gone.py": APP, "keep.py": "k = 1\n"},
                             {"gone.py": None, "keep.py": "k = 2\n"})
    finding, _ = anchor_comment(comment("gone.py", "return user.name"), files, lines, ["keep.py"])
    assert (finding.path, finding.side, finding.start_line, finding.anchor) == (
        "gone.py", "old", 18, "hunk_old")


def test_finding_id_ignores_line_numbers_and_indentation(repo: GitRepo) -> None:
    files, lines, reviewed = staged(repo, {"app.py": APP}, {"app.py": GUARD})
    a, _ = anchor_comment(comment("app.py", "    if item.price < 0:"), files, lines, reviewed)
    moved = {"app.py": "# header\n" * 7 + GUARD}
    files2, lines2, reviewed2 = staged(repo, {"app.py": GUARD}, moved)
    b, _ = anchor_comment(comment("app.py", "+if item.price < 0:"), files2, lines2, reviewed2)
    assert a.start_line == 13 and b.start_line == 20 and b.anchor == "file"
    assert a.id == b.id


def test_plausibility_gate_of_relocation(repo: GitRepo) -> None:
    files, _, _ = staged(repo, {"app.py": APP}, {"app.py": GUARD})
    fd = files["app.py"]
    # a partial line of the diff, and a paraphrase around a real line
    assert plausibly_in_diff(fd, "item.price < 0")
    assert plausibly_in_diff(fd, 'if item.price <= 0:\n    raise ValueError("negative price")')
    # nothing of this file's diff
    assert not plausibly_in_diff(fd, "def unrelated_function(arg):\n    return arg")
    assert not plausibly_in_diff(fd, "x = 1")  # too short to say


# ---- property test on random real-looking diffs ------------------------------------------------

VOCAB = [
    "import os", "import sys", "def run(args):", "def main():", "class Handler:",
    "return None", "return result", "result = []", "for item in items:", "if item is None:",
    "continue", "break", "raise ValueError(item)", "result.append(item)", "x = x + 1",
    "total += item.price", "with open(path) as fh:", "data = fh.read()", "try:", "except OSError:",
    "pass", "self.count = 0", "# TODO: handle errors", '"""Docstring."""', "}", "{", "",
    "", "", "log.debug('value %s', value)", "if not data:", "else:",
]


def _make_line(rng: random.Random) -> str:
    text = rng.choice(VOCAB)
    if not text:
        return ""
    if rng.random() < 0.3:
        text = f"{text}  # {rng.randint(0, 99)}"
    return " " * rng.choice((0, 4, 8, 12)) + text


def _edit(rng: random.Random, old: list[str]) -> list[str]:
    new = list(old)
    for _ in range(rng.randint(1, 5)):
        op = rng.random()
        pos = rng.randint(0, len(new))
        if op < 0.5:
            new[pos:pos] = [_make_line(rng) for _ in range(rng.randint(1, 4))]
        elif op < 0.75 and new:
            del new[min(pos, len(new) - 1): min(pos, len(new) - 1) + rng.randint(1, 3)]
        elif new:
            p = min(pos, len(new) - 1)
            new[p] = _make_line(rng)
    return new


def git_diff_no_index(tmp: Path, old: str, new: str) -> FileDiff:
    (tmp / "a").mkdir(exist_ok=True)
    (tmp / "b").mkdir(exist_ok=True)
    (tmp / "a" / "f.py").write_text(old, encoding="utf-8", newline="")
    (tmp / "b" / "f.py").write_text(new, encoding="utf-8", newline="")
    p = subprocess.run(
        ["git", "-c", "core.quotePath=false", "diff", "--no-index", "--no-color", "--no-ext-diff",
         "-U3", "a/f.py", "b/f.py"],
        cwd=tmp, capture_output=True, env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}, check=False)
    assert p.returncode in (0, 1), p.stderr
    sections = split_patch_sections(p.stdout)
    hunks = parse_hunks(sections[0])[0] if sections else ()
    return FileDiff("modified", "f.py", "f.py", hunks=hunks)


def _runs(fd: FileDiff, new_lines: Sequence[str]) -> list[tuple[int, int]]:
    """Every (start, end) run of consecutive non-blank new-side lines inside one hunk."""
    out = []
    for h in fd.hunks:
        nums = [ln.new_line for ln in h.lines if ln.new_line is not None]
        for i, s in enumerate(nums):
            for e in nums[i:]:
                if e - s != nums.index(e) - i:
                    break
                if any(not new_lines[n - 1].strip() for n in range(s, e + 1)):
                    break
                out.append((s, e))
    return out


def _occurrences(rows: Sequence[str], quote: Sequence[str]) -> int:
    k = len(quote)
    return sum(1 for i in range(len(rows) - k + 1) if list(rows[i:i + k]) == list(quote))


def check_unique_runs(tmp: Path, seed: int, reindent: bool) -> int:
    """Diff a random file against a random edit of it; anchor every run of consecutive
    non-blank new-side lines of a hunk that occurs once in the new file (blank lines ignored,
    as anchoring ignores them) and assert it lands on exactly its lines. Returns the number
    of runs checked."""
    rng = random.Random(seed)
    old = [_make_line(rng) for _ in range(rng.randint(5, 40))]
    new = _edit(rng, old)
    new_text = "\n".join(new) + ("\n" if rng.random() < 0.8 else "")
    fd = git_diff_no_index(tmp, "\n".join(old) + "\n", new_text)
    new = new_text.split("\n")
    file_rows = [ln.strip() for ln in new if ln.strip()]
    checked = 0
    for s, e in _runs(fd, new):
        quote_src = new[s - 1 : e]
        if _occurrences(file_rows, [ln.strip() for ln in quote_src]) != 1:
            continue
        if reindent:
            quote_src = ["  " * rng.randint(0, 3) + ln.strip() for ln in quote_src]
        a = locate(fd, "\n".join(quote_src), new, hint=None)
        assert a is not None, (s, e, quote_src)
        assert (a.side, a.start_line, a.end_line, a.method, a.ambiguous) == (
            "new", s, e, "hunk_new", False), (quote_src, fd.hunks)
        checked += 1
    return checked


@settings(max_examples=int(os.environ.get("OCR_HOOK_TEST_EXAMPLES", "60")), deadline=None,
          derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), reindent=st.booleans())
def test_unique_run_of_new_side_lines_anchors_to_exactly_its_lines(
    tmp_path: Path, seed: int, reindent: bool
) -> None:
    check_unique_runs(tmp_path, seed, reindent)


def test_random_diffs_do_produce_unique_runs(tmp_path: Path) -> None:
    """The generator is not degenerate: the property above checks many runs."""
    assert sum(check_unique_runs(tmp_path, seed, False) for seed in range(10)) >= 30


TAX = "def price(price, qty, tax):\n    return price * qty\n"
TAX_NEW = ("def price(price, qty, tax):\n    base = price * qty\n"
           "    return base + tax / 0\n")


@pytest.mark.parametrize(
    ("quote", "hint", "expected"),
    [
        ("tax / 0", None, ("new", 3, 3, "loose", False)),       # part of an added line
        ("tax/0", 3, ("new", 3, 3, "loose", False)),            # spacing differs
        ("price * qty", None, ("new", 2, 2, "loose", False)),   # added line beats deleted one
        ("x = 1", None, ("new", 0, 0, "none", False)),          # no word-boundary match anywhere
        ("ax / 0", None, ("new", 0, 0, "none", False)),         # starts inside a word
        ("tax", None, ("new", 0, 0, "none", False)),            # one token is not telling
    ],
)
def test_quote_of_part_of_a_line_anchors_to_that_line_only(
    repo: GitRepo, quote: str, hint: int | None, expected: tuple[str, int, int, str, bool],
) -> None:
    files, lines, reviewed = staged(repo, {"t.py": TAX}, {"t.py": TAX_NEW})
    f, _ = anchor_comment(comment("t.py", quote, hint), files, lines, reviewed)
    assert (f.side, f.start_line, f.end_line, f.anchor, f.ambiguous) == expected


def test_fragment_on_two_added_lines_is_ambiguous_unless_hinted(repo: GitRepo) -> None:
    new = "a = 1\nx = total / count\ny = 2\nz = total / count\n"
    files, lines, reviewed = staged(repo, {"m.py": "a = 1\n"}, {"m.py": new})
    f, _ = anchor_comment(comment("m.py", "total / count"), files, lines, reviewed)
    assert (f.start_line, f.anchor, f.ambiguous) == (2, "loose", True)
    f, _ = anchor_comment(comment("m.py", "total / count", hint=4), files, lines, reviewed)
    assert (f.start_line, f.anchor, f.ambiguous) == (4, "loose", False)


SEPARATED = ("head = 0\n"
             "a = 1\u2028b = 2\n"
             "c = 3\x85d = 4\r\n"
             'e = "\\r\\n"\rf = 5\n'
             "g = 6\x0bh = 7\x0ci = 8\n")


@pytest.mark.parametrize(("quote", "expected"), [
    ("a = 1\\u2028b = 2", (2, 2, "hunk_new")),              # as the prompt spells it
    ("a = 1\u2028b = 2", (2, 2, "hunk_new")),               # raw, as a tool result showed it
    ("c = 3\\u0085d = 4\ne = \"\\r\\n\"\\rf = 5", (3, 4, "hunk_new")),
    ("3 +c = 3\\u0085d = 4\n4 +e = \"\\r\\n\"\\rf = 5", (3, 4, "hunk_new")),  # numbered
    ("g = 6\\u000bh = 7\\u000ci = 8", (5, 5, "hunk_new")),
    ("h = 7\\u000ci", (5, 5, "loose")),                     # part of the line
])
def test_a_quote_with_a_line_break_inside_a_line_anchors_in_either_spelling(
    repo: GitRepo, quote: str, expected: tuple[int, int, str],
) -> None:
    files, lines, reviewed = staged(repo, {"s.py": "head = 0\n"}, {"s.py": SEPARATED})
    f, _ = anchor_comment(comment("s.py", quote), files, lines, reviewed)
    assert (f.start_line, f.end_line, f.anchor) == expected
