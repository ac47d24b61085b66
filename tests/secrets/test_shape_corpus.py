"""Secret detection by shape family on ``tests/secrets/shape_corpus.py``: realistic fake
credentials, each in the kind of file it lives in (URL passwords with reserved characters,
tokens passed to SDK constructors, literals joined on one line, tokens with dots inside,
Authorization values, CLI password flags, npm credentials, AGE / OpenSSH / PGP / PKCS#8 / PuTTY
keys, ...), and realistic text that is no secret (hashes, UUIDs, placeholders, code).

Real: the shipped rule file and the redaction every text sent to a model goes through. Fake:
the credentials (derived from seeds when the corpus is imported, never issued).
"""

from __future__ import annotations

from unittest import mock

import pytest

from ocr_hook.secrets import redaction
from ocr_hook.secrets.patterns import rules
from ocr_hook.secrets.redaction import find_secrets, redact
from tests.secrets.shape_corpus import CLEAN, SHAPES, Clean, Shape, shapes_by_path

# The twelve shapes that reached the model in issue 26's attack (and one more: the URL password
# with "/" as well as "@"), each pinned by name.
ISSUE_SHAPES = (
    "url-at-and-slash", "url-email-user", "sdk-openai-positional", "join-plus-java",
    "join-python-join", "join-js-template-literal", "vault-hvs-env", "curl-basic",
    "curl-bearer", "mysqldump-p-quoted", "mapbox-sk-gradle", "npmrc-uuid", "age-key-file",
)


def test_the_corpus_has_80_fakes_in_40_shapes_and_30_non_secrets() -> None:
    assert len(SHAPES) >= 80
    assert len({s.name for s in SHAPES}) == len(SHAPES)
    assert len({s.shape for s in SHAPES}) >= 40
    assert len({s.path.rsplit(".", 1)[-1] for s in SHAPES}) >= 25  # file types, roughly
    assert len(CLEAN) >= 30
    assert len({c.name for c in CLEAN}) == len(CLEAN)
    assert set(ISSUE_SHAPES) <= {s.name for s in SHAPES}


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
