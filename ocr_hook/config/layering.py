"""Configuration (spec §2): section models, pure layering, endpoint presets → frozen options.

Precedence, highest first: CLI flags → environment → repository file ``.ocr-hook.toml`` (read
from HEAD by the caller) → user file (``$XDG_CONFIG_HOME/ocr-hook/config.toml``) → defaults.
Each layer is a nested dict plus the name of its source; :func:`build_config` merges them,
validates once, and turns the first invalid value into a one-line ConfigError naming key, source
and allowed values. Nothing here reads files or the environment: callers pass them in.

Validation: data that already has the exact shape of the section dataclasses (with the plain text
forms of numbers and booleans the environment carries, ``OCR_HOOK_REVIEW_CONCURRENCY=4``) is
accepted by ``util.check_shape`` without importing pydantic (importing it is the slowest part of
start-up); anything else (other conversions, and every invalid value) goes through pydantic, which
is imported then and builds its validator once.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import ConfigError
from ..util import check_shape, field_types, plain_type
from .models import (
    FLAG_KEYS,
    LIST_KEYS,
    REPO_FILE,
    SECTIONS,
    BudgetConfig,
    CacheConfig,
    Config,
    GateConfig,
    LlmConfig,
    McpConfig,
    ReviewConfig,
    RulesConfig,
    SecurityConfig,
    SelectConfig,
    ToolsConfig,
    all_keys,
    bool_for_number,
    expected_value,
    field_names,
    field_of,
)

if TYPE_CHECKING:
    from .endpoint import Endpoint

__all__ = [
    "FLAG_KEYS", "LIST_KEYS", "REPO_FILE", "SECRET_KEYS", "SECTIONS", "BudgetConfig",
    "CacheConfig", "Config",
    "GateConfig", "Layer", "LlmConfig", "McpConfig", "ReviewConfig", "RulesConfig",
    "SecurityConfig", "SelectConfig", "ToolsConfig", "all_keys", "azure_url", "build_config",
    "check_repo_layer", "env_layer", "field_of", "flag_layer", "merge_layers", "parse_toml",
    "parse_value", "preset_env_layer", "provider_presets", "resolve_endpoint",
]


# The endpoint part lives in config.endpoint (presets file, llm.types): the three names below
# import it only when a run needs it, so loading the settings does not load it


def provider_presets() -> dict[str, dict[str, Any]]:
    """``endpoint.presets``: the provider presets of ``config/providers.json``."""
    from .endpoint import presets as table

    return table()


def azure_url(base: str, deployment: str, api_version: str) -> str:
    """``endpoint.azure_url``: the Azure OpenAI URL of a resource endpoint."""
    from .endpoint import azure_url as url

    return url(base, deployment, api_version)


def resolve_endpoint(cfg: LlmConfig, environ: Mapping[str, str], api_key_from_cmd: str = ""
                     ) -> tuple[Endpoint | None, str]:
    """``endpoint.resolve_endpoint``: (endpoint, "") or (None, why not). Raises
    ConfigError for an unknown provider."""
    from .endpoint import resolve_endpoint as resolve

    return resolve(cfg, environ, api_key_from_cmd)


class Layer(NamedTuple):
    """One configuration source: nested ``data`` and a ``source`` name for error messages;
    ``names`` (dotted key → source) names a key's own source when it is more precise than
    ``source``: "environment variable OCR_HOOK_REVIEW_CONCURRENCY", "command-line option
    --concurrency"."""

    source: str
    data: Mapping[str, Any]
    names: Mapping[str, str] | None = None


def parse_toml(text: str, source: str) -> dict[str, Any]:
    """Parse TOML text; raises ConfigError("<source>: invalid TOML: …")."""
    if sys.version_info >= (3, 11):  # here: only a run with a configuration file parses TOML
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
    MODEL / PROTOCOL. Values stay strings; pydantic converts them. ``names`` says which
    variable set each key (errors name it). Raises ConfigError for a JSON key that is not JSON.
    """
    data: dict[str, Any] = {}
    names: dict[str, str] = {}
    for name, value in environ.items():
        if not name.startswith("OCR_HOOK_") or name in ("OCR_HOOK_SKIP",):
            continue
        rest = name[len("OCR_HOOK_"):].lower()
        key = None
        for section, model in SECTIONS.items():
            prefix = section + "_"
            if rest.startswith(prefix) and rest[len(prefix):] in field_types(model):
                key = f"{section}.{rest[len(prefix):]}"
                break
        if key is None and rest in FLAG_KEYS:
            key = FLAG_KEYS[rest]
            if rest in ("no_filter", "no_cache"):
                value = "false" if value.strip().lower() in ("1", "true", "yes") else "true"
        if key is None:
            continue
        names[key] = f"environment variable {name}"
        if key in LIST_KEYS:
            _set(data, key, [v.strip() for v in value.split(",") if v.strip()])
        elif key in ("llm.extra_headers", "llm.extra_body", "mcp.servers"):
            try:
                _set(data, key, json.loads(value))
            except ValueError as e:
                raise ConfigError(f"invalid {key} in environment variable {name}: not valid"
                                  f" JSON ({e})") from e
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
            names[key] = f"environment variable {env_name}"
    return Layer("environment", data, names)


def merge_layers(layers: Sequence[Layer]) -> tuple[dict[str, Any], dict[str, str]]:
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
        for key, name in (layer.names or {}).items():
            if key in origin and origin[key] == layer.source:
                origin[key] = name
    return data, origin


def expected(key: str) -> str:
    """What a value of ``key`` must be, in words (``models.expected_value``; a time in
    seconds, a ``_s`` key, says so): "a whole number from 1 to 64", "low, medium or high".
    Raises ConfigError for an unknown key."""
    words = expected_value(field_of(key)[2])
    return words.replace("a number", "a number of seconds", 1) if key.endswith("_s") else words


@functools.cache
def _adapter() -> Any:
    """pydantic's validator of ``Config`` (built once, on the first data that needs it)."""
    from pydantic import TypeAdapter

    return TypeAdapter(Config)


