"""No oracle (spec §14.2): a model that probes ``code_search`` and ``file_find`` with guesses of
the characters a redaction hides learns nothing. For every probe family of the attack (the
binary-search probe ``GH_TOKEN = "ghp_.{7}[a-m]``, lookarounds and ``\\K`` next to the value, literal text
over its edge, a value written over several lines, globs and name queries over a secret in a
path, the per-file count cap) and several positions, the answer is the same text whether the
guess of the hidden character is right or wrong, and no answer holds eight characters of a
hidden value. What the redaction keeps is still found.

Real: a git repository with the secrets in a committed, unchanged file, the staged snapshot,
``git grep``/``ls-tree``/``cat-file``, the run's redactor and the rule file. Fake: the secrets
(never issued) and the model (the probes are literal argument dicts).
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from typing import Any

import pytest

from ocr_hook.agent import Redactor
from ocr_hook.git import target
from ocr_hook.tools.builtin.code_search import PERL_NOTE, code_search
from ocr_hook.tools.builtin.file_find import file_find
from ocr_hook.tools.snapshot import SnapshotView
from tests.support import secret_corpus as corpus
from tests.support.gitrepo import GitRepo

ALNUM = corpus.ALNUM
TOKEN = corpus.GH_CLASSIC  # ghp_ + 36
NAMED = corpus.GH_APP  # ghs_ + 36, in a file name
SPLIT = corpus.AWS_SPLIT_ID  # AKIA + 16, written as two string literals
BODY = corpus.RSA_BODY[1]  # a PEM body line
NO_MATCH_P = f"No matches found\n{PERL_NOTE}"
DEPLOY = "\n".join([
    "import os",
    "",
    f'GH_TOKEN = "{TOKEN}"',
    'REGION = os.environ.get("REGION", "eu-west-1")',
    f'KEY_ID = ("{SPLIT[:10]}"',
    f'          "{SPLIT[10:]}")',
    f'SIGNING = """{corpus.RSA_PEM}"""',
    "",
])
OK = '{"ok": 1}'  # the content of the file with a secret in its name
SLOW = '(?:(?:\\w+)+)+[^"\\w]'  # backtracks past PCRE's match limit on a long word
HIDDEN = [TOKEN[4:], NAMED[4:], SPLIT[10:], *corpus.RSA_BODY]


def _tokens(n: int) -> list[str]:
    rng = random.Random(26)
    return ["ghp_" + "".join(rng.choice(ALNUM) for _ in range(36)) for _ in range(n)]


MANY = _tokens(30)  # the first 30 lines of a file with 101 plain hits under them


@pytest.fixture(scope="module")
def view(tmp_path_factory: pytest.TempPathFactory) -> SnapshotView:
    """config/deploy.py and keys/<NAMED>.json committed (unchanged); app.py staged."""
    from tests.support.gitrepo import git_env

    home = tmp_path_factory.mktemp("home")
    repo = GitRepo(tmp_path_factory.mktemp("repo"), git_env(home))
    repo.commit({
        "config/deploy.py": DEPLOY,
        f"keys/{NAMED}.json": OK + "\n",
        ".env": f'DEPLOY_TOKEN = "{MANY[1]}"\n',
        "slow.txt": f'"{"a" * 40}"\n',  # a line git's PCRE gives up on (SLOW)
        "fixtures/few.py": "".join(f'T = "{t}"\n' for t in MANY[2:5]) + "x = 1\n",
        "fixtures/tokens.py": "".join(f'T{i} = "{t}"\n' for i, t in enumerate(MANY))
        + "hit = 1\n" * 101,
    }, "init")
    repo.stage({"app.py": "x = 1\n"})
    t = target.staged_snapshot(repo.path, dict(os.environ, **repo.env))
    return SnapshotView(repo.path, t.head, target.load_diff(repo.path, t), Redactor())


def search(view: SnapshotView, text: str, perl: bool = False, **more: Any) -> str:
    return code_search(view, {"search_text": text, "use_perl_regexp": perl, **more}).text


def in_deploy(view: SnapshotView, text: str, perl: bool = False) -> str:
    """A case-sensitive search of config/deploy.py: a short probe finds no visible text of
    other files, so a right and a wrong guess can be told apart only by the hidden text."""
    return search(view, text, perl, case_sensitive=True, file_patterns=["config/deploy.py"])


def guesses(value: str, i: int) -> list[str]:
    """The right character at ``value[i]`` and two wrong ones."""
    right = value[i]
    at = ALNUM.index(right)
    return [right, ALNUM[(at + 1) % 62], ALNUM[(at + 31) % 62]]


# Each family: (value the guesses are about, positions, probe(prefix of the value, guess) ->
# the tool's answer). ``prefix`` is what the attacker knows already (the true characters
# before the guessed one).
Probe = Callable[[SnapshotView, str, str], str]
FAMILIES: dict[str, tuple[str, tuple[int, ...], Probe]] = {
    "binary search: regexp over the value": (TOKEN, (4, 11, 39), lambda v, p, c: search(
        v, f'GH_TOKEN = "ghp_.{{{len(p) - 4}}}[{c}]', True)),
    "regexp range": (TOKEN, (4, 20), lambda v, p, c: search(
        v, f'GH_TOKEN = "ghp_.{{{len(p) - 4}}}[{c}-z]', True)),
    "lookahead, match before the value": (TOKEN, (4, 30), lambda v, p, c: search(
        v, f'GH_TOKEN = "(?=ghp_.{{{len(p) - 4}}}{c})', True)),
    "negative lookahead": (TOKEN, (4, 30), lambda v, p, c: search(
        v, f'GH_TOKEN = "(?!ghp_.{{{len(p) - 4}}}{c})', True)),
    "lookbehind, match after the value": (TOKEN, (10, 39), lambda v, p, c: search(
        v, f'(?<={p[-4:]}{c})\\w*"$', True)),
    "\\K keeps only what follows": (TOKEN, (4, 25), lambda v, p, c: search(
        v, f'ghp_.{{{len(p) - 4}}}{c}\\K', True)),
    "literal prefix of the value": (TOKEN, (4, 12, 39), lambda v, p, c: search(
        v, f'GH_TOKEN = "{p}{c}')),
    "literal, any case": (TOKEN, (4, 12), lambda v, p, c: search(v, (p + c).upper())),
    "literal over the value's end": (TOKEN, (39, 33), lambda v, p, c: search(
        v, c + TOKEN[len(p) + 1:] + '"')),
    "second piece of a split key": (SPLIT, (10, 15), lambda v, p, c: in_deploy(
        v, f'  "{p[10:]}{c}')),
    "second piece, regexp": (SPLIT, (10, 15), lambda v, p, c: search(
        v, f'^\\s+"{p[10:]}{c}', True)),
    "PEM body line, literal": (BODY, (3, 9), lambda v, p, c: in_deploy(v, p + c)),
    "PEM body line, regexp": (BODY, (0, 9), lambda v, p, c: search(v, f"^{p}{c}", True)),
    "file_find over a name": (NAMED, (4, 17), lambda v, p, c: file_find(
        v, {"query_name": p + c}).text.replace(p + c, "<query>")),  # it names the query
    "glob over a name": (NAMED, (4, 17), lambda v, p, c: search(
        v, OK, file_patterns=[f"keys/{p}{c}*"])),
    "exclude glob over a name": (NAMED, (4, 17), lambda v, p, c: search(
        v, OK, file_patterns=[f":(exclude)keys/{p}{c}*"])),
    "a regexp git gives up on only after a right guess": (TOKEN, (4, 20), lambda v, p, c: search(
        v, f'GH_TOKEN = "ghp_.{{{len(p) - 4}}}{c}{SLOW}', True)),
    "the same in a secret path": (MANY[1], (4, 20), lambda v, p, c: search(
        v, f'DEPLOY_TOKEN = "ghp_.{{{len(p) - 4}}}{c}{SLOW}', True)),
    "the same, three secret lines of a file fail": (MANY[2], (4, 9), lambda v, p, c: search(
        v, f'"(?:{p}{c}|ghp_)' + SLOW + "|^x = 1", True, file_patterns=["fixtures/few.py"])),
    "count cap of a file with many secrets": (MANY[0], (4, 5), lambda v, p, c: search(
        v, f"hit = 1|ghp_.{{{len(p) - 4}}}[{c}-z]", True)),
}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_probe_answers_the_same_for_a_right_and_a_wrong_guess(
        view: SnapshotView, family: str) -> None:
    value, positions, probe = FAMILIES[family]
    for i in positions:
        answers = {c: probe(view, value[:i], c) for c in guesses(value, i)}
        assert len(set(answers.values())) == 1, (family, i, answers)
        for answer in answers.values():
            leaked = [h[j:j + 8] for h in HIDDEN for j in range(len(h) - 7)
                      if h[j:j + 8] in answer]
            assert leaked == [], (family, i)


def test_a_binary_search_attack_recovers_nothing(view: SnapshotView) -> None:
    """Binary search over the 62 characters at each of the 36 positions (216 probes): every
    answer is the same "no match", so the guess is the same whatever the token."""
    answers = set()
    guess = ""
    for i in range(36):
        lo, hi = 0, 62
        while hi - lo > 1:
            mid = (lo + hi) // 2
            answer = search(view, f'GH_TOKEN = "ghp_.{{{i}}}[{ALNUM[lo:mid]}]', True)
            answers.add(answer)
            lo, hi = (lo, mid) if "GH_TOKEN" in answer else (mid, hi)
        guess += ALNUM[lo]
    assert answers == {NO_MATCH_P}
    assert guess == ALNUM[-1] * 36


def test_what_the_redaction_keeps_is_still_found(view: SnapshotView) -> None:
    assert search(view, 'GH_TOKEN = "').splitlines() == [
        "File: config/deploy.py", "Match lines: 1", "2-",
        '3|GH_TOKEN = "[REDACTED:github-token]"',
        '4-REGION = os.environ.get("REGION", "eu-west-1")']
    assert search(view, "gh_token").splitlines()[3] == '3|GH_TOKEN = "[REDACTED:github-token]"'
    assert search(view, '"[REDACTED:github-token]"') == "No matches found"  # git greps raw
    assert search(view, r"REGION = \w+\.environ", True).splitlines()[3] == (
        '4|REGION = os.environ.get("REGION", "eu-west-1")')
    assert search(view, r'GH_TOKEN = "\w+"', True) == NO_MATCH_P
    assert search(view, 'KEY_ID = ("').splitlines()[2:5] == [
        "4-REGION = os.environ.get(\"REGION\", \"eu-west-1\")",
        '5|KEY_ID = ("[REDACTED:aws-access-key]"', '6-          "[REDACTED:aws-access-key]")']
    assert file_find(view, {"query_name": ".json"}).text == (
        "keys/[REDACTED:github-token].json")
    assert file_find(view, {"query_name": "REDACTED:github"}).text == (
        "keys/[REDACTED:github-token].json")  # a name query matches the name as shown
    assert search(view, OK) == 'File: keys/[REDACTED:github-token].json\nMatch lines: 1\n1|' + OK
    assert search(view, OK, file_patterns=["keys/**"]) == "No matches found"


def test_a_file_with_many_secret_lines_keeps_its_count_and_note(view: SnapshotView) -> None:
    """30 secret lines match the pattern before 101 plain ones: git stops at 121 records, of
    which 91 are kept; the file is searched again, so the 100-row cap and its note are the
    same as for a pattern none of the secret lines matches."""
    every = search(view, "hit = 1|ghp_", True, file_patterns=["fixtures/*"])
    none = search(view, "hit = 1|ghp_NONE", True, file_patterns=["fixtures/*"])
    assert every == none
    rows = every.split("\n")
    assert rows[:3] == ["File: fixtures/tokens.py", "Match lines: 100", "31|hit = 1"]
    assert rows[102].startswith("Note: more than 100 matches in this file")


def test_a_regexp_git_gives_up_on_a_shown_line_is_the_error_it_is(view: SnapshotView) -> None:
    """git's PCRE stops at its match limit on slow.txt's long word, a line shown to the model:
    the search is that error; left out by file_patterns, the search answers."""
    error = ("Error: invalid search: pcre2_jit_match failed with error code -47: match limit"
             " exceeded")
    assert search(view, '^"a' + SLOW, True) == error
    assert search(view, '^"a' + SLOW, True, file_patterns=[":!slow.txt"]) == NO_MATCH_P
    assert search(view, '^"a' + SLOW + "|hit = 1", True) == error

