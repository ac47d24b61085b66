"""HTTP transport for LLM calls: a requests.Session, (connect, read) timeouts, retries, and
translation of every failure into LlmError (SPEC §13).

Retry policy (SPEC §13, the official SDKs' policy): 408, 409, 429 (except quota exhaustion),
5xx, 529 and connection errors are retried up to ``max_retries`` times, waiting
``retry-after-ms`` / ``retry-after`` (≤ 120 s) or else 0.5 s·2^n (≤ 8 s) with up to 25 %
jitter. 400/401/402/403/404/422 are never retried. An error object inside a 200 body is an
error. The retry loop is ours rather than urllib3's Retry because the decision depends on the
response body (``insufficient_quota``) and must be counted against the run's token budget.
"""

from __future__ import annotations

import email.utils
import json
import logging
import random
import time
from collections.abc import Callable, Mapping
from typing import Any

import requests

from ..errors import LlmError

log = logging.getLogger(__name__)

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
MAX_RETRY_AFTER_S = 120.0


def _error_text(body: Any) -> tuple[str, str]:
    """(message, code-or-type) from an OpenAI/Anthropic/gateway error body."""
    if isinstance(body, dict):
        err = body.get("error", body.get("detail", body))
        if isinstance(err, str):
            try:
                inner = json.loads(err)
                return _error_text(inner)
            except ValueError:
                return err, ""
        if isinstance(err, dict):
            msg = str(err.get("message") or err.get("msg") or json.dumps(err)[:300])
            code = str(err.get("code") or err.get("type") or "")
            return msg, code
    return str(body)[:300], ""


def classify(status: int, body: Any) -> LlmError:
    """Map an HTTP status and error body to a typed, one-line LlmError."""
    msg, code = _error_text(body)
    low = f"{msg} {code}".lower()
    if "insufficient_quota" in low or "quota" in code.lower() or status == 402:
        return LlmError(f"LLM quota exhausted (HTTP {status}): {msg}", kind="quota", status=status)
    if (
        "context_length" in low
        or "context length" in low
        or "exceed_context_size" in low
        or "prompt is too long" in low
        or "maximum context" in low
    ):
        return LlmError(f"LLM context length exceeded: {msg}", kind="context_length", status=status)
    if status in (401, 403):
        return LlmError(
            f"LLM authentication failed (HTTP {status}): {msg}; check the API key",
            kind="auth",
            status=status,
        )
    if status == 429:
        return LlmError(f"LLM rate limited (HTTP 429): {msg}", kind="rate_limit", status=status,
                        retryable=True)
    if status in (529, 503) or "overloaded" in low:
        return LlmError(f"LLM overloaded (HTTP {status}): {msg}", kind="overloaded", status=status,
                        retryable=True)
    if status in (408, 409) or status >= 500:
        return LlmError(f"LLM server error (HTTP {status}): {msg}", kind="server", status=status,
                        retryable=True)
    if status == 404:
        return LlmError(f"LLM endpoint or model not found (HTTP 404): {msg}", kind="bad_request",
                        status=status)
    return LlmError(f"LLM rejected the request (HTTP {status}): {msg}", kind="bad_request",
                    status=status)


def _retry_after(headers: Mapping[str, str]) -> float | None:
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000.0
        except ValueError:
            pass
    ra = headers.get("retry-after")
    if ra:
        try:
            return float(ra)
        except ValueError:
            parsed = email.utils.parsedate_to_datetime(ra) if ra else None
            if parsed is not None:
                return max(0.0, parsed.timestamp() - time.time())
    return None


def backoff_s(attempt: int, rng: random.Random | None = None) -> float:
    """Exponential backoff for retry ``attempt`` (0-based): 0.5·2^n capped at 8 s, −25 % jitter."""
    base = min(8.0, 0.5 * (2**attempt))
    r = (rng or random).random()
    return base * (1 - 0.25 * r)


def post_json(
    session: requests.Session,
    url: str,
    headers: Mapping[str, str],
    body: dict[str, Any],
    *,
    connect_timeout_s: float,
    read_timeout_s: float,
    max_retries: int,
    error_in_body: Callable[[dict[str, Any]], bool] = lambda b: "error" in b,
    before_attempt: Callable[[int], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[dict[str, Any], int]:
    """POST ``body`` as JSON; return (decoded JSON object, attempts made).

    ``before_attempt(n)`` runs before every attempt (budget and deadline checks may raise).
    Raises LlmError (typed ``kind``) when the request fails for good.
    """
    data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    attempt = 0
    while True:
        if before_attempt is not None:
            before_attempt(attempt)
        err: LlmError
        try:
            resp = session.post(
                url, data=data, headers=dict(headers), timeout=(connect_timeout_s, read_timeout_s)
            )
        except requests.exceptions.ConnectTimeout:
            err = LlmError(f"cannot connect to LLM endpoint {url} (timeout)", kind="connection",
                           retryable=True)
        except requests.exceptions.ReadTimeout:
            err = LlmError(f"LLM request timed out after {read_timeout_s:g}s", kind="timeout",
                           retryable=True)
        except requests.exceptions.ConnectionError as e:
            reason = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
            err = LlmError(f"cannot connect to LLM endpoint {url}: {reason}", kind="connection",
                           retryable=True)
        except requests.exceptions.RequestException as e:
            err = LlmError(f"LLM request failed: {e}", kind="connection", retryable=False)
        else:
            try:
                payload: Any = resp.json()
            except ValueError:
                payload = resp.text[:500]
            if resp.status_code == 200 and isinstance(payload, dict) and not error_in_body(payload):
                return payload, attempt + 1
            status = resp.status_code
            if status == 200:
                # an error object inside a 200 body: classify by its own code when it has one
                msg, code = _error_text(payload)
                inner = 500
                if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
                    c = payload["error"].get("code")
                    inner = c if isinstance(c, int) and c >= 400 else 500
                err = classify(inner, payload)
                if not isinstance(payload, dict):
                    err = LlmError(f"LLM returned a non-JSON body: {msg[:200]}", kind="protocol")
            else:
                err = classify(status, payload)
                err.retry_after_s = _retry_after(resp.headers)
        if not err.retryable or attempt >= max_retries:
            if attempt:
                err.args = (f"{err.args[0]} (after {attempt + 1} attempts)",)
            raise err
        wait = err.retry_after_s
        if wait is not None and wait > MAX_RETRY_AFTER_S:
            raise err
        if wait is None:
            wait = backoff_s(attempt)
        log.info("LLM call failed (%s); retrying in %.1fs", err.kind, wait)
        sleep(wait)
        attempt += 1
