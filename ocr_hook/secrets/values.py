"""The value checks of the secret rules (spec §14): whether a text a rule matched is a
secret, or a placeholder, a reference to code or plain data. Pure: no I/O.

- Placeholders (every rule): `changeme`, `xxxxxx`, `<your-token>`, `${VAR}`, `{{ x }}`,
  `AKIA...EXAMPLE`, a lone common word such as `password` or `admin`.
- Code and data (heuristic rules, those with a `min_entropy`): calls and subscripts
  (`get_password()`, `os.environ[`, `$jwt->encode([`, `Config::get(`), member access whose
  parts are names (`process.env.API_KEY`, `$this->config->key`, `props?.token`), `$VAR`,
  numbers, URLs and ARNs without credentials, names and paths made of words
  (`MY_APP_SECRET_V2`), also with the closing brackets of the call they end
  (`max_tokens=max_tokens)`). A dotted value with a random part is no name: Vault's
  `hvs.CAES…` and Mapbox's `sk.eyJ…` are values.
- Entropy (heuristic rules): the value's Shannon entropy in bits per character must reach the
  rule's `min_entropy`, 0.5 less for hex-only values (whose alphabet has 16 characters).
"""

from __future__ import annotations

import math
import re
from collections import Counter

_ALNUM = re.compile(r"[A-Za-z0-9]")
# Placeholder checks. Words are looked for only in values up to this length, so that a long random
# body (a PEM key, ~1,700 base64 characters) is not skipped because "dummy" occurs in it by chance.
_PLACEHOLDER_WORDS = ("example", "changeme", "change_me", "placeholder", "dummy", "redacted",
                      "your_", "your-", "<your", "xxxxxx", "******")
_PLACEHOLDER_WORDS_MAX_LEN = 256
_PLACEHOLDER_VALUES = frozenset({
    "password", "passwd", "pass", "secret", "changeme", "change_me", "admin", "root", "test",
    "guest", "user", "username", "postgres", "mysql", "redis", "example", "dummy", "placeholder",
    "none", "null", "nil", "undefined", "todo", "tbd", "xxx", "***", "...",
    "token", "apikey", "api_key", "api-key", "key", "value", "string", "pat",
})
_ANGLE_PLACEHOLDER = re.compile(r"<[A-Za-z][\w .\-]*>")  # arn:aws:kms:<region>:..., <user>:<pw>
_PLACEHOLDER_RE = re.compile(
    r"<[^<>]*>"                       # <your-token>
    r"|\$\{[^{}]*\}"                  # ${VAR}
    r"|\$\(?[A-Za-z_][A-Za-z0-9_]*\)?"  # $VAR, $(VAR)
    r"|%[A-Za-z_][A-Za-z0-9_]*%"      # %VAR%
    r"|\{[^{}]*\}"                    # {password} (str.format)
    r"|(.)\1*"                        # one repeated character: xxxxxxxx, ********
)
_TEMPLATE_MARKS = ("${", "{{", "}}", "%(", "$(", "[REDACTED:")  # the last: redaction's own

# Code-reference checks for heuristic rules: a value that names something rather than being it.
_WORDY_PART = re.compile(r"[a-z]+[0-9]*|[A-Z]+[0-9]*|[A-Z][a-z]+[0-9]*|[0-9]+")
_CAMEL_CASE = re.compile(  # getTokenFromVault, PKCS7PrivateKeyTypes, apiKey
    r"(?:[A-Z]{2,}[0-9]*(?=[A-Z][a-z]{2})|[A-Z]?[a-z]{2,}[0-9]*)"
    r"(?:[A-Z]{2,}[0-9]*(?=[A-Z][a-z]{2})|[A-Z][a-z]{2,}[0-9]*)+")
_PART_SEPARATORS = re.compile(r"[_\-/.:]")
_SIGIL_NAME = re.compile(r"[$%@!&*][A-Za-z_][\w.\-]*%?")  # $TOKEN, %APPDATA%, *yaml_alias
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://|[au]rn:")  # plain URLs, ARNs and URNs
# Member access: a.b, $a->b, A::b, a?.b (JS optional chaining), each part a name.
_MEMBER = r"(?:\.|->|::|\?\.)"
_MEMBER_CHAIN = re.compile(rf"[@$]?[A-Za-z_$][\w$]*(?:{_MEMBER}[A-Za-z_$][\w$]*)+")
# A call or subscript of a name or member chain, with generic arguments before the call:
# get_password(), os.environ[, $jwt->encode([, Config::get(, configService.get<string>(
_CALL_OR_INDEX = re.compile(
    rf"[@$]?[A-Za-z_$][\w$]*(?:{_MEMBER}[A-Za-z_$][\w$]*)*(?:<[\w.,\[\] ]*>)?[(\[]")
