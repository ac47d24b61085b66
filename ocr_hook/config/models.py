"""Configuration models (spec §2): one frozen dataclass per ``[section]`` of the TOML files,
the key tables shared by the environment and the flags, and key lookup for ``git ocr config``.
Pure: no files, no environment. ``layering`` re-exports the section classes and key tables.

The dataclasses are the one schema. ``layering.build_config`` accepts data that already has
their shape with ``util.check_shape`` (so start-up imports no pydantic), and validates
everything else (other conversions, and every error message) with pydantic at the edge, which
reads the same annotations: ``util.Bound`` constraints, ``util.Check`` validators and
``__pydantic_config__`` (unknown keys refused, no ``inf``/``nan``).

The classes are frozen (immutable) but compare by identity (``eq=False``): nothing compares two
configurations, so none gets a generated value ``__eq__``/``__hash__`` (ten of them would be a
measurable part of every run's start-up); compare ``dataclasses.asdict`` values where it would
matter.
"""

from __future__ import annotations

import functools
import re
import typing
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from ..errors import ConfigError
from ..util import Bound, Check, field_types, plain_type

REPO_FILE = ".ocr-hook.toml"

# Upper bounds of the time settings: a value past them is a typo (or ``inf``), and Python's
# waits reject timeouts beyond ~2^31 s with OverflowError in the middle of a run.
LLM_TIMEOUT_MAX_S = 86_400.0  # one request: a day
REVIEW_TIMEOUT_MAX_S = 7 * 86_400.0  # a whole run: a week
# Request fields the client itself writes; llm.extra_body may not replace them (an extra_body
# ``messages`` would replace the review's conversation, so the review would see nothing).
RESERVED_BODY_FIELDS = ("model", "messages", "tools", "tool_choice", "stream", "system")
_HEADER_NAME = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"  # RFC 9110 §5.6.2 token (compiled when used)


def _printable_latin1(value: str) -> bool:
    """True when ``value`` can be sent as an HTTP header value as it is (requests refuses line
    breaks and leading whitespace; http.client encodes values as latin-1)."""
    return (value == value.lstrip() and all(" " <= c <= "~" or "\xa0" <= c <= "\xff"
                                            for c in value))


# pydantic's config of each stdlib dataclass below (``util.check_shape`` reads ``extra`` too):
# unknown keys refused; ``timeout_s = inf`` or ``nan`` is a configuration error (exit 2)
_STRICT = {"extra": "forbid", "allow_inf_nan": False}


def check_http_url(value: str) -> str:
    """``value`` when it is "" or an ``http://``/``https://`` URL with a host; raises ValueError
    otherwise (``not a url``, ``ftp://…``, ``http://`` alone). Pure."""
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


def check_extra_headers(v: dict[str, str]) -> dict[str, str]:
    """``llm.extra_headers`` whose names are HTTP tokens and whose values HTTP can carry;
    raises ValueError naming the first that is not."""
    for name, value in v.items():
        if not re.fullmatch(_HEADER_NAME, name):
            raise ValueError(f"{name!r} is not an HTTP header name")
        if not _printable_latin1(value):
            raise ValueError(f"the value of {name} has a line break, a control character"
                             " or a character HTTP headers cannot carry")
    return v


def check_provider(v: str) -> str:
    """``llm.provider``: "", ``custom`` or a preset of ``config/providers.json`` (read only for
    a named provider); raises ValueError listing them."""
    if v in ("", "custom"):
        return v
    from ..util import load_builtin_json

    names = list(load_builtin_json("providers.json")["providers"])
    if v not in names:
        raise ValueError(f"must be {_one_of(['custom', *names])} (`git ocr llm providers`)")
    return v


def check_api_key(v: str) -> str:
    """``llm.api_key`` that can be sent in a header; raises ValueError (never showing the
    key; layering.build_config masks the value too)."""
    if v and (not _printable_latin1(v) or any(c.isspace() for c in v)):
        raise ValueError("contains a space, a line break or a character HTTP headers"
                         " cannot carry")
    return v


