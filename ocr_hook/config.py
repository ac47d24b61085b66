"""Configuration (SPEC §2): pydantic models, pure layering, endpoint presets → frozen options.

Precedence, highest first: CLI flags → environment → repository file ``.ocr-hook.toml`` (read
from HEAD by the caller) → user file (``$XDG_CONFIG_HOME/ocr-hook/config.toml``) → defaults.
Each layer is a nested dict plus the name of its source; :func:`build` merges them, validates
once, and turns the first invalid value into a one-line ConfigError naming key, source and
allowed values. Nothing here reads files or the environment: callers pass them in.
"""

from __future__ import annotations

import base64
import hashlib
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

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


class SecurityConfig(_Section):
    """SPEC §14 (issues 10, 17). ``allow_secrets``: values that are not findings, each a literal
    value or a regular expression matched against the whole value (``redact.find_secrets``'s
    ``allow``); they are still redacted before anything is sent to the model. Each entry must
    compile, and an entry that matches arbitrary text (any of ``_ALLOW_PROBES``: ``.*``,
    ``\\w+``, ``[A-Za-z0-9]{40}``...) is refused: it would silence every secret."""

    allow_secrets: list[str] = Field(default_factory=list)

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
        nxt = cur.get(p)
        if not isinstance(nxt, dict):  # a table over a non-table of a lower layer replaces it
            nxt = cur[p] = {}
        cur = nxt
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
    for layer in layers:  # before merging: a later table must not hide an invalid one
        for section, value in layer.data.items():
            if section in SECTIONS and not isinstance(value, Mapping):
                raise ConfigError(f"[{section}] in {layer.source} must be a table")
    data, origin = merge(layers)
    for section, value in data.items():
        if section not in SECTIONS:
            src = next((s for k, s in origin.items() if k.startswith(section)), "configuration")
            raise ConfigError(f"unknown configuration section [{section}] in {src}; allowed:"
                              f" {', '.join(SECTIONS)}")
        if not isinstance(value, Mapping):
            where = origin.get(section, "configuration")
            raise ConfigError(f"[{section}] in {where} must be a table")
    try:
        return Config.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = [str(x) for x in err["loc"]]
        key = ".".join(loc[:2])
        model = SECTIONS.get(loc[0])
        value = _get(data, key)
        src = origin.get(key, "configuration")
        if err["type"] == "extra_forbidden":
            allowed = ", ".join(model.model_fields) if model else ""
            raise ConfigError(f"unknown key {key} in {src}; allowed keys: {allowed}") from None
        allowed = _allowed(model, loc[1]) if model and len(loc) > 1 else ""
        raise ConfigError(
            f"invalid {key} = {value!r} in {src}: {err['msg']}"
            + (f"; allowed: {allowed}" if allowed else "")
        ) from None


def presets() -> dict[str, dict[str, Any]]:
    """Provider presets from ``config/providers.json`` (SPEC §2): name → {protocol, base_url,
    key_env, base_url_env?, keyless?, output_tokens_field?, auth_header?, azure?, extra_body?}."""
    return dict(resources.load_json("providers.json")["providers"])


def preset_env_layer(layers: Sequence[Layer], environ: Mapping[str, str]) -> Layer:
    """The standard variables of the selected preset (SPEC §2: ``OPENAI_API_KEY`` /
    ``OPENAI_BASE_URL`` for ``openai``, ``ANTHROPIC_*`` for ``anthropic``, ``DEEPSEEK_API_KEY``…,
    and ``OPENAI_API_VERSION`` for ``azure-openai``) as a layer. Callers put it just below the
    ``OCR_HOOK_*`` / ``OCR_LLM_*`` layer: it overrides the files, never our own variables.
    Only the preset named by ``llm.provider`` is consulted: nothing is guessed."""
    data, _ = merge(layers)
    name = _get(data, "llm.provider")
    table = presets()
    preset = table.get(name) if isinstance(name, str) else None
    out: dict[str, Any] = {}
    if preset:
        for env_key, key in (("key_env", "api_key"), ("base_url_env", "base_url"),
                             ("api_version_env", "api_version")):
            var = preset.get(env_key)
            value = environ.get(var, "").strip() if var else ""
            if value:
                out[key] = value
    return Layer(f"environment ({name} preset variables)", {"llm": out} if out else {})


