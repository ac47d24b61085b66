"""Configuration models (SPEC §2): one frozen dataclass per ``[section]`` of the TOML files,
the key tables shared by the environment and the flags, and key lookup for ``git ocr config``.
Pure: no files, no environment. ``config`` re-exports every name here.

The dataclasses are the one schema. ``config.build`` accepts data that already has their exact
shape with ``shapes.check`` (no pydantic import: issue 18, start-up), and validates everything
else (conversions such as ``"4"`` → 4 from the environment, and every error message) with
pydantic at the edge, which reads the same annotations (``shapes.Bound`` constraints and
``__pydantic_config__``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from .errors import ConfigError
from .shapes import Bound, field_types

REPO_FILE = ".ocr-hook.toml"
_FORBID = {"extra": "forbid"}  # pydantic's config of a stdlib dataclass: unknown keys refused


@dataclass(frozen=True)
class LlmConfig:
    __pydantic_config__ = _FORBID

    provider: str = ""
    base_url: str = ""
    api_key: str = field(default="", repr=False)
    api_key_cmd: str = ""
    model: str = ""
    protocol: Literal["openai", "anthropic", ""] = ""
    timeout_s: Annotated[float, Bound(gt=0)] = 120.0
    connect_timeout_s: Annotated[float, Bound(gt=0)] = 10.0
    max_retries: Annotated[int, Bound(ge=0, le=10)] = 3
    extra_headers: dict[str, str] = field(default_factory=dict)
    extra_body: dict[str, Any] = field(default_factory=dict)
    max_output_tokens: Annotated[int, Bound(ge=1)] = 16384
    max_output_tokens_cap: Annotated[int, Bound(ge=1)] | None = None
    output_tokens_field: Literal["max_completion_tokens", "max_tokens", ""] = ""
    context_tokens: Annotated[int, Bound(ge=1000)] = 200_000
    anthropic_version: str = "2023-06-01"
    api_version: str = ""


@dataclass(frozen=True)
class ReviewConfig:
    __pydantic_config__ = _FORBID

    effort: Literal["low", "medium", "high", ""] = ""
    concurrency: Annotated[int, Bound(ge=1, le=64)] = 8
    max_tool_rounds: Annotated[int, Bound(ge=1)] = 100
    timeout_s: Annotated[float, Bound(gt=0)] = 300.0
    max_tokens_budget: Annotated[int, Bound(ge=0)] | None = None
    language: str = "English"
    filter: bool = True
    background: str = ""
    background_file: str = ""


@dataclass(frozen=True)
class SelectConfig:
    __pydantic_config__ = _FORBID

    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    review_tests: bool = False


@dataclass(frozen=True)
class RulesConfig:
    __pydantic_config__ = _FORBID

    file: str = ""


@dataclass(frozen=True)
class GateConfig:
    __pydantic_config__ = _FORBID

    mode: Literal["blocking", "advisory"] = "blocking"
    fail_on: Literal["critical", "high", "medium", "low"] = "high"
    on_error: Literal["allow", "block"] = "allow"


@dataclass(frozen=True)
class CacheConfig:
    __pydantic_config__ = _FORBID

    enabled: bool = True
    max_mb: Annotated[int, Bound(ge=1)] = 64


@dataclass(frozen=True)
class ToolsConfig:
    __pydantic_config__ = _FORBID

    file: str = ""


@dataclass(frozen=True)
class SecurityConfig:
    """SPEC §14 (issue 10). ``allow_secrets``: values that are not secrets, each a literal value
    or a regular expression matched against the whole value (``redact.find_secrets``'s
    ``allow``); they are neither flagged nor redacted."""

    __pydantic_config__ = _FORBID

    allow_secrets: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class McpConfig:
    __pydantic_config__ = _FORBID

    servers: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class Config:
    """The whole validated configuration."""

    __pydantic_config__ = _FORBID

    llm: LlmConfig = field(default_factory=LlmConfig)
    review: ReviewConfig = field(default_factory=ReviewConfig)
    select: SelectConfig = field(default_factory=SelectConfig)
    rules: RulesConfig = field(default_factory=RulesConfig)
    gate: GateConfig = field(default_factory=GateConfig)
    cache: CacheConfig = field(default_factory=CacheConfig)
    tools: ToolsConfig = field(default_factory=ToolsConfig)
    mcp: McpConfig = field(default_factory=McpConfig)
    security: SecurityConfig = field(default_factory=SecurityConfig)


SECTIONS: dict[str, type] = dict(field_types(Config))

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
    """(section, name, annotation) of a dotted ``section.name`` key (the annotation as written,
    e.g. ``Annotated[int, Bound(ge=0)] | None``). Raises ConfigError listing the allowed keys
    when unknown."""
    section, _, name = key.partition(".")
    model = SECTIONS.get(section)
    if model is None or name not in field_types(model):
        raise ConfigError(f"unknown configuration key {key!r}; allowed keys: "
                          + ", ".join(all_keys()))
    return section, name, field_types(model)[name]


def field_names(section: type) -> list[str]:
    """The keys of a section class, in declaration order."""
    return list(field_types(section))


def all_keys() -> list[str]:
    """Every ``section.name`` key, in model order."""
    return [f"{s}.{n}" for s, m in SECTIONS.items() for n in field_types(m)]

