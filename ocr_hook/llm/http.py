"""HTTP transport for LLM calls: a requests.Session, the time limit of a request, retries,
and translation of every failure into a typed LlmError (spec §13).

Time (spec §13.3): ``llm.timeout_s`` bounds one request as a whole, per request and not per
attempt: connect, send, headers and body of every attempt, and the waits between attempts. A
retry is made only while time is left. A watchdog (``llm.watchdog``) enforces it against a
server that trickles bytes; each attempt's connect and read timeouts are also at most the time
left, and at most the run's time left (``before_attempt``).

Retry policy (spec §13; that of the official OpenAI and Anthropic Python SDKs): 408, 409,
429 (except quota exhaustion), 5xx, 529 and connection errors are retried up to
``max_retries`` times. The wait is ``retry-after-ms`` (milliseconds) or ``retry-after``
(seconds or an HTTP date) when the server sends one; a wait above 120 s means "do not retry";
otherwise 0.5 s·2^n capped at 8 s with up to 25 % jitter. ``x-should-retry: true|false``
overrides the status rule. 400/401/402/403/404/405/413/422/501 (405, 501: a server that does
not speak the API) and context-length errors are never retried. An error object in a 200 body
is an error, classified by its own code. The loop is ours, not urllib3's ``Retry``: the
decision reads the body (``insufficient_quota``) and each attempt passes ``before_attempt``.

Bodies are read up to RESPONSE_MAX_BYTES; a larger reply is a final error (``too_large``),
never parsed. A lone surrogate escaped in a reply (``"\\ud800"``: valid JSON no UTF-8 can
carry) becomes U+FFFD where the reply is decoded.
"""

from __future__ import annotations

import contextlib
import email.utils
import json
import logging
import math
import random
import re
import socket
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple
from urllib.parse import urlsplit, urlunsplit

import requests

from ..errors import DeadlineExceeded, LlmError
from .types import may_hold_surrogates, replace_surrogates
from .watchdog import Watch, WatchedAdapter, watched_session

log = logging.getLogger(__name__)

MAX_RETRY_AFTER_S = 120.0  # spec §13 (the SDKs' limit)
# Largest response body read: decoding a huge reply whole would cost memory and time. A reply of
# llm.max_output_tokens (16,384) tokens with reasoning is well under 1 MiB of JSON; the body is
# streamed and reading stops past this size, so memory stays bounded whatever the server sends.
RESPONSE_MAX_BYTES = 8 * 1024 * 1024
READ_CHUNK_BYTES = 64 * 1024
BACKOFF_BASE_S = 0.5  # openai-python / anthropic-sdk-python _base_client INITIAL_RETRY_DELAY
BACKOFF_MAX_S = 8.0  # … MAX_RETRY_DELAY

_CONTEXT_MARKERS = (
    "context_length_exceeded",  # OpenAI code
    "context length",
    "maximum context",  # OpenAI / vLLM "maximum context length is N tokens"
    "exceed_context_size",  # llama.cpp server type
    "exceeds the available context",
    "prompt is too long",  # Anthropic
    "model_context_window_exceeded",
    "input is too long",
    "reduce the length of the messages",
)
_QUOTA_MARKERS = (
    "insufficient_quota",  # OpenAI 429 code/type: not retryable
    "exceeded your current quota",
    "billing_error",  # Anthropic 402
    "insufficient balance",  # DeepSeek 402
    "arrearage",  # DashScope: account overdue
)


class SessionPerThread:
    """One ``requests.Session`` (with its ``watchdog.watched_session``) per calling thread,
    made on first use: requests promises no thread safety for a shared Session."""

    def __init__(self) -> None:
        self._local = threading.local()

    def get(self) -> requests.Session:
        s: requests.Session | None = getattr(self._local, "session", None)
        if s is None:
            s, _watch = watched_session()
            self._local.session = s
        return s


def _error_text(body: Any) -> tuple[str, str]:
    """(message, code-or-type) from an OpenAI / Anthropic / gateway error body. Handles
    ``{"error": {...}}``, ``{"error": "text"}``, ``{"detail": "<JSON text>"}`` and bare text."""
    if isinstance(body, dict):
        err = body.get("error", body.get("detail", body))
        if isinstance(err, str):
            try:
                inner = json.loads(err)
            except ValueError:
                return err, ""
            return _error_text(inner) if isinstance(inner, dict) else (err, "")
        if isinstance(err, dict):
            msg = str(err.get("message") or err.get("msg") or shorten(json.dumps(err), 300))
            code = " ".join(str(err[k]) for k in ("code", "type") if err.get(k) is not None)
            return msg, code
    return _plain_text(str(body)), ""