def build_config(layers: Sequence[Layer]) -> Config:
    """Merge and validate. Raises ConfigError("invalid <key> = <value> in <source>; allowed:
    …") for the first invalid or unknown key."""
    for layer in layers:  # before merging: a later table must not hide an invalid one
        for section, value in layer.data.items():
            if section in SECTIONS and not isinstance(value, Mapping):
                raise ConfigError(f"[{section}] in {layer.source} must be a table")
    data, origin = merge_layers(layers)
    for section, value in data.items():
        if section not in SECTIONS:
            src = next((s for k, s in origin.items() if k.startswith(section)), "configuration")
            raise ConfigError(f"unknown configuration section [{section}] in {src}; allowed:"
                              f" {', '.join(SECTIONS)}")
        if not isinstance(value, Mapping):
            where = origin.get(section, "configuration")
            raise ConfigError(f"[{section}] in {where} must be a table")
    fast = check_shape(Config, data, text_scalars=True)
    if fast is not None:
        return fast
    flag = bool_for_number(data)  # before pydantic, which reads true as 1
    if flag:
        raise ConfigError(f"invalid {flag} = {str(_get(data, flag)).lower()} in"
                          f" {origin.get(flag, 'configuration')}: must be {expected(flag)}")
    from pydantic import ValidationError

    try:
        return _adapter().validate_python(data)  # type: ignore[no-any-return]
    except ValidationError as e:
        err = e.errors()[0]
        loc = [str(x) for x in err["loc"]]
        key = ".".join(loc[:2])
        model = SECTIONS.get(loc[0])
        value = _get(data, key)
        if key in SECRET_KEYS and isinstance(value, str):
            value = "(hidden)"  # an error line must not print a key
        src = origin.get(key, "configuration")
        if err["type"] in ("extra_forbidden", "unexpected_keyword_argument"):
            allowed = ", ".join(field_names(model)) if model else ""
            raise ConfigError(f"unknown key {key} in {src}; allowed keys: {allowed}") from None
        if err["type"] == "value_error":  # our own validators: their message says it all
            why = str(err["msg"]).removeprefix("Value error, ")
        else:  # a type, choice or bound: what the key takes, in words
            why = f"must be {expected(key)}" if model and len(loc) > 1 else str(err["msg"])
        raise ConfigError(f"invalid {key} = {value!r} in {src}: {why}") from None


def preset_env_layer(layers: Sequence[Layer], environ: Mapping[str, str]) -> Layer:
    """The standard variables of the selected preset (spec §2: ``OPENAI_API_KEY`` /
    ``OPENAI_BASE_URL`` for ``openai``, ``ANTHROPIC_*`` for ``anthropic``, ``DEEPSEEK_API_KEY``…,
    and ``OPENAI_API_VERSION`` for ``azure-openai``) as a layer. Callers put it just below the
    ``OCR_HOOK_*`` / ``OCR_LLM_*`` layer: it overrides the files, never our own variables.
    Only the preset named by ``llm.provider`` is consulted: nothing is guessed."""
    data, _ = merge_layers(layers)
    name = _get(data, "llm.provider")
    # no provider (OCR_LLM_URL…) or "custom": no preset, and the presets file is not read
    preset = provider_presets().get(name) if isinstance(name, str) and name not in ("", "custom") \
        else None
    out: dict[str, Any] = {}
    names: dict[str, str] = {}
    if preset:
        for env_key, key in (("key_env", "api_key"), ("base_url_env", "base_url"),
                             ("api_version_env", "api_version")):
            var = preset.get(env_key)
            value = environ.get(var, "").strip() if var else ""
            if value:
                out[key] = value
                names[f"llm.{key}"] = f"environment variable {var} ({name} preset)"
    return Layer(f"environment ({name} preset variables)", {"llm": out} if out else {}, names)