_MEMBER_SPLIT = re.compile(_MEMBER)
_CLOSERS = ")]};,"
# The runs an identifier is made of (an acronym, a word, a letter, a number), and their least
# average length in a name: MLKEM768X25519PrivateKey is 6 runs in 24 characters (4 each), a
# random base62 run averages under 2.
_NAME_RUN = re.compile(r"[A-Z]{2,}(?![a-z])|[A-Z]?[a-z]+|[A-Z]|[0-9]+|[^A-Za-z0-9]+")
_MIN_NAME_RUN = 3  # what ends the call a name is an argument of: f(x=a.b), g(max_tokens)
_CODE_CHARS = frozenset("{}")
# Hex has at most 4 bits per character, and a random 16-digit hex value averages about 3.2, so
# hex-only values get this much off a rule's min_entropy.
_HEX = re.compile(r"[0-9a-fA-F]+")
_HEX_ENTROPY_ALLOWANCE = 0.5


def is_secret_value(value: str, min_entropy: float | None) -> bool:
    """Whether a value matched by a rule is a real secret: it has a letter or digit and is no
    placeholder; for a heuristic rule (`min_entropy` in bits per character, None for a rule
    whose format is distinctive) it also does not read as code and reaches the entropy (0.5
    less for a hex-only value)."""
    if not _ALNUM.search(value) or is_placeholder(value):
        return False
    if min_entropy is None:
        return True
    threshold = min_entropy - (_HEX_ENTROPY_ALLOWANCE if _HEX.fullmatch(value) else 0.0)
    return not looks_like_code(value) and shannon_entropy(value) >= threshold


def is_placeholder(value: str) -> bool:
    """`changeme`, `xxxxxxxx`, `<your-token>`, `${VAR}`, `{{ secrets.X }}`, `AKIA...EXAMPLE`, ..."""
    stripped = value.strip()
    lowered = stripped.lower()
    if lowered in _PLACEHOLDER_VALUES or _PLACEHOLDER_RE.fullmatch(stripped):
        return True
    if any(mark in stripped for mark in _TEMPLATE_MARKS) or _ANGLE_PLACEHOLDER.search(stripped):
        return True
    return len(lowered) <= _PLACEHOLDER_WORDS_MAX_LEN and any(
        word in lowered for word in _PLACEHOLDER_WORDS)


def looks_like_code(value: str) -> bool:
    """Whether a value names something instead of being a secret: a call or subscript
    (`get_password()`, `os.environ[`, `$jwt->encode([`), a variable (`$TOKEN`), a number, a
    URL or ARN without credentials, member access made of names (`process.env.API_KEY`,
    `$this->apiKey`; not `hvs.CAESIJ9x…`), or a name or path made of words
    (`MY_APP_SECRET_V2`, `getTokenFromVault`, `/run/secrets/db_password`). Closing brackets
    and commas at the end (`max_tokens=max_tokens)`) are ignored."""
    if _CALL_OR_INDEX.match(value) or any(ch in _CODE_CHARS for ch in value):
        return True
    value = value.rstrip(_CLOSERS) or value
    if value.isdigit() or _SIGIL_NAME.fullmatch(value) or _URL.match(value):
        return True
    if _MEMBER_CHAIN.fullmatch(value):
        return all(_is_name(part.lstrip("@$")) for part in _MEMBER_SPLIT.split(value))
    parts = _PART_SEPARATORS.split(value)
    if len(parts) == 1:
        return _CAMEL_CASE.fullmatch(value) is not None
    return all(part == "" or _is_word(part) for part in parts)


def _is_name(part: str) -> bool:
    """A part of a member chain that is a name: `env`, `API_KEY`, `configService`,
    `MLKEM768X25519PrivateKey`; not a random run such as `CAESIJx9KqLm3Np5Rt7Vw9Yb2` (a token
    with dots). A name is made of words, acronyms and numbers a few characters long each; a
    random run changes case or class every one or two characters."""
    if len(part) <= 12:
        return True
    for piece in part.split("_"):
        runs = _NAME_RUN.findall(piece)
        if piece and not _is_word(piece) and len(piece) < _MIN_NAME_RUN * len(runs):
            return False
    return True


def _is_word(part: str) -> bool:
    """`settings`, `API`, `V2`, `Token`, `2024`, `apiKey`; not `8f7d6a5b4c3e2f1a0b9c` or `x9Kq7`."""
    if _CAMEL_CASE.fullmatch(part):
        return True
    return _WORDY_PART.fullmatch(part) is not None and (
        len(part) <= 12 or not any(c.isdigit() for c in part))


def shannon_entropy(value: str) -> float:
    """Shannon entropy of `value` in bits per character (0.0 for ""): -sum(p * log2 p) over the
    frequency p of each distinct character. Random base64 is near 6, hex near 4, words near 3."""
    if not value:
        return 0.0
    total = len(value)
    return -sum(n / total * math.log2(n / total) for n in Counter(value).values())