SECRET_KEYS = ("llm.api_key", "llm.api_key_cmd")


def check_repo_layer(layer: Layer) -> Layer:
    """Refuse secrets and commands in the committed repository file (SPEC §2, §14): an API key
    there is leaked to everyone with the repository, and ``api_key_cmd`` would let a repository
    run commands on every reviewer's machine. Raises ConfigError naming the key and file."""
    for key in SECRET_KEYS:
        if _get(layer.data, key) is not None:
            raise ConfigError(
                f"{key} is not allowed in {layer.source}: secrets and commands belong in the user"
                " file (`git ocr config set`) or the environment"
            )
    return layer


def _is_local(url: str) -> bool:
    from urllib.parse import urlsplit

    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:
        return False
    return host in ("localhost", "::1") or host.startswith("127.")


def azure_url(base: str, deployment: str, api_version: str) -> str:
    """Azure OpenAI URL (ecosystem.md §3.4). A resource endpoint
    (``https://R.openai.azure.com``) becomes the classic deployment URL
    ``…/openai/deployments/<deployment>?api-version=V`` when ``api_version`` is set, else the v1
    API base ``…/openai/v1`` (no api-version; the deployment goes in ``model``). A URL that
    already has an ``/openai/`` path is kept, with ``api-version`` added when given and
    missing."""
    path, _, query = base.partition("?")
    path = path.rstrip("/")
    if "/openai/" not in path + "/":
        if api_version:
            path = f"{path}/openai/deployments/{deployment}"
        else:
            return f"{path}/openai/v1" + (f"?{query}" if query else "")
    if api_version and "api-version=" not in query:
        query = f"{query}&api-version={api_version}" if query else f"api-version={api_version}"
    return path + (f"?{query}" if query else "")


def resolve_endpoint(
    cfg: LlmConfig, environ: Mapping[str, str], api_key_from_cmd: str = ""
) -> tuple[Endpoint | None, str]:
    """The endpoint triple (url, key-or-keyless-local, model), never guessed (SPEC §2).

    Key order: ``llm.api_key`` (any layer), then ``api_key_from_cmd`` (the caller ran
    ``llm.api_key_cmd``), then the preset's key variable. The output-token field is
    ``llm.output_tokens_field``, else the preset's, else ``max_tokens`` for a loopback server
    (llama.cpp, llama-cpp-python, Ollama and vLLM honour it; llama-cpp-python 0.3.36 and Ollama
    silently ignore ``max_completion_tokens``: measured with bench/real_llm_smoke.py, 4,030
    tokens generated under a 512 limit), else ``max_completion_tokens`` (OpenAI's o-series and
    GPT-5 reject ``max_tokens``). Returns (endpoint, "") or (None, why
    not, naming what is missing). Raises ConfigError for an unknown provider.
    """
    table = presets()
    name = cfg.provider or ""
    preset: dict[str, Any] = {}
    if name and name != "custom":
        if name not in table:
            raise ConfigError(
                f"invalid llm.provider = {name!r}; allowed: custom, {', '.join(table)}"
            )
        preset = table[name]
    env_url = environ.get(preset["base_url_env"], "").strip() if preset.get("base_url_env") else ""
    url = cfg.base_url or env_url or preset.get("base_url", "")
    key = cfg.api_key or api_key_from_cmd
    if not key and preset.get("key_env"):
        key = environ.get(preset["key_env"], "").strip()
    protocol = cfg.protocol or preset.get("protocol", "openai")
    if preset.get("azure") and url and cfg.model:
        api_version = cfg.api_version
        if not api_version and preset.get("api_version_env"):
            api_version = environ.get(preset["api_version_env"], "").strip()
        url = azure_url(url, cfg.model, api_version)
    missing = [n for n, v in (("url", url), ("model", cfg.model)) if not v]
    keyless = bool(preset.get("keyless")) or (bool(url) and _is_local(url))
    if not key and not keyless:
        missing.append("api key")
    if missing:
        hint = "set OCR_LLM_URL, OCR_LLM_MODEL and OCR_LLM_TOKEN, or llm.provider and llm.model"
        if preset:
            need = [str(preset[k]) for k in ("key_env", "base_url_env") if preset.get(k)]
            hint = (f"set llm.model{' and ' + ' / '.join(need) if need else ''} for provider"
                    f" {name}")
        return None, (f"no LLM endpoint configured (missing {', '.join(missing)}); {hint}"
                      " (`git ocr config set KEY VALUE`)")
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
            output_tokens_field=cfg.output_tokens_field or preset.get("output_tokens_field")
            or ("max_tokens" if _is_local(url) else "max_completion_tokens"),
            anthropic_version=cfg.anthropic_version,
            extra_headers=tuple({**preset.get("extra_headers", {}),
                                 **cfg.extra_headers}.items()),
            extra_body=tuple({**preset.get("extra_body", {}), **cfg.extra_body}.items()),
            auth_header=preset.get("auth_header", ""),
            tool_choice=preset.get("tool_choice", ""),
        ),
        "",
    )


