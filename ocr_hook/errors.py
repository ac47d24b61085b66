"""Error tree of ocr-hook. ``str(error)`` is always one line meant for the user.

Only ``cli.main`` maps these to exit codes (spec §9: 2 for usage/config errors).
"""

from __future__ import annotations


class OcrError(Exception):
    """Base of every error ocr-hook raises on purpose; its message is one line."""

    def __str__(self) -> str:
        text = super().__str__()
        return " ".join(text.split()) if "\n" in text else text


class ConfigError(OcrError):
    """Invalid configuration value, file or flag (exit code 2)."""


class UsageError(OcrError):
    """The command cannot run on this input (bad ref, merge conflict, not a repository)."""


class GitError(OcrError):
    """A git subprocess failed or timed out; carries git's first stderr line."""

    @classmethod
    def from_process(cls, args: list[str], returncode: int, stderr: bytes) -> GitError:
        """Build ``git <subcommand>: <first non-empty stderr line> (exit N)``."""
        sub = next((a for a in args[1:] if not a.startswith("-") and "=" not in a), "git")
        lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines()]
        first = next((ln for ln in lines if ln), "")
        return cls(f"git {sub}: {first or 'failed'} (exit {returncode})")


class LlmError(OcrError):
    """A failed LLM request after retries.

    ``kind`` is one of: auth, quota, rate_limit, overloaded, context_length, bad_request,
    server, timeout, connection, protocol, too_large. ``retryable`` tells the HTTP layer whether
    another attempt may succeed (spec §13).
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str = "server",
        status: int | None = None,
        retryable: bool = False,
        retry_after_s: float | None = None,
        attempts: int = 1,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.retryable = retryable
        self.retry_after_s = retry_after_s
        self.attempts = attempts  # HTTP requests made before giving up


class BudgetExhausted(OcrError):
    """The run's token budget is used up; no new LLM call may start (spec §6.4)."""


class SpendCapExceeded(BudgetExhausted):
    """The run's next request would pass a money cap (spec §13.7, reason ``spend_cap``); the
    message is the NOT REVIEWED reason."""


class DeadlineExceeded(OcrError):
    """The run's deadline has passed (spec §6.4)."""
