"""What every networked runtime needs: retries on transient failures and a rate limit.

Transient: HTTP 429, 5xx, "overloaded" (529), timeouts and dropped connections. Never
retried: other 4xx (a bad request stays bad). Backoff is exponential with full jitter
(AWS architecture blog, "Exponential backoff and jitter"), capped, and the jitter comes
from the trial seed so a run's timing decisions are reproducible too.
"""

import asyncio
import email.utils
import os
import random
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

from pydantic import ConfigDict, Field

from ix.domain.errors import TrialError
from ix.domain.model import Model
from ix.domain.redaction import MIN_SECRET, REDACTED, SECRET_NAME, environment_secrets

T = TypeVar("T")

TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})


def secret_values(extra: Iterable[str | None] = (), *, environment: bool = True) -> list[str]:
    """Values never to show in an error message: `extra` (the key a request used) and, with
    `environment`, every environment value that is a secret (`environment_secrets`); longest
    first, so a secret that contains another is replaced whole."""
    values = {v for v in extra if v and len(v) >= MIN_SECRET}
    if environment:
        values |= set(environment_secrets(os.environ))
    return sorted(values, key=len, reverse=True)


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with each of `secrets` replaced by `[REDACTED]` (a server may echo a key back in
    its error body, and error messages are recorded in `trials.jsonl` and traces)."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


class RetryOptions(Model):
    """Runtime options `retries` (after the first try), `backoff_s`, `backoff_max_s`."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    retries: int = Field(4, ge=0, le=20)
    backoff_s: float = Field(0.5, ge=0)
    backoff_max_s: float = Field(20.0, ge=0)


class Transient(Exception):
    """Raise from inside a retried call to ask for another try (kind: why)."""

    def __init__(self, kind: str, message: str, retry_after_s: float | None = None):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retry_after_s = retry_after_s


async def with_retries(call: Callable[[], Awaitable[T]], options: RetryOptions, *,
                       seed: int = 0, attempt: int = 0,
                       on_retry: Callable[[int, Transient], None] | None = None,
                       secrets: Iterable[str | None] = ()) -> T:
    """`call()`, retried on `Transient` up to `options.retries` times, then a `TrialError`.

    Every message that leaves (to `on_retry`, or in the final `TrialError`) has `secrets`
    and secret-named environment values redacted (`secret_values`)."""
    rng = random.Random((seed << 20) ^ (attempt << 8) ^ 0x5EED)
    extra = list(secrets)
    hidden: list[str] | None = None  # read from the environment on the first message only

    def clean(text: str) -> str:
        nonlocal hidden
        if hidden is None:
            hidden = secret_values(extra)
        return redact(text, hidden)

    for n in range(options.retries + 1):
        try:
            return await call()
        except TrialError as exc:
            cleaned = clean(exc.message)
            if cleaned == exc.message:
                raise
            raise TrialError(exc.kind, cleaned) from None
        except Transient as exc:
            exc.message = clean(exc.message)
            if n == options.retries:
                raise TrialError(exc.kind, f"{exc.message} (gave up after {n + 1} tries)") \
                    from exc
            if on_retry is not None:
                on_retry(n + 1, exc)
            delay = min(options.backoff_max_s, options.backoff_s * 2 ** n) * rng.random()
            if exc.retry_after_s is not None:
                delay = max(delay, min(exc.retry_after_s, options.backoff_max_s))
            await asyncio.sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


def retry_after_header(value: str | None) -> float | None:
    """Seconds to wait from a `Retry-After` header (seconds, or an HTTP date); None when it
    is absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def status_error(status: int, message: str, retry_after_s: float | None = None) -> Exception:
    """The exception for an HTTP error status: `Transient` if worth retrying, else final."""
    if status in TRANSIENT_STATUS or status >= 500:
        kind = "rate_limited" if status == 429 else "overloaded" if status == 529 \
            else "server_error"
        return Transient(kind, f"HTTP {status}: {message}", retry_after_s)
    return TrialError("bad_request" if status < 500 else "server_error",
                      f"HTTP {status}: {message}")


class RateLimitOptions(Model):
    """Runtime options `requests_per_minute` and `tokens_per_minute` (None: unlimited)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    requests_per_minute: float | None = Field(None, gt=0)
    tokens_per_minute: float | None = Field(None, gt=0)


@dataclass
class RateLimiter:
    """A sliding one-minute window of requests and tokens, shared by one subject's trials."""

    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    window_s: float = 60.0

    def __post_init__(self) -> None:
        self._requests: deque[float] = deque()
        self._tokens: deque[tuple[float, int]] = deque()
        self._lock = asyncio.Lock()

    async def acquire(self) -> None:
        """Wait until one more request fits in the window."""
        if self.requests_per_minute is None and self.tokens_per_minute is None:
            return
        async with self._lock:
            while True:
                now = time.monotonic()
                self._expire(now)
                wait = 0.0
                if self.requests_per_minute is not None and \
                        len(self._requests) >= self.requests_per_minute:
                    wait = max(wait, self._requests[0] + self.window_s - now)
                if self.tokens_per_minute is not None and \
                        sum(t for _, t in self._tokens) >= self.tokens_per_minute:
                    wait = max(wait, self._tokens[0][0] + self.window_s - now)
                if wait <= 0:
                    self._requests.append(now)
                    return
                await asyncio.sleep(wait)

    def spent(self, tokens: int) -> None:
        """Record the tokens a finished request used."""
        if self.tokens_per_minute is not None and tokens:
            self._tokens.append((time.monotonic(), tokens))

    def _expire(self, now: float) -> None:
        while self._requests and self._requests[0] <= now - self.window_s:
            self._requests.popleft()
        while self._tokens and self._tokens[0][0] <= now - self.window_s:
            self._tokens.popleft()


__all__ = ["REDACTED", "SECRET_NAME", "RateLimitOptions", "RateLimiter", "RetryOptions",
           "Transient", "redact", "secret_values", "status_error", "with_retries"]
