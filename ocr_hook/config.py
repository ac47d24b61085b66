"""Configuration (SPEC §2): pydantic models, pure layering, endpoint presets → frozen options.

Precedence, highest first: CLI flags → environment → repository file ``.ocr-hook.toml`` (read
from HEAD by the caller) → user file (``$XDG_CONFIG_HOME/ocr-hook/config.toml``) → defaults.
Each layer is a nested dict plus the name of its source; :func:`build` merges them, validates
once, and turns the first invalid value into a one-line ConfigError naming key, source and
allowed values. Nothing here reads files or the environment: callers pass them in.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from . import resources
from .errors import ConfigError
from .llm.types import Endpoint

REPO_FILE = ".ocr-hook.toml"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LlmConfig(_Section):
    provider: str = ""
    base_url: str = ""
    api_key: str = Field(default="", repr=False)
    api_key_cmd: str = ""
    model: str = ""
    protocol: Literal["openai", "anthropic", ""] = ""
    timeout_s: float = Field(default=120.0, gt=0)
    connect_timeout_s: float = Field(default=10.0, gt=0)
    max_retries: int = Field(default=3, ge=0, le=10)
    extra_headers: dict[str, str] = Field(default_factory=dict)
    extra_body: dict[str, Any] = Field(default_factory=dict)
    max_output_tokens: int = Field(default=16384, ge=1)
    output_tokens_field: Literal["max_completion_tokens", "max_tokens", ""] = ""
    context_tokens: int = Field(default=200_000, ge=1000)
    anthropic_version: str = "2023-06-01"
    api_version: str = ""


class ReviewConfig(_Section):
    effort: Literal["low", "medium", "high", ""] = ""
    concurrency: int = Field(default=8, ge=1, le=64)
    max_tool_rounds: int = Field(default=100, ge=1)
    timeout_s: float = Field(default=300.0, gt=0)
    max_tokens_budget: int | None = Field(default=None, ge=0)
    language: str = "English"
    filter: bool = True
    background: str = ""
    background_file: str = ""


class SelectConfig(_Section):
    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    review_tests: bool = False


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

LIST_KEYS = {"select.include", "select.exclude"}


@dataclass(frozen=True)
class Layer:
    """One configuration source: nested ``data`` and a ``source`` name for error messages."""

    source: str
    data: Mapping[str, Any]


def parse_toml(text: str, source: str) -> dict[str, Any]:
    """Parse TOML text; raises ConfigError("<source>: invalid TOML: …")."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{source}: invalid TOML: {e}") from e