# ---------------------------------------------------------------------------------------------
# `git ocr config` support: key lookup, value parsing, TOML writing (all pure: text in, text out)


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


def parse_value(key: str, text: str) -> Any:
    """A command-line value for ``key`` → the value to store, by the key's type: text for
    string keys; ``true``/``false`` (also 1/0, yes/no, on/off) for booleans; numbers; for
    lists a TOML array or comma-separated text; for tables a TOML inline table or JSON object.
    Raises ConfigError naming the key and the expected form."""
    section, name, info = field_of(key)
    ann = info.annotation
    origin = getattr(ann, "__origin__", None)
    args = [a for a in getattr(ann, "__args__", ()) if a is not type(None)]
    if ann is bool:
        low = text.strip().lower()
        if low in ("true", "1", "yes", "on"):
            return True
        if low in ("false", "0", "no", "off"):
            return False
        raise ConfigError(f"invalid {key} = {text!r}; allowed: true, false")
    if ann in (int, float) or (args and all(a in (int, float) for a in args)):
        kind = int if int in (args or [ann]) and ann is not float else float
        try:
            return kind(text.strip())
        except ValueError:
            raise ConfigError(f"invalid {key} = {text!r}; expected {kind.__name__}") from None
    if origin is list:
        t = text.strip()
        if t.startswith("["):
            return _toml_value(t, key)
        return [v.strip() for v in t.split(",") if v.strip()]
    if origin is dict:
        t = text.strip()
        if t.startswith("{"):
            try:
                import json

                value = json.loads(t)
            except ValueError:
                value = _toml_value(t, key)
            if isinstance(value, dict):
                return value
        raise ConfigError(f"invalid {key} = {text!r}; expected a table such as"
                          ' {"X-Team" = "core"} or a JSON object')
    return text


def _toml_value(text: str, key: str) -> Any:
    try:
        return parse_toml(f"v = {text}", "value")["v"]
    except ConfigError as e:
        raise ConfigError(f"invalid {key} = {text!r}: not a TOML value ({e})") from None


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(k: str) -> str:
    return k if _BARE_KEY.match(k) else _toml_str(k)


