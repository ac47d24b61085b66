"""Configuration models (SPEC §2): one frozen pydantic model per ``[section]`` of the TOML
files, the key tables shared by the environment and the flags, and key lookup for
``git ocr config``. Pure: no files, no environment. ``config`` re-exports every name here.
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .errors import ConfigError

REPO_FILE = ".ocr-hook.toml"

# Upper bounds of the time settings: a value past them is a typo (or ``inf``), and Python's
# waits reject timeouts beyond ~2^31 s with OverflowError in the middle of a run.
LLM_TIMEOUT_MAX_S = 86_400.0  # one request: a day
REVIEW_TIMEOUT_MAX_S = 7 * 86_400.0  # a whole run: a week
# Request fields the client itself writes; llm.extra_body may not replace them (issue 17: an
# extra_body ``messages`` made a review silently review nothing).
RESERVED_BODY_FIELDS = ("model", "messages", "tools", "tool_choice", "stream", "system")


_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # RFC 9110 §5.6.2 token


def _printable_latin1(value: str) -> bool:
    """True when ``value`` can be sent as an HTTP header value as it is (requests refuses line
    breaks and leading whitespace; http.client encodes values as latin-1)."""
    return (value == value.lstrip() and all(" " <= c <= "~" or "\xa0" <= c <= "\xff"
                                            for c in value))


class _Section(BaseModel):
    # allow_inf_nan=False: ``timeout_s = inf`` or ``nan`` is a configuration error (exit 2)
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def check_http_url(value: str) -> str:
    """``value`` when it is "" or an ``http://``/``https://`` URL with a host; raises ValueError
    otherwise (``not a url``, ``ftp://…``, ``http://`` alone). Pure."""
    from urllib.parse import urlsplit

    if not value:
        return value
    try:
        parts = urlsplit(value.strip())
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as e:
        raise ValueError(f"not a valid URL ({e})") from None
    if parts.scheme.lower() not in ("http", "https") or not host:
        raise ValueError("must be an http:// or https:// URL with a host")
    return value.strip()


class LlmConfig(_Section):
    provider: str = ""
    base_url: str = ""  # check_http_url
    api_key: str = Field(default="", repr=False)
    api_key_cmd: str = ""
    model: str = ""
    protocol: Literal["openai", "anthropic", ""] = ""
    timeout_s: float = Field(default=120.0, gt=0, le=LLM_TIMEOUT_MAX_S)
    connect_timeout_s: float = Field(default=10.0, gt=0, le=LLM_TIMEOUT_MAX_S)
    max_retries: int = Field(default=3, ge=0, le=10)
    extra_headers: dict[str, str] = Field(default_factory=dict)
    extra_body: dict[str, Any] = Field(default_factory=dict)
    max_output_tokens: int = Field(default=16384, ge=1)
    max_output_tokens_cap: int | None = Field(default=None, ge=1)
    output_tokens_field: Literal["max_completion_tokens", "max_tokens", ""] = ""
    context_tokens: int = Field(default=200_000, ge=1000)
    anthropic_version: str = "2023-06-01"
    api_version: str = ""

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str) -> str:
        return check_http_url(v)

    @field_validator("extra_headers")
    @classmethod
    def _headers(cls, v: dict[str, str]) -> dict[str, str]:
        for name, value in v.items():
            if not _HEADER_NAME.fullmatch(name):
                raise ValueError(f"{name!r} is not an HTTP header name")
            if not _printable_latin1(value):
                raise ValueError(f"the value of {name} has a line break, a control character"
                                 " or a character HTTP headers cannot carry")
        return v

    @field_validator("api_key")
    @classmethod
    def _key(cls, v: str) -> str:
        if v and (not _printable_latin1(v) or any(c.isspace() for c in v)):
            # the message never shows the key (config.build masks the value too)
            raise ValueError("contains a space, a line break or a character HTTP headers"
                             " cannot carry")
        return v

    @field_validator("extra_body")
    @classmethod
    def _body(cls, v: dict[str, Any]) -> dict[str, Any]:
        taken = [k for k in v if k in RESERVED_BODY_FIELDS]
        if taken:
            raise ValueError(f"may not set {', '.join(taken)}: the request's own fields"
                             f" ({', '.join(RESERVED_BODY_FIELDS)}) cannot be replaced")
        return v


class ReviewConfig(_Section):
    effort: Literal["low", "medium", "high", ""] = ""
    concurrency: int = Field(default=8, ge=1, le=64)
    max_tool_rounds: int = Field(default=100, ge=1)
    timeout_s: float = Field(default=300.0, gt=0, le=REVIEW_TIMEOUT_MAX_S)
    max_tokens_budget: int | None = Field(default=None, ge=0)
    max_group_tokens: int | None = Field(default=None, ge=0)  # None: 10 × llm.context_tokens
    # issue 16: a pushed range of more commits is cut to the newest ones (the rest is reported
    # as not reviewed)
    max_push_commits: int = Field(default=20, ge=1)
    language: str = "English"
    filter: bool = True
    background: str = ""
    background_file: str = ""


class SelectConfig(_Section):
    """SPEC §4. The bounds of a large change set (issue 20; 0 = no bound): ``max_file_bytes``
    per blob (a larger file is ``too_large`` from its size, never read), ``max_files`` files
    and ``max_total_bytes`` of diff text reviewed per run (the rest is not reviewed, with the
    reason)."""

    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    review_tests: bool = False
    max_file_bytes: int = Field(default=1_048_576, ge=0)
    max_files: int = Field(default=1000, ge=0)
    max_total_bytes: int = Field(default=2_097_152, ge=0)