def _set(d: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    cur = d
    for p in parts[:-1]:
        cur = cur.setdefault(p, {})
    cur[parts[-1]] = value


def _get(d: Mapping[str, Any], dotted: str) -> Any:
    cur: Any = d
    for p in dotted.split("."):
        if not isinstance(cur, Mapping) or p not in cur:
            return None
        cur = cur[p]
    return cur


def env_layer(environ: Mapping[str, str]) -> Layer:
    """``OCR_HOOK_<SECTION>_<KEY>`` (e.g. OCR_HOOK_GATE_MODE), flag-named short forms
    (OCR_HOOK_FAIL_ON, OCR_HOOK_EFFORT…), and the reference project's OCR_LLM_URL / TOKEN /
    MODEL / PROTOCOL. Values stay strings; pydantic converts them."""
    data: dict[str, Any] = {}
    for name, value in environ.items():
        if not name.startswith("OCR_HOOK_") or name in ("OCR_HOOK_SKIP",):
            continue
        rest = name[len("OCR_HOOK_"):].lower()
        key = None
        for section, model in SECTIONS.items():
            prefix = section + "_"
            if rest.startswith(prefix) and rest[len(prefix):] in model.model_fields:
                key = f"{section}.{rest[len(prefix):]}"
                break
        if key is None and rest in FLAG_KEYS:
            key = FLAG_KEYS[rest]
            if rest in ("no_filter", "no_cache"):
                value = "false" if value.strip().lower() in ("1", "true", "yes") else "true"
        if key is None:
            continue
        if key in LIST_KEYS:
            _set(data, key, [v.strip() for v in value.split(",") if v.strip()])
        elif key in ("llm.extra_headers", "llm.extra_body", "mcp.servers"):
            import json

            try:
                _set(data, key, json.loads(value))
            except ValueError as e:
                raise ConfigError(f"environment {name}: not valid JSON ({e})") from e
        else:
            _set(data, key, value)
    for env_name, key in (
        ("OCR_LLM_URL", "llm.base_url"),
        ("OCR_LLM_TOKEN", "llm.api_key"),
        ("OCR_LLM_MODEL", "llm.model"),
        ("OCR_LLM_PROTOCOL", "llm.protocol"),
    ):
        if environ.get(env_name, "").strip() and _get(data, key) is None:
            _set(data, key, environ[env_name].strip())
    return Layer("environment", data)


def merge(layers: Sequence[Layer]) -> tuple[dict[str, Any], dict[str, str]]:
    """Merge layers lowest-precedence first: returns (data, dotted key → source)."""
    data: dict[str, Any] = {}
    origin: dict[str, str] = {}

    def walk(src: Mapping[str, Any], prefix: str, source: str) -> None:
        for k, v in src.items():
            dotted = f"{prefix}{k}"
            if isinstance(v, Mapping) and dotted.count(".") == 0:
                walk(v, dotted + ".", source)
            else:
                _set(data, dotted, v)
                origin[dotted] = source

    for layer in layers:
        walk(layer.data, "", layer.source)
    return data, origin


def _allowed(model: type[BaseModel], name: str) -> str:
    field = model.model_fields.get(name)
    if field is None:
        return ", ".join(model.model_fields)
    ann = field.annotation
    args = getattr(ann, "__args__", ())
    lits = [a for a in args if isinstance(a, str) and a]
    if lits:
        return ", ".join(lits)
    return getattr(ann, "__name__", str(ann))


def build(layers: Sequence[Layer]) -> Config:
    """Merge and validate. Raises ConfigError("invalid <key> = <value> in <source>; allowed:
    …") for the first invalid or unknown key."""
    data, origin = merge(layers)
    for section, value in data.items():
        if section not in SECTIONS:
            src = next((s for k, s in origin.items() if k.startswith(section)), "configuration")
            raise ConfigError(
                f"unknown configuration section [{section}] in {src}; allowed: {', '.join(SECTIONS)}"
            )
        if not isinstance(value, Mapping):
            raise ConfigError(f"[{section}] in {origin.get(section, 'configuration')} must be a table")
    try:
        return Config.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = [str(x) for x in err["loc"]]
        key = ".".join(loc[:2])
        section = SECTIONS.get(loc[0])
        value = _get(data, key)
        src = origin.get(key, "configuration")
        if err["type"] == "extra_forbidden":
            allowed = ", ".join(section.model_fields) if section else ""
            raise ConfigError(f"unknown key {key} in {src}; allowed keys: {allowed}") from None
        allowed = _allowed(section, loc[1]) if section and len(loc) > 1 else ""
        raise ConfigError(
            f"invalid {key} = {value!r} in {src}: {err['msg']}"
            + (f"; allowed: {allowed}" if allowed else "")
        ) from None


def presets() -> dict[str, dict[str, Any]]:
    """Provider presets from ``config/providers.json`` (SPEC §2)."""
    return dict(resources.load_json("providers.json")["providers"])


def _is_local(url: str) -> bool:
    from urllib.parse import urlsplit

    host = (urlsplit(url).hostname or "").lower()
    return host in ("localhost", "::1") or host.startswith("127.")


def resolve_endpoint(
    cfg: LlmConfig, environ: Mapping[str, str], api_key_from_cmd: str = ""
) -> tuple[Endpoint | None, str]:
    """The endpoint triple (url, key-or-keyless-local, model), never guessed (SPEC §2).

    Returns (endpoint, "") or (None, why not). Raises ConfigError for an unknown provider.
    """
    table = presets()
    name = cfg.provider or ""
    preset: dict[str, Any] = {}
    if name and name != "custom":
        if name not in table:
            raise ConfigError(
                f"unknown llm.provider {name!r}; allowed: custom, {', '.join(table)}"
            )
        preset = table[name]
    url = cfg.base_url or (environ.get(preset["base_url_env"], "") if preset.get("base_url_env") else "")
    url = url or preset.get("base_url", "")
    key = cfg.api_key or api_key_from_cmd
    if not key and preset.get("key_env"):
        key = environ.get(preset["key_env"], "").strip()
    protocol = cfg.protocol or preset.get("protocol", "openai")
    if preset.get("azure") and url and cfg.api_version and "api-version" not in url:
        url = f"{url.rstrip('/')}/openai/deployments/{cfg.model}?api-version={cfg.api_version}"
    missing = [n for n, v in (("url", url), ("model", cfg.model)) if not v]
    keyless = bool(preset.get("keyless")) or (bool(url) and _is_local(url))
    if not key and not keyless:
        missing.append("api key")
    if missing:
        return None, (
            f"no LLM endpoint configured (missing {', '.join(missing)}); set OCR_LLM_URL,"
            " OCR_LLM_MODEL and OCR_LLM_TOKEN, or llm.provider/llm.model in"
            " `git ocr config set`"
        )
    return (
        Endpoint(
            url=url,
            model=cfg.model,
            protocol=protocol,
            api_key=key,
            provider=name or "custom",
            timeout_s=cfg.timeout_s,
            connect_timeout_s=cfg.connect_timeout_s,
            max_retries=cfg.max_retries,
            max_output_tokens=cfg.max_output_tokens,
            output_tokens_field=cfg.output_tokens_field
            or preset.get("output_tokens_field", "max_completion_tokens"),
            anthropic_version=cfg.anthropic_version,
            extra_headers=tuple(cfg.extra_headers.items()),
            extra_body=tuple({**preset.get("extra_body", {}), **cfg.extra_body}.items()),
            auth_header=preset.get("auth_header", ""),
        ),
        "",
    )