def check_extra_body(v: dict[str, Any]) -> dict[str, Any]:
    """``llm.extra_body`` without the request's own fields (RESERVED_BODY_FIELDS); raises
    ValueError naming them."""
    taken = [k for k in v if k in RESERVED_BODY_FIELDS]
    if taken:
        raise ValueError(f"may not set {', '.join(taken)}: the request's own fields"
                         f" ({', '.join(RESERVED_BODY_FIELDS)}) cannot be replaced")
    return v


def check_allow_patterns(entries: list[str]) -> list[str]:
    """``security.allow_secrets`` entries that compile and match none of ``allow_probes()``;
    raises ValueError for the first that does not (it would silence every secret)."""
    for entry in entries:
        try:
            rx = re.compile(entry)
        except re.error as e:
            raise ValueError(f"{entry!r} is not a valid regular expression ({e}); escape "
                             "special characters of a literal value") from None
        if any(rx.fullmatch(probe) for probe in allow_probes()):
            raise ValueError(f"{entry!r} matches arbitrary values, so it would allow every "
                             "secret (of a kind); list exact values or narrow patterns")
    return entries


@dataclass(frozen=True, eq=False)
class LlmConfig:
    __pydantic_config__ = _STRICT

    provider: Annotated[str, Check(check_provider)] = ""
    base_url: Annotated[str, Check(check_http_url)] = ""
    api_key: Annotated[str, Check(check_api_key)] = field(default="", repr=False)
    api_key_cmd: str = ""
    model: str = ""
    protocol: Literal["openai", "anthropic", ""] = ""
    timeout_s: Annotated[float, Bound(gt=0, le=LLM_TIMEOUT_MAX_S)] = 120.0
    connect_timeout_s: Annotated[float, Bound(gt=0, le=LLM_TIMEOUT_MAX_S)] = 10.0
    max_retries: Annotated[int, Bound(ge=0, le=10)] = 3
    extra_headers: Annotated[dict[str, str], Check(check_extra_headers)] = field(
        default_factory=dict)
    extra_body: Annotated[dict[str, Any], Check(check_extra_body)] = field(default_factory=dict)
    max_output_tokens: Annotated[int, Bound(ge=1)] = 16384
    max_output_tokens_cap: Annotated[int, Bound(ge=1)] | None = None
    output_tokens_field: Literal["max_completion_tokens", "max_tokens", ""] = ""
    context_tokens: Annotated[int, Bound(ge=1000)] = 200_000
    anthropic_version: str = "2023-06-01"
    api_version: str = ""
    prompt_caching: bool = True  # Anthropic cache_control breakpoints, OpenAI prompt_cache_key


@dataclass(frozen=True, eq=False)
class ReviewConfig:
    __pydantic_config__ = _STRICT

    effort: Literal["low", "medium", "high", ""] = "low"  # "" (older files): low
    concurrency: Annotated[int, Bound(ge=1, le=64)] = 8
    max_tool_rounds: Annotated[int, Bound(ge=1)] = 100
    timeout_s: Annotated[float, Bound(gt=0, le=REVIEW_TIMEOUT_MAX_S)] = 300.0
    max_tokens_budget: Annotated[int, Bound(ge=0)] | None = None
    max_group_tokens: Annotated[int, Bound(ge=0)] | None = None  # None: 10 × llm.context_tokens
    # a pushed range of more commits is cut to the newest ones (the rest is reported as not
    # reviewed)
    max_push_commits: Annotated[int, Bound(ge=1)] = 20
    language: str = "English"
    filter: bool = False  # the review filter is opt-in (spec §8.4: it removed nothing on real PRs)
    background: str = ""
    background_file: str = ""
    # spec §3.4.1: a pushed or range review leaves out commits with a passing review note
    trust_notes: bool = True


@dataclass(frozen=True, eq=False)
class SelectConfig:
    """spec §4. The bounds of a large change set (0 = no bound): ``max_file_bytes`` per blob (a
    larger file is ``too_large`` from its size, never read), ``max_files`` files and
    ``max_total_bytes`` of diff text reviewed per run (the rest is not reviewed, with the
    reason)."""

    __pydantic_config__ = _STRICT

    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    review_tests: bool = False
    max_file_bytes: Annotated[int, Bound(ge=0)] = 1_048_576
    max_files: Annotated[int, Bound(ge=0)] = 1000
    max_total_bytes: Annotated[int, Bound(ge=0)] = 2_097_152


