"""The review notes' settings fingerprint (spec §3.4.1): every setting but a short allow-list,
and the rule texts. Real: the configuration models, the shipped templates and tools, the
built-in rules; no git."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from ocr_hook.config import Config
from ocr_hook.git.review_notes import NOTE_HEADER, parse_note
from ocr_hook.llm import Endpoint
from ocr_hook.pipeline import ReviewRequest
from ocr_hook.pipeline.review_notes import (
    NOT_IN_FINGERPRINT,
    fingerprint_settings,
    settings_fingerprint,
)

ENDPOINT = Endpoint("http://127.0.0.1:9/v1/chat/completions", "m")


def request(**sections: dict[str, Any]) -> ReviewRequest:
    cfg = Config()
    for name, values in sections.items():
        cfg = dataclasses.replace(cfg, **{name: dataclasses.replace(getattr(cfg, name),
                                                                    **values)})
    return ReviewRequest(repo=Path("."), config=cfg, environ={}, endpoint=ENDPOINT)


def all_keys() -> set[str]:
    cfg = Config()
    return {f"{s.name}.{f.name}" for s in dataclasses.fields(cfg)
            for f in dataclasses.fields(getattr(cfg, s.name))}


def test_every_key_but_the_allow_list_is_in_the_fingerprint() -> None:
    assert set(NOT_IN_FINGERPRINT) <= all_keys()  # no stale entry
    assert set(fingerprint_settings(request())) == all_keys() - set(NOT_IN_FINGERPRINT)
    for key in ("select.exclude", "select.include", "select.review_tests", "gate.fail_on",
                "gate.block_preexisting", "gate.mode", "rules.file", "rules.guidance",
                "security.allow_secrets", "review.max_group_tokens"):
        assert key not in NOT_IN_FINGERPRINT, key


@pytest.mark.parametrize(("section", "values"), [
    ("select", {"exclude": ["deploy.py"]}), ("select", {"review_tests": True}),
    ("gate", {"fail_on": "critical"}), ("gate", {"block_preexisting": True}),
    ("rules", {"file": "rules.md"}), ("llm", {"extra_body": {"temperature": 1}}),
])
def test_a_setting_that_changes_the_outcome_changes_the_fingerprint(
    section: str, values: dict[str, Any],
) -> None:
    assert settings_fingerprint(request(**{section: values})) != settings_fingerprint(request())


@pytest.mark.parametrize(("section", "values"), [
    ("llm", {"timeout_s": 5.0}), ("llm", {"api_key": "sk-other"}), ("review", {"concurrency": 1}),
    ("review", {"trust_notes": False}), ("cache", {"enabled": False}),
    ("budget", {"daily_usd": 1.0}), ("telemetry", {"enabled": True}),
    ("review", {"max_push_commits": 3}),
])
def test_an_allow_listed_setting_keeps_the_fingerprint(section: str, values: dict[str, Any]
                                                        ) -> None:
    assert settings_fingerprint(request(**{section: values})) == settings_fingerprint(request())


def test_the_rule_text_is_in_the_fingerprint() -> None:
    from ocr_hook.change.rules import RuleEntry, RuleSource

    base = request()
    one = base._replace(rule_sources=(RuleSource("repo", (RuleEntry(("**/*",), "A"),)),))
    two = base._replace(rule_sources=(RuleSource("repo", (RuleEntry(("**/*",), "B"),)),))
    assert len({settings_fingerprint(r) for r in (base, one, two)}) == 3
    assert settings_fingerprint(base._replace(endpoint=None)) == ""


def test_a_note_reads_in_any_line_order_and_not_with_two_values_of_a_field() -> None:
    text = (f"{NOTE_HEADER}\npatch-id: p\nchange: d\nverdict: pass\nfingerprint: f\n"
            "effort: low\nsession: s\n")
    note = parse_note("c", text)
    assert note is not None and (note.key, note.verdict, note.fingerprint) == (
        ("p", "d"), "pass", "f")
    # `git notes merge -s cat_sort_uniq`: lines sorted and made unique
    assert parse_note("c", "\n".join(sorted(text.splitlines()))) == note
    merged = sorted(set(text.splitlines()) | {"verdict: findings"})
    assert parse_note("c", "\n".join(merged)) is None
    assert parse_note("c", text.replace("v3", "v1")) is None  # `--stable` patch-ids
    assert parse_note("c", text.replace("v3", "v2")) is None  # no change digest
    assert parse_note("c", text.replace("change: d\n", "")) is None