def _toml_str(s: str) -> str:
    """A TOML basic string (toml.io v1.0.0 §String): backslash, quote and control characters
    escaped."""
    out = []
    for ch in s:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_literal(value: Any) -> str:
    """One TOML value: string, boolean, integer, float, array or inline table."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _toml_str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_literal(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_toml_key(str(k))} = {toml_literal(v)}"
                               for k, v in value.items()) + "}"
    raise ConfigError(f"cannot write {type(value).__name__} to TOML")


def dump_toml(data: Mapping[str, Any]) -> str:
    """Nested dict → TOML text: top-level scalars first, then one ``[table]`` per dict (nested
    dicts as ``[a.b]`` sub-tables), arrays and scalars as literals. Enough for our config files;
    round-trips through ``tomllib``."""
    lines: list[str] = []

    def table(d: Mapping[str, Any], path: list[str]) -> None:
        scalars = [(k, v) for k, v in d.items() if not isinstance(v, Mapping)]
        subs = [(k, v) for k, v in d.items() if isinstance(v, Mapping)]
        if path and (scalars or not subs):
            if lines:
                lines.append("")
            lines.append("[" + ".".join(_toml_key(p) for p in path) + "]")
        for k, v in scalars:
            lines.append(f"{_toml_key(str(k))} = {toml_literal(v)}")
        for k, v in subs:
            table(v, [*path, str(k)])

    table(data, [])
    return "\n".join(lines) + "\n" if lines else ""


def _section_span(lines: list[str], section: str) -> tuple[int, int] | None:
    """(header index, end index) of ``[section]`` in ``lines``, or None."""
    header = re.compile(r"^\s*\[\s*" + re.escape(section) + r"\s*\]\s*(#.*)?$")
    any_header = re.compile(r"^\s*\[")
    for i, line in enumerate(lines):
        if header.match(line):
            j = i + 1
            while j < len(lines) and not any_header.match(lines[j]):
                j += 1
            return i, j
    return None


def _edit_lines(text: str, key: str, literal: str | None) -> str:
    """Set (``literal``) or remove (None) ``name = …`` inside ``[section]``, leaving every other
    line, comment included, as it was."""
    section, _, name = key.partition(".")
    lines = text.splitlines()
    line_re = re.compile(r"^\s*(" + re.escape(name) + "|" + re.escape(_toml_str(name))
                         + r")\s*=")
    span = _section_span(lines, section)
    new_line = f"{_toml_key(name)} = {literal}" if literal is not None else None
    if span is None:
        if new_line is not None:
            if lines and lines[-1].strip():
                lines.append("")
            lines += [f"[{section}]", new_line]
    else:
        start, end = span
        hit = next((i for i in range(start + 1, end) if line_re.match(lines[i])), None)
        if hit is not None:
            if new_line is None:
                del lines[hit]
                end -= 1
                if not any(lines[i].strip() for i in range(start + 1, end)):
                    del lines[start:end]  # the table is empty now: drop its header too
                    # no blank line left at the top, at the end, or doubled where it was
                    while start < len(lines) and not lines[start].strip() and (
                            start == 0 or not lines[start - 1].strip()):
                        del lines[start]
                    while lines and not lines[-1].strip():
                        lines.pop()
            else:
                lines[hit] = new_line
        elif new_line is not None:
            last = max((i for i in range(start, end) if lines[i].strip()), default=start)
            lines.insert(last + 1, new_line)
    return "\n".join(lines) + "\n" if lines else ""


def edit_toml(text: str, key: str, value: Any | None, source: str) -> str:
    """The user file's text with ``key`` (``section.name``) set to ``value`` (None: removed).
    Edits the one line in place so comments and layout survive; when that cannot give the
    intended data (multi-line values, dotted keys, inline tables), rewrites the whole file with
    :func:`dump_toml`. Raises ConfigError when ``text`` is not valid TOML."""
    data = parse_toml(text, source) if text.strip() else {}
    want = {k: dict(v) if isinstance(v, Mapping) else v for k, v in data.items()}
    section, _, name = key.partition(".")
    sect = want.get(section)
    if value is None:
        if isinstance(sect, dict):
            sect.pop(name, None)
            if not sect:  # no empty [section] left behind
                del want[section]
    else:
        if not isinstance(sect, dict):
            sect = want[section] = {}
        sect[name] = value
    try:
        edited = _edit_lines(text, key, None if value is None else toml_literal(value))
        got = parse_toml(edited, source)
        if value is None:  # a table left with only comments keeps its (empty) header
            got = {k: v for k, v in got.items() if v != {} or k in want}
        if got == want:
            return edited
    except ConfigError:
        pass
    return dump_toml(want)
