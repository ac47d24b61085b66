"""The cache keys cover every setting that can change a request (spec §10): each key of the
configuration model (``config.models.Config``, read field by field, so a new setting is
checked the day it is added) and each field of the resolved ``Endpoint`` is changed in turn,
and the run, group and grouping keys must change with it, unless ``store.NOT_IN_KEY`` (or
``ENDPOINT_NOT_IN_KEY``) lists it with the reason it cannot change a stored result; then the
keys must stay the same. Real: the configuration classes, endpoint resolution, the shipped
templates and tool definitions the keys digest; nothing is faked."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from ocr_hook.config.endpoint import resolve_endpoint
from ocr_hook.config.models import SECTIONS, Config, all_keys
from ocr_hook.llm.types import Endpoint
from ocr_hook.pipeline.cache import store

BASE = Config(llm=dataclasses.replace(Config().llm, base_url="http://127.0.0.1:9/v1",
                                      model="m", api_key="k"))
# A changed value of the keys whose type alone does not give a valid other one.
OTHER: dict[str, Any] = {
    "llm.provider": "openai",
    "llm.base_url": "http://127.0.0.2:9/v1",
    "llm.protocol": "anthropic",
    "llm.output_tokens_field": "max_tokens",
    "review.effort": "high",
    "gate.mode": "advisory",
    "gate.fail_on": "critical",
    "gate.on_error": "block",
}
# What a request is made of: these must never be allowed out of the keys.
REQUEST_SHAPING = ("llm.base_url", "llm.model", "llm.protocol", "llm.provider",
                   "llm.extra_headers", "llm.extra_body", "llm.api_version",
                   "llm.anthropic_version", "llm.max_output_tokens", "llm.output_tokens_field",
                   "llm.context_tokens", "review.language", "review.filter",
                   "review.max_tool_rounds", "tools.file", "mcp.servers",
                   "security.detect_secrets")


def other_value(key: str, value: Any) -> Any:
    """A different valid value for ``key`` (currently ``value``)."""
    if key in OTHER:
        assert OTHER[key] != value
        return OTHER[key]
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if value is None:  # the optional bounds (max_tokens_budget, max_output_tokens_cap, …)
        return 7
    if isinstance(value, str):
        return value + "-other"
    if isinstance(value, dict):
        return {**value, "X-Other": "1"}
    if isinstance(value, list):
        return [*value, "other"]
    raise AssertionError(f"no other value for {key} = {value!r}")


def with_key(cfg: Config, key: str, value: Any) -> Config:
    section, _, name = key.partition(".")
    changed = dataclasses.replace(getattr(cfg, section), **{name: value})
    return dataclasses.replace(cfg, **{section: changed})


def keys(cfg: Config, endpoint: Endpoint | None = None) -> tuple[str, str, str]:
    """The run, group and grouping keys of an empty change under ``cfg``."""
    if endpoint is None:
        endpoint, why = resolve_endpoint(cfg.llm, {})
        assert endpoint is not None, why
    settings = store.result_settings(cfg, endpoint, "background text", "1.0")
    return (store.run_key(settings, "rules", [], []), store.group_key(settings, "rules", [], []),
            store.grouping_key(settings, []))


def test_every_configuration_key_is_in_the_cache_keys_or_listed_with_a_reason() -> None:
    before = keys(BASE)
    missing, listed_but_in = [], []
    for key in all_keys():
        section, _, name = key.partition(".")
        current = getattr(getattr(BASE, section), name)
        after = keys(with_key(BASE, key, other_value(key, current)))
        if key in store.NOT_IN_KEY:
            if after != before:
                listed_but_in.append(key)
        elif any(a == b for a, b in zip(after, before, strict=True)):
            missing.append(key)
    assert missing == [], "settings that change no cache key; add them or list them with why"
    assert listed_but_in == [], "NOT_IN_KEY lists settings that do change the keys"


def test_the_allow_list_names_real_keys_with_reasons_and_no_request_field() -> None:
    known = set(all_keys())
    assert set(store.NOT_IN_KEY) <= known
    assert all(len(why) > 20 for why in store.NOT_IN_KEY.values())
    assert [k for k in REQUEST_SHAPING if k in store.NOT_IN_KEY] == []
    assert set(REQUEST_SHAPING) <= known
    assert len(known) == sum(len(dataclasses.fields(m)) for m in SECTIONS.values())


@pytest.mark.parametrize("name", Endpoint._fields)
def test_every_endpoint_field_is_in_the_cache_keys_but_credentials_and_times(name: str) -> None:
    endpoint, _ = resolve_endpoint(BASE.llm, {})
    assert endpoint is not None
    value = getattr(endpoint, name)
    if isinstance(value, tuple):  # extra_headers, extra_body: (name, value) pairs
        other: Any = (*value, ("X-Other", "1"))
    else:
        other = other_value(name, value)
    before, after = keys(BASE, endpoint), keys(BASE, endpoint._replace(**{name: other}))
    if name in store.ENDPOINT_NOT_IN_KEY:
        assert after == before
    else:
        assert all(a != b for a, b in zip(after, before, strict=True))


@pytest.mark.parametrize(("key", "value"), [
    ("llm.extra_headers", {"X-Route": "eu-large"}),
    ("llm.api_version", "2024-10-21"),
    ("llm.extra_body", {"temperature": 0.2}),
    ("llm.anthropic_version", "2026-10-21"),
])
def test_endpoint_shaping_settings_change_the_keys(key: str, value: Any) -> None:
    assert keys(with_key(BASE, key, value)) != keys(BASE)


def test_the_api_key_is_never_in_the_keys_nor_in_the_settings_they_digest() -> None:
    endpoint, _ = resolve_endpoint(BASE.llm, {})
    assert endpoint is not None
    secret = "sk-test-0123456789abcdef"
    cfg = with_key(BASE, "llm.api_key", secret)
    settings = store.result_settings(cfg, endpoint._replace(api_key=secret), "", "1.0")
    assert secret.encode() not in store.canonical_json(settings)
    assert keys(cfg, endpoint._replace(api_key=secret)) == keys(BASE, endpoint)