HTML_MESSAGE_MAX_CHARS = 120  # an HTML error page quoted on the NOT REVIEWED line


def _plain_text(text: str) -> str:
    """An error body as one short line: for an HTML page (a proxy's or web server's error
    page) its ``<title>``, else its first text with tags, scripts and styles removed, at most
    HTML_MESSAGE_MAX_CHARS; other text cut to 300 characters."""
    import html  # only an error page needs its entities decoded

    if not re.search(r"<(?:!doctype\s+html|html|head|body|title|h1|p)\b", text[:2000], re.I):
        return shorten(text, 300)
    title = re.search(r"<title[^>]*>(.*?)</title>", text, re.I | re.S)
    found = title.group(1) if title and title.group(1).strip() else ""
    if not found:
        body = re.sub(r"<(script|style)\b.*?</\1\s*>|<!--.*?-->", " ", text, flags=re.I | re.S)
        found = re.sub(r"<[^>]*>", " ", body)
    return shorten(html.unescape(found), HTML_MESSAGE_MAX_CHARS) or "(HTML page)"


def _endpoint_hint(status: int, url: str, model: str) -> tuple[str, str]:
    """(" from URL", "; check …") for a 404, 405 or 501: the settings that decide where a
    request goes, with this request's values (protocol: from the URL's ``/chat/completions``
    or ``/messages``)."""
    shown = _loggable_url(url) if url else ""
    where = f" from {shown}" if shown else ""
    path = urlsplit(url).path.rstrip("/") if url else ""
    protocol = ("openai" if path.endswith("/chat/completions")
                else "anthropic" if path.endswith("/messages") else "")
    proto = f"llm.protocol ({protocol})" if protocol else "llm.protocol"
    if status == 404:
        named = f"llm.model ({shorten(model, 80)})" if model else "llm.model"
        return where, f"; check {named}, {proto} and the base URL (llm.base_url)"
    speaks = f"the {protocol} API" if protocol else "this API"
    return where, (f"; the server at this URL does not take {speaks}: check the base URL"
                   f" (llm.base_url) and {proto}")


def classify(status: int, body: Any, *, url: str = "", model: str = "") -> LlmError:
    """Map an HTTP status and error body to a typed, one-line LlmError (``kind`` one of auth,
    quota, rate_limit, overloaded, context_length, bad_request, server). The request's ``url``
    (shown without user info or query) and ``model`` go into the hint of a 404, 405 or 501."""
    msg, code = _error_text(body)
    low = f"{msg} {code}".lower()
    if status == 402 or any(m in low for m in _QUOTA_MARKERS):
        return LlmError(f"LLM quota or credit exhausted (HTTP {status}): {msg}", kind="quota",
                        status=status)
    if status == 413 or any(m in low for m in _CONTEXT_MARKERS):
        return LlmError(f"LLM context length exceeded (HTTP {status}): {msg}",
                        kind="context_length", status=status)
    if status in (401, 403):
        return LlmError(f"LLM authentication failed (HTTP {status}): {msg}; check the API key"
                        " (llm.api_key, llm.api_key_cmd or the provider's key variable)",
                        kind="auth", status=status)
    if status in (404, 405, 501):
        where, hint = _endpoint_hint(status, url, model)
        what = "endpoint or model not found" if status == 404 else "endpoint refused the call"
        return LlmError(f"LLM {what} (HTTP {status}{where}): {msg}{hint}", kind="bad_request",
                        status=status)
    if status == 429:
        return LlmError(f"LLM rate limited (HTTP 429): {msg}", kind="rate_limit", status=status,
                        retryable=True)
    if status in (503, 529) or "overloaded" in low:
        return LlmError(f"LLM overloaded (HTTP {status}): {msg}", kind="overloaded",
                        status=status, retryable=True)
    if status in (408, 409) or status >= 500:
        return LlmError(f"LLM server error (HTTP {status}): {msg}", kind="server", status=status,
                        retryable=True)
    return LlmError(f"LLM rejected the request (HTTP {status}): {msg}", kind="bad_request",
                    status=status)


def retry_after_s(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or HTTP date), or
    None when absent or unparsable. ``headers`` must be case-insensitive (requests' are)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    ra = headers.get("retry-after")
    if not ra:
        return None
    try:
        return max(0.0, float(ra))
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(ra)
        except (TypeError, ValueError):
            return None
        return max(0.0, when.timestamp() - (time.time() if now is None else now))


def backoff_s(attempt: int, rng: random.Random | None = None) -> float:
    """Exponential backoff before retry ``attempt`` (0-based): 0.5·2^n s capped at 8 s, minus
    up to 25 % jitter."""
    base = min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2.0**attempt)
    r = float((rng or random).random())
    return base * (1 - 0.25 * r)