@dataclass(frozen=True, eq=False)
class RulesConfig:
    __pydantic_config__ = _STRICT

    file: str = ""
    # the agent guidance files at HEAD (AGENTS.md, CLAUDE.md, .github/copilot-instructions.md,
    # .cursorrules) in the main prompt as project conventions (change.guidance)
    guidance: bool = True


@dataclass(frozen=True, eq=False)
class GateConfig:
    __pydantic_config__ = _STRICT

    mode: Literal["blocking", "advisory"] = "blocking"
    fail_on: Literal["critical", "high", "medium", "low"] = "high"
    on_error: Literal["allow", "block"] = "allow"
    # True: findings flagged pre-existing or on code moved unchanged block too (spec §9)
    block_preexisting: bool = False


@dataclass(frozen=True, eq=False)
class CacheConfig:
    __pydantic_config__ = _STRICT

    enabled: bool = True
    max_mb: Annotated[int, Bound(ge=1)] = 64


@dataclass(frozen=True, eq=False)
class ToolsConfig:
    __pydantic_config__ = _STRICT

    file: str = ""


@dataclass(frozen=True, eq=False)
class SecurityConfig:
    """spec §14. ``allow_secrets``: values that are not findings, each a literal value or a
    regular expression matched against the whole value (``secrets.redaction.find_secrets``'s
    ``allow``); they are still redacted before anything is sent to the model. Each entry must
    compile, and an entry that matches arbitrary text (any of ``allow_probes()``: ``.*``,
    ``\\w+``, ``[A-Za-z0-9]{40}``...) is refused: it would silence every secret.
    ``detect_secrets``: also run detect-secrets over the added lines
    (``secrets.detect_secrets_pass``; the optional extra ``ocr-hook[detect-secrets]``)."""

    __pydantic_config__ = _STRICT

    allow_secrets: Annotated[list[str], Check(check_allow_patterns)] = field(
        default_factory=list)
    detect_secrets: bool = False
    # bytes the secret scan reads from files that are not reviewed (excluded, too large: the
    # blob streamed to its end while this lasts, over a bound); reviewed files are always
    # scanned; a text file left partly unscanned makes the review incomplete
    max_scan_bytes: Annotated[int, Bound(ge=0)] = 4_194_304


@functools.cache
def allow_probes() -> tuple[str, ...]:
    """Texts an allow_secrets entry must not match: empty, one letter, a long run, and random
    values in the alphabets of tokens (base64, hex, URL-safe, AWS key ids, GitHub tokens). Random
    parts are derived from sha256 so no literal token is in the source. Built on first use: only a
    configuration with ``allow_secrets`` entries needs them (hashlib and base64 stay out of the
    start-up)."""
    import base64
    import hashlib

    seed = hashlib.sha256(b"ocr-hook allow_secrets probe").hexdigest()
    return (
        "", "a", "x" * 40, "0" * 16, "password", "hunter2!", "Zq8Lm3Np5Rt7Vw9Y",
        seed[:32], seed.upper()[:40],
        base64.b64encode(hashlib.sha256(seed.encode()).digest()).decode()[:40],
        base64.urlsafe_b64encode(hashlib.sha512(seed.encode()).digest()).decode()[:64],
        "AKIA" + base64.b32encode(hashlib.sha256(b"aws").digest()).decode()[:16],
        "gh" + "p_" + base64.b64encode(hashlib.sha256(b"gh").digest()).decode()[:36].replace(
            "+", "a").replace("/", "b"),
        "random text, with spaces: and punctuation!",
    )


@dataclass(frozen=True, eq=False)
class BudgetConfig:
    """spec §13.7: money caps in US dollars (None: no cap), checked before a run's first model
    call against the usage ledger (``pipeline.spend``) priced by ``config/providers.json``:
    ``daily_usd`` per UTC day, ``monthly_usd`` per UTC calendar month. The repository file may
    only lower them (``repo_file.cap_repo_budget``)."""

    __pydantic_config__ = _STRICT

    daily_usd: Annotated[float, Bound(ge=0)] | None = None
    monthly_usd: Annotated[float, Bound(ge=0)] | None = None