SECRET_KEYS = ("llm.api_key", "llm.api_key_cmd")


def check_repo_layer(layer: Layer) -> Layer:
    """Refuse secrets and commands in the committed repository file (spec §2, §14): an API key
    there is leaked to everyone with the repository, and ``api_key_cmd`` would let a repository
    run commands on every reviewer's machine. Raises ConfigError naming the key and file."""
    for key in SECRET_KEYS:
        if _get(layer.data, key) is not None:
            raise ConfigError(
                f"{key} is not allowed in {layer.source}: secrets and commands belong in the user"
                " file (`git ocr config set`) or the environment"
            )
    return layer


def parse_value(key: str, text: str, source: str = "") -> Any:
    """A command-line value for ``key`` → the value to store, by the key's type: text for
    string keys; ``true``/``false`` (also 1/0, yes/no, on/off) for booleans; numbers; for
    lists a TOML array or comma-separated text; for tables a TOML inline table or JSON object.
    Raises ConfigError naming the key, ``source`` (where the text came from: "`git ocr config
    set review.concurrency`") and what the key takes, in words."""
    at = f" in {source}" if source else ""
    section, name, info = field_of(key)
    ann = plain_type(info)
    origin = getattr(ann, "__origin__", None)
    args = [a for a in getattr(ann, "__args__", ()) if a is not type(None)]
    if ann is bool:
        low = text.strip().lower()
        if low in ("true", "1", "yes", "on"):
            return True
        if low in ("false", "0", "no", "off"):
            return False
        raise ConfigError(f"invalid {key} = {text!r}{at}: must be true or false")
    if ann in (int, float) or (args and all(a in (int, float) for a in args)):
        kind = int if int in (args or [ann]) and ann is not float else float
        try:
            return kind(text.strip())
        except ValueError:
            raise ConfigError(f"invalid {key} = {text!r}{at}: must be {expected(key)}"
                              ) from None
    if origin is list:
        t = text.strip()
        if t.startswith("["):
            return _toml_value(t, key, at)
        return [v.strip() for v in t.split(",") if v.strip()]
    if origin is dict:
        t = text.strip()
        if t.startswith("{"):
            try:
                value = json.loads(t)
            except ValueError:
                value = _toml_value(t, key, at)
            if isinstance(value, dict):
                return value
        raise ConfigError(f"invalid {key} = {text!r}{at}: must be a table such as"
                          ' {"X-Team" = "core"} or a JSON object')
    return text


def _toml_value(text: str, key: str, at: str = "") -> Any:
    try:
        return parse_toml(f"v = {text}", "value")["v"]
    except ConfigError as e:
        raise ConfigError(f"invalid {key} = {text!r}{at}: not a TOML value ({e})") from None


# command-line flag (argparse dest) → config key; boolean switches are handled below
_FLAG_LAYER_KEYS = {
    "effort": "review.effort",
    "concurrency": "review.concurrency",
    "timeout": "review.timeout_s",
    "max_tokens_budget": "review.max_tokens_budget",
    "max_tools": "review.max_tool_rounds",
    "tools": "tools.file",
    "background": "review.background",
    "background_file": "review.background_file",
    "provider": "llm.provider",
    "model": "llm.model",
    "mode": "gate.mode",
    "fail_on": "gate.fail_on",
}


def flag_layer(flags: Mapping[str, Any]) -> Layer:
    """The command-line layer from parsed flag values (argparse dest → value; None means not
    given): ``--exclude`` items are split on commas, ``--no-cache``/``--no-filter`` turn
    ``cache.enabled``/``review.filter`` off, ``--filter`` turns ``review.filter`` on
    (``--no-filter`` wins when both are given). ``names`` names each key's option
    ("command-line option --concurrency"). Pure."""
    data: dict[str, dict[str, object]] = {}
    names: dict[str, str] = {}

    def put(key: str, value: object, attr: str) -> None:
        section, name = key.split(".")
        data.setdefault(section, {})[name] = value
        names[key] = f"command-line option --{attr.replace('_', '-')}"

    for attr, key in _FLAG_LAYER_KEYS.items():
        v = flags.get(attr)
        if v is not None:
            put(key, v, attr)
    if flags.get("exclude"):
        put("select.exclude",
            [g.strip() for item in flags["exclude"] for g in item.split(",") if g.strip()],
            "exclude")
    if flags.get("no_cache"):
        put("cache.enabled", False, "no_cache")
    if flags.get("filter"):
        put("review.filter", True, "filter")
    if flags.get("no_filter"):
        put("review.filter", False, "no_filter")
    return Layer("command line", data, names)