MESSAGE_MAX_CHARS = 200  # a library's error text quoted in a one-line error


def shorten(text: str, limit: int = MESSAGE_MAX_CHARS) -> str:
    """``text`` on one line, at most ``limit`` characters, cut at a word boundary with "…"
    (never in the middle of a word)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    if " " in cut:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:") + "…"


_OS_REASONS: tuple[tuple[type[BaseException], str], ...] = (
    (ConnectionRefusedError, "connection refused"),
    (ConnectionResetError, "connection reset by the server"),
    (ConnectionAbortedError, "connection aborted"),
    (BrokenPipeError, "connection closed by the server"),
    (socket.gaierror, "host name not found"),
    (TimeoutError, "timed out"),
)


def _network_reason(e: BaseException) -> str:
    """A short reason for a transport failure, from the operating-system error at the bottom
    of requests' and urllib3's wrappers (``ConnectionRefusedError`` → "connection refused",
    ``socket.gaierror`` → "host name not found"…), or "" when there is none. urllib3 keeps it
    as the ``__cause__``/``__context__`` of the ``reason`` of a ``MaxRetryError`` in
    ``args[0]``."""
    seen: set[int] = set()
    todo: list[BaseException] = [e]
    while todo:
        x = todo.pop(0)
        if id(x) in seen:
            continue
        seen.add(id(x))
        if type(x).__module__ in ("builtins", "socket", "http.client", "ssl"):
            for kind, reason in _OS_REASONS:
                if isinstance(x, kind):
                    return reason
            if isinstance(x, OSError) and x.strerror:
                return str(x.strerror).lower()
        nxt = [x.__cause__, x.__context__, getattr(x, "reason", None), *x.args]
        todo.extend(n for n in nxt if isinstance(n, BaseException))
    return ""


def _transport_error(e: requests.exceptions.RequestException, url: str,
                     timeout_s: float) -> LlmError:
    """requests' exception tree → LlmError (connection | timeout), retryable where another
    attempt may succeed. The message names the reason in a few words ("connection refused"),
    never urllib3's wrapper text."""
    first = shorten(_network_reason(e) or str(e) or type(e).__name__)
    if isinstance(e, requests.exceptions.ConnectTimeout):
        return LlmError(f"cannot connect to LLM endpoint {url} (connect timeout)",
                        kind="connection", retryable=True)
    if isinstance(e, requests.exceptions.ReadTimeout):
        return LlmError(f"LLM request timed out after {timeout_s:g}s (llm.timeout_s)",
                        kind="timeout", retryable=True)
    if isinstance(e, requests.exceptions.SSLError):
        return LlmError(f"TLS error talking to {url}: {first}", kind="connection")
    if isinstance(e, (requests.exceptions.ConnectionError,
                      requests.exceptions.ChunkedEncodingError)):
        return LlmError(f"cannot connect to LLM endpoint {url}: {first}", kind="connection",
                        retryable=True)
    if isinstance(e, (requests.exceptions.InvalidURL, requests.exceptions.MissingSchema,
                      requests.exceptions.InvalidSchema)):
        return LlmError(f"invalid LLM URL {url!r}: {first}", kind="bad_request")
    return LlmError(f"LLM request failed: {first}", kind="connection")


class _Limits(NamedTuple):
    """The time limits of one attempt: ``connect_s`` to connect, ``total_s`` for all of it
    (connect to last byte: the time left of the request, or of the run when that is less;
    ``run_bound`` then). ``request_s`` is ``llm.timeout_s``, named when it runs out."""

    connect_s: float
    total_s: float
    run_bound: bool
    request_s: float