@dataclass(frozen=True, eq=False)
class McpConfig:
    __pydantic_config__ = _STRICT

    servers: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class TelemetryConfig:
    """spec §11.7: OpenTelemetry traces of each review (the optional extra ``ocr-hook[otel]``).
    ``enabled``: export even without ``OTEL_EXPORTER_OTLP_ENDPOINT`` (then to the OTLP default,
    ``http://localhost:4318``); ``content``: spans may carry prompt, reply, tool and comment
    text (redacted). User layers only: the repository file may set neither (spec §2.5)."""

    __pydantic_config__ = _STRICT

    enabled: bool = False
    content: bool = False


@dataclass(frozen=True, eq=False)
class Config:
    """The whole validated configuration."""

    __pydantic_config__ = _STRICT

    llm: LlmConfig = field(default_factory=LlmConfig)
    review: ReviewConfig = field(default_factory=ReviewConfig)
    select: SelectConfig = field(default_factory=SelectConfig)
    rules: RulesConfig = field(default_factory=RulesConfig)
    gate: GateConfig = field(default_factory=GateConfig)
    cache: CacheConfig = field(default_factory=CacheConfig)
    tools: ToolsConfig = field(default_factory=ToolsConfig)
    mcp: McpConfig = field(default_factory=McpConfig)
    security: SecurityConfig = field(default_factory=SecurityConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    telemetry: TelemetryConfig = field(default_factory=TelemetryConfig)


SECTIONS: dict[str, type] = dict(field_types(Config))

# CLI flag / short env names → config keys (spec §1: every flag has a key and an OCR_HOOK_* var)
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



def bool_for_number(data: Any) -> str:
    """The first ``section.name`` key of merged settings ``data`` whose field takes a number
    (int or float) but whose value is a TOML boolean, else "": pydantic would read ``true`` as
    1 (``budget.daily_usd = true`` a $1 cap, ``review.timeout_s = true`` one second)."""
    if not isinstance(data, dict):
        return ""
    for section, values in data.items():
        model = SECTIONS.get(section)
        if model is None or not isinstance(values, dict):
            continue
        types_ = field_types(model)
        for name, value in values.items():
            if type(value) is bool and plain_type(types_.get(name)) in (int, float):
                return f"{section}.{name}"
    return ""


def _bound_of(tp: Any) -> Bound:
    """The ``Bound`` of annotation ``tp`` (also inside ``… | None``), or an empty one."""
    for arm in (tp, *typing.get_args(tp)):
        if typing.get_origin(arm) is Annotated:
            found = [m for m in arm.__metadata__ if isinstance(m, Bound)]
            if found:
                return found[0]
    return Bound()


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _one_of(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def expected_value(tp: Any) -> str:
    """What a value of a key with annotation ``tp`` (``field_of``'s third value) must be, in
    words, for error messages: "low, medium or high" (a ``Literal``; "" means the default and
    is not listed), "true or false", "a whole number from 1 to 64", "a number above 0 and at
    most 86400", "a whole number of 0 or more", "a list of texts", "a table of texts",
    "text"."""
    base = plain_type(tp)
    args = typing.get_args(base)
    if typing.get_origin(base) is Literal:
        return _one_of([str(a) for a in args if a != ""])
    if base is bool:
        return "true or false"
    if base in (int, float):
        b = _bound_of(tp)
        noun = "a whole number" if base is int else "a number"
        low = (f"above {_num(b.gt)}" if b.gt is not None else
               f"{_num(b.ge)}" if b.ge is not None else "")
        if low and b.le is not None:
            return (f"{noun} from {low} to {_num(b.le)}" if b.gt is None
                    else f"{noun} {low} and at most {_num(b.le)}")
        if low:
            return f"{noun} {low}" if b.gt is not None else f"{noun} of {low} or more"
        return noun
    origin = typing.get_origin(base)
    if origin is list:
        return "a list of texts" if args and plain_type(args[0]) is str else "a list"
    if origin is dict:
        return "a table of texts" if len(args) == 2 and plain_type(args[1]) is str else "a table"
    return "text" if base is str else getattr(base, "__name__", str(base))
