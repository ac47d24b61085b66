"""Tests for ocr_hook.secrets.patterns: the rule data, its pre-filters and compiling on first need.

The real rule file is used throughout. The pre-filters must never change a result: every text is
also scanned with the same rules stripped of their keywords and assignment flag (each regex run
over the whole text), and both scans must agree exactly.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ocr_hook.secrets import redaction
from ocr_hook.secrets.patterns import Rule, _assigned, parse_rules, rules
from ocr_hook.secrets.redaction import find_secrets, redact
from tests.support.secret_corpus import CASES, corpus_files

_FULL_SCAN = tuple(r._replace(keywords=(), assignment=False) for r in rules())


def _without_prefilters(fn, *args):  # type: ignore[no-untyped-def]
    with mock.patch.object(redaction, "rules", lambda: _FULL_SCAN):
        return fn(*args)


@pytest.mark.parametrize(("lowered", "keyword", "expected"), [
    ('password = "x"', "password", True),
    ("password: x", "password", True),
    ('"token":\n"abc"', "token", True),
    ("x = password", "password", False),  # the operator comes before the keyword
    ("password\n= x", "password", False),  # ... or on another line
    ("passwords or keys (use `secrets`)", "passw", False),
    ("a = 1\nkeys and tokens\nkey=2", "key", True),  # a later occurrence on another line
    ("key key key", "key", False),
    ("", "key", False),
])
def test_assigned_needs_an_operator_after_the_keyword_on_its_line(
        lowered: str, keyword: str, expected: bool) -> None:
    assert _assigned(lowered, keyword) is expected


def test_the_shipped_rules_compile_and_their_flags_are_where_expected() -> None:
    shipped = rules()
    assert len(shipped) == 75
    for rule in shipped:
        assert rule.pattern.groups >= rule.group
    assert sorted({r.type for r in shipped if r.assignment}) == [
        "aws-secret-key", "azure-shared-access-key", "azure-storage-key", "gcp-service-account-key",
        "generic-secret", "npm-token", "password", "secret-env-assignment", "url-password"]
    assert [r.type for r in shipped if not r.keywords] == ["discord-bot-token"]


def test_parsing_compiles_nothing_and_a_bad_regex_fails_on_first_use() -> None:
    parsed = parse_rules(json.dumps([
        {"type": "ok", "regex": "a(b)", "group": 1, "keywords": ["ab"]},
        {"type": "bad-regex", "regex": "(", "group": 0},
        {"type": "no-group", "regex": "ab", "group": 1},
    ]))
    assert [r.is_compiled() for r in parsed] == [False, False, False]
    assert parsed[0].pattern.pattern == "a(b)" and parsed[0].is_compiled()
    with pytest.raises(ValueError, match=r"^secret_patterns\.json\[1\] \(bad-regex\): bad regex"):
        _ = parsed[1].pattern
    with pytest.raises(ValueError, match=r"\[2\] \(no-group\): group 1 needs a capturing group"):
        _ = parsed[2].pattern


@pytest.mark.parametrize(("entry", "message"), [
    ({"type": "x", "regex": "a", "keywords": ["a"], "assignment": "yes"},
     r"\[0\] \(x\): assignment must be true or false"),
    ({"type": "x", "regex": "a", "assignment": True}, r"true needs keywords"),
    ({"type": "X", "regex": "a"}, r"\[0\]: type must be a lower-case-dashed name"),
    ({"type": "a--b", "regex": "a"}, r"type must be a lower-case-dashed name"),
    ({"type": "x", "regex": "a", "group": 2}, r"\[0\] \(x\): group must be 0, or 1"),
])
def test_malformed_entries_are_rejected(entry: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_rules(json.dumps([entry]))


def test_may_match_without_keywords_is_always_true() -> None:
    rule = Rule("w", "t", "x", 0, None, ())
    assert rule.may_match("") and not rule.is_compiled()


def test_the_corpus_gives_the_same_hits_and_redaction_without_prefilters() -> None:
    for text in [*corpus_files().values(), *(c.text for c in CASES)]:
        assert find_secrets(text) == _without_prefilters(find_secrets, text)
        assert redact(text) == _without_prefilters(redact, text)


_FRAGMENTS = st.sampled_from([
    "password", "Passphrase", "pwd", "token", "_KEY", "API_KEY", "secret", "auth",
    "credentials", "aws_secret_access_key", "AccountKey", "SharedAccessKey", '"private_key"',
    " = ", ": ", "=", ":", "=>", ":=", '"', "'", "\n", "\r\n", "+", "export ", " ", "#", ";",
    "Xk9#mP2$vL8@qR4!z", "Zq8Lm3Np5Rt7Vw9Yb2Cd4Fg6Hj8Kl0Mn2Pq4Rs6T", "T7r!abc9", "(", ")",
    "passwords or keys", "\u0130",
    # the shape families: headers, CLI flags, SDK calls, npmrc, URLs, joins, XML
    "Authorization: Bearer ", "Basic ", "curl -u ", "mysql -p", "redis-cli -a ", "--password ",
    "PGPASSWORD=", "Client(\"", "OpenAI(\"", "setApiKey(\"", "//r.org/:_authToken=", "://u:",
    "@db", "/", "hvs.", "sk.eyJ", "`${\"", "\" + \"", "\"\".join([\"", "<password>", "</password>",
    "key=\"ApiKey\" value=\"", "?password=", "AGE-SECRET-KEY-1", "Private-Lines: 2\n",
])


@settings(max_examples=200, deadline=None)
@given(text=st.lists(st.one_of(st.text(max_size=10), _FRAGMENTS), max_size=40).map("".join))
def test_prefilters_never_change_hits_or_redaction(text: str) -> None:
    assert find_secrets(text) == _without_prefilters(find_secrets, text)
    assert redact(text) == _without_prefilters(redact, text)


def test_a_review_prompt_compiles_no_assignment_rule() -> None:
    """In a fresh interpreter: prose about secrets (the review's own prompts) compiles only the
    rules whose keywords it holds and that need no assignment; an assignment compiles those."""
    code = textwrap.dedent("""
        from ocr_hook.secrets.redaction import redact
        from ocr_hook.secrets.patterns import rules
        def compiled():
            return sorted({r.type for r in rules() if r.is_compiled()})
        redact("def f(x):\\n    return x + 1\\n")
        print(compiled())
        redact("- Credentials, tokens, passwords or private keys written into the source.\\n"
               "- `random` for tokens or keys (use `secrets`); MD5 for passwords.\\n")
        print(compiled())
        out = redact('db_password = "Xk9#mP2$vL8@qR4!z"\\n')
        print(out[1], compiled())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out == [
        "['discord-bot-token']",
        "['discord-bot-token']",
        "1 ['discord-bot-token', 'generic-secret', 'npm-token', 'password',"
        " 'secret-env-assignment', 'url-password']",
    ]