class RulesConfig(_Section):
    file: str = ""


class GateConfig(_Section):
    mode: Literal["blocking", "advisory"] = "blocking"
    fail_on: Literal["critical", "high", "medium", "low"] = "high"
    on_error: Literal["allow", "block"] = "allow"


class CacheConfig(_Section):
    enabled: bool = True
    max_mb: int = Field(default=64, ge=1)


class ToolsConfig(_Section):
    file: str = ""


class SecurityConfig(_Section):
    """SPEC §14 (issues 10, 17). ``allow_secrets``: values that are not findings, each a literal
    value or a regular expression matched against the whole value (``redact.find_secrets``'s
    ``allow``); they are still redacted before anything is sent to the model. Each entry must
    compile, and an entry that matches arbitrary text (any of ``_ALLOW_PROBES``: ``.*``,
    ``\\w+``, ``[A-Za-z0-9]{40}``...) is refused: it would silence every secret.
    ``detect_secrets``: also run detect-secrets over the added lines (``detect_secrets_scan``;
    the optional extra ``ocr-hook[detect-secrets]``)."""

    allow_secrets: list[str] = Field(default_factory=list)
    detect_secrets: bool = False
    # issue 20: bytes the secret scan reads from files that are not reviewed (excluded, too
    # large: a bounded prefix of the blob, over a bound); reviewed files are always scanned
    max_scan_bytes: int = Field(default=1_048_576, ge=0)

    @field_validator("allow_secrets")
    @classmethod
    def _narrow_allow_patterns(cls, entries: list[str]) -> list[str]:
        for entry in entries:
            try:
                rx = re.compile(entry)
            except re.error as e:
                raise ValueError(f"{entry!r} is not a valid regular expression ({e}); escape "
                                 "special characters of a literal value") from None
            if any(rx.fullmatch(probe) for probe in _ALLOW_PROBES):
                raise ValueError(f"{entry!r} matches arbitrary values, so it would allow every "
                                 "secret (of a kind); list exact values or narrow patterns")
        return entries


# Texts an allow_secrets entry must not match (issue 17): empty, one letter, a long run, and
# random values in the alphabets of tokens (base64, hex, URL-safe, AWS key ids, GitHub tokens).
# Random parts are derived from sha256 so no literal token is in the source.
_PROBE_SEED = hashlib.sha256(b"ocr-hook allow_secrets probe").hexdigest()
_ALLOW_PROBES: tuple[str, ...] = (
    "", "a", "x" * 40, "0" * 16, "password", "hunter2!", "Zq8Lm3Np5Rt7Vw9Y",
    _PROBE_SEED[:32], _PROBE_SEED.upper()[:40],
    base64.b64encode(hashlib.sha256(_PROBE_SEED.encode()).digest()).decode()[:40],
    base64.urlsafe_b64encode(hashlib.sha512(_PROBE_SEED.encode()).digest()).decode()[:64],
    "AKIA" + base64.b32encode(hashlib.sha256(b"aws").digest()).decode()[:16],
    "gh" + "p_" + base64.b64encode(hashlib.sha256(b"gh").digest()).decode()[:36].replace(
        "+", "a").replace("/", "b"),
    "random text, with spaces: and punctuation!",
)


class McpConfig(_Section):
    servers: dict[str, dict[str, Any]] = Field(default_factory=dict)


class Config(_Section):
    """The whole validated configuration."""

    llm: LlmConfig = Field(default_factory=LlmConfig)
    review: ReviewConfig = Field(default_factory=ReviewConfig)
    select: SelectConfig = Field(default_factory=SelectConfig)
    rules: RulesConfig = Field(default_factory=RulesConfig)
    gate: GateConfig = Field(default_factory=GateConfig)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    mcp: McpConfig = Field(default_factory=McpConfig)
    security: SecurityConfig = Field(default_factory=SecurityConfig)


SECTIONS: dict[str, type[BaseModel]] = {
    name: field.annotation  # type: ignore[misc]
    for name, field in Config.model_fields.items()
}

# CLI flag / short env names → config keys (SPEC §1: every flag has a key and an OCR_HOOK_* var)
FLAG_KEYS: dict[str, str] = {
    "effort": "review.effort",
    "concurrency": "review.concurrency",
    "timeout": "review.timeout_s",
    "max_tokens_budget": "review.max_tokens_budget",
    "max_tools": "review.max_tool_rounds",
    "no_filter": "review.filter",
    "background": "review.background",
    "background_file": "review.background_file",
    "exclude": "select.exclude",
    "rule": "rules.file",
    "tools": "tools.file",
    "provider": "llm.provider",
    "model": "llm.model",
    "mode": "gate.mode",
    "fail_on": "gate.fail_on",
    "on_error": "gate.on_error",
    "no_cache": "cache.enabled",
    "language": "review.language",
}

LIST_KEYS = {"select.include", "select.exclude", "security.allow_secrets"}



def field_of(key: str) -> tuple[str, str, Any]:
    """(section, name, pydantic FieldInfo) of a dotted ``section.name`` key. Raises ConfigError
    listing the allowed keys when unknown."""
    section, _, name = key.partition(".")
    model = SECTIONS.get(section)
    if model is None or name not in model.model_fields:
        raise ConfigError(f"unknown configuration key {key!r}; allowed keys: "
                          + ", ".join(all_keys()))
    return section, name, model.model_fields[name]


def all_keys() -> list[str]:
    """Every ``section.name`` key, in model order."""
    return [f"{s}.{n}" for s, m in SECTIONS.items() for n in m.model_fields]