def post_json(
    session: requests.Session,
    url: str,
    headers: Mapping[str, str],
    body: dict[str, Any],
    *,
    connect_timeout_s: float,
    timeout_s: float,
    max_retries: int,
    body_error: Callable[[dict[str, Any]], Any] = lambda b: b.get("error"),
    before_attempt: Callable[[int], float | None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    deadline: float | None = None,
) -> tuple[dict[str, Any], int]:
    """POST ``body`` as JSON; return (decoded JSON object, HTTP requests made).

    ``timeout_s`` (``llm.timeout_s``) bounds the whole request: every attempt from connecting
    to the last byte of the reply (``watchdog``: also against a server that trickles bytes),
    and the waits between attempts; a retry is made only while time is left. ``deadline``
    (monotonic clock) overrides its end: a caller that posts twice for one request shares it.
    ``connect_timeout_s`` bounds each connect. A lone surrogate in ``body`` (text no UTF-8 can
    carry) is sent as U+FFFD.
    ``body_error(payload)`` returns the error object carried by a 200 JSON body (or an LlmError
    describing a reply with no answer in it), or None when the body is a real answer.
    ``before_attempt(n)`` runs before every attempt (n = 0, 1, …); budget and deadline checks
    raise from it; a number it returns (seconds left in the run) caps this attempt's time and
    the wait before the next attempt, so the run's deadline also ends calls in flight.
    Raises LlmError (typed ``kind``, ``attempts``) when the request fails for good (``kind``
    ``timeout`` when ``timeout_s`` ran out), DeadlineExceeded when an attempt was cut off
    because the run's time was up.
    """
    try:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from elsewhere (a tool's output): U+FFFD too
        data = json.dumps(replace_surrogates(body), ensure_ascii=False).encode("utf-8")
    end = time.monotonic() + timeout_s if deadline is None else deadline
    model = str(body.get("model") or "")
    attempt = 0
    while True:
        cap_s = before_attempt(attempt) if before_attempt is not None else None
        left = end - time.monotonic()
        run_bound = cap_s is not None and cap_s < left
        total = cap_s if run_bound else left
        if total <= 0:  # no time left for an attempt (a second post sharing a deadline)
            if run_bound:
                raise DeadlineExceeded("review deadline reached before the LLM request")
            raise LlmError(f"LLM request timed out after {timeout_s:g}s (llm.timeout_s)",
                           kind="timeout", attempts=attempt)
        limits = _Limits(min(connect_timeout_s, total), total, run_bound, timeout_s)
        stop_at = None if cap_s is None else time.monotonic() + cap_s
        shown = _loggable_url(url)
        log.debug("LLM request %d: POST %s (%d bytes)", attempt + 1, shown, len(data))
        t0 = time.monotonic()
        payload, err = _attempt(session, url, data, headers, limits, body_error, model)
        log.debug("LLM request %d: %s after %.2fs", attempt + 1,
                  "answer" if err is None else err.kind, time.monotonic() - t0)
        if payload is not None:
            return payload, attempt + 1
        assert err is not None
        wait = _retry_wait(err, attempt, max_retries, stop_at, end)
        log.info("LLM call failed (%s); retry %d/%d in %.2fs", err.kind, attempt + 1,
                 max_retries, wait)
        sleep(wait)
        attempt += 1


def _loggable_url(url: str) -> str:
    """``url`` for a debug line: without user info or query string (either may hold a key)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
    except ValueError:
        return "(unparsable URL)"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _watch_of(session: requests.Session, url: str) -> Watch | None:
    """The watchdog of ``session``'s adapter for ``url`` (None: a plain adapter, or a URL
    requests has no adapter for; ``post`` then reports the latter)."""
    try:
        adapter = session.get_adapter(url)
    except requests.exceptions.RequestException:
        return None
    return adapter.watch if isinstance(adapter, WatchedAdapter) else None


def _attempt(
    session: requests.Session,
    url: str,
    data: bytes,
    headers: Mapping[str, str],
    limits: _Limits,
    body_error: Callable[[dict[str, Any]], Any],
    model: str = "",
) -> tuple[dict[str, Any] | None, LlmError | None]:
    """One POST within ``limits``: (answer payload, None) or (None, the LlmError describing
    the failure; ``model``, the request's, is named in the hint of a 404). Running out of
    ``limits.total_s`` is a ``timeout`` LlmError naming
    ``llm.timeout_s``, or DeadlineExceeded (raised) when it was the run's time left."""
    watch = _watch_of(session, url)
    try:
        with watch.armed(limits.total_s) if watch is not None else contextlib.nullcontext():
            resp = session.post(url, data=data, headers=dict(headers),
                                timeout=(limits.connect_s, limits.total_s), stream=True)
            raw = read_capped(resp, RESPONSE_MAX_BYTES)
    except LlmError as e:  # too large: final, like any error of the reply itself
        return None, e
    except requests.exceptions.RequestException as e:
        own_connect = (isinstance(e, requests.exceptions.ConnectTimeout)
                       and limits.connect_s < limits.total_s)  # llm.connect_timeout_s
        if (watch is not None and watch.expired) or (
                isinstance(e, requests.exceptions.Timeout) and not own_connect):
            if limits.run_bound:  # the review's deadline ended it (spec §6.4)
                raise DeadlineExceeded("review deadline reached while waiting for the LLM"
                                       ) from e
            return None, LlmError(f"LLM request timed out after {limits.request_s:g}s"
                                  " (llm.timeout_s)", kind="timeout", retryable=True)
        return None, _transport_error(e, _loggable_url(url), limits.request_s)
    text = raw.decode("utf-8", "replace")
    try:
        payload: Any = json.loads(text)
    except ValueError:
        payload = None
    if may_hold_surrogates(text):  # "\\ud800" is valid JSON but no UTF-8 can carry it
        payload = replace_surrogates(payload)
    status = resp.status_code
    inner = body_error(payload) if status == 200 and isinstance(payload, dict) else None
    if status == 200 and isinstance(payload, dict) and not inner:
        return payload, None
    err = _reply_error(text, status, payload, inner, url, model)
    err.retry_after_s = retry_after_s(resp.headers)
    should_retry = resp.headers.get("x-should-retry", "").strip().lower()
    if should_retry == "true" and err.kind not in ("context_length", "quota"):
        err.retryable = True
    elif should_retry == "false":
        err.retryable = False
    return None, err


def _reply_error(text: str, status: int, payload: Any, inner: Any, url: str = "",
                 model: str = "") -> LlmError:
    """The LlmError for an HTTP reply that is not an answer: ``text`` is the body, ``payload``
    the decoded JSON body (None when not JSON), ``inner`` what ``body_error`` found in a 200
    JSON object; ``url`` and ``model`` those of the request (for :func:`classify`'s hints)."""
    if isinstance(inner, LlmError):  # a 200 reply without an answer, described as such
        return inner
    if status == 200 and not isinstance(payload, dict):
        return LlmError(f"LLM returned a 200 body that is not a JSON object:"
                        f" {shorten(repr(text))}",
                        kind="protocol", status=200, retryable=True)
    if status == 200:
        # an error object inside a 200 body: classify by its own numeric code when any
        code = inner.get("code") if isinstance(inner, dict) else None
        if not isinstance(code, int):
            code = inner.get("status") if isinstance(inner, dict) else None
        return classify(code if isinstance(code, int) and code >= 400 else 500,
                        {"error": inner}, url=url, model=model)
    return classify(status, payload if payload is not None else text, url=url, model=model)


def read_capped(resp: requests.Response, max_bytes: int) -> bytes:
    """The body of a streamed response (``stream=True``), read in chunks; stops as soon as it
    grows past ``max_bytes`` (or its Content-Length says it will) and raises a non-retryable
    LlmError("LLM response larger than N MiB", kind ``too_large``): the same request would get
    the same answer. Read failures raise requests' exceptions (the caller translates them)."""
    mib = max_bytes / (1024 * 1024)
    too_large = LlmError(f"LLM response larger than {mib:g} MiB; not read (a reply of"
                         " llm.max_output_tokens is far smaller)", kind="too_large",
                         status=resp.status_code)
    declared = resp.headers.get("content-length", "")
    buf = bytearray()
    try:
        if declared.strip().isdigit() and int(declared) > max_bytes:
            raise too_large
        for chunk in resp.iter_content(READ_CHUNK_BYTES):
            buf += chunk
            if len(buf) > max_bytes:
                raise too_large
    except BaseException:
        resp.close()  # the rest is never read: drop the connection instead of reusing it
        raise
    return bytes(buf)  # fully read: urllib3 has put the connection back into the pool


def _retry_wait(err: LlmError, attempt: int, max_retries: int, stop_at: float | None,
                request_end: float = math.inf) -> float:
    """Seconds to wait before retrying after attempt ``attempt`` (0-based) failed with
    ``err``; sets ``err.attempts`` and raises ``err`` when the failure is final (not
    retryable, retries used up, a Retry-After above MAX_RETRY_AFTER_S, or no time left for
    the wait and another attempt before ``request_end``, the end of ``llm.timeout_s``). The
    wait is the server's Retry-After or the backoff, never past ``stop_at`` (the run's
    deadline); both on the monotonic clock."""
    err.attempts = attempt + 1
    asked = err.retry_after_s
    wait = backoff_s(attempt) if asked is None else asked
    if stop_at is not None:  # never sleep past the run's deadline
        wait = min(wait, max(0.0, stop_at - time.monotonic()))
    if (not err.retryable or attempt >= max_retries
            or (asked is not None and asked > MAX_RETRY_AFTER_S)
            or time.monotonic() + wait >= request_end):
        if attempt:
            err.args = (f"{err.args[0]} (after {attempt + 1} attempts)",)
        raise err
    return wait
