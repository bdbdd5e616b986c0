"""Retries shared by the model backends: when to retry, how long to wait, when to give up.

The backends turn their SDK's retries off and use this loop instead (a :class:`Retrier`
each), so both wait the same way, honour ``Retry-After`` the same way, redact the same
secrets (:func:`backend_secrets`) and map HTTP statuses to the same errors::

    408, 409, 429, 5xx, timeout, connection error   Transient -> retried, then
                                                     ModelUnavailableError
    401, 403                                         ModelConfigError (check the API key)
    404                                              ModelRequestError (unknown model)
    any other 4xx                                    ModelRequestError (the server's message)
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import TypeVar

from skillwire.core.errors import (
    ModelConfigError,
    ModelError,
    ModelRequestError,
    ModelUnavailableError,
)
from skillwire.core.redaction import url_credentials

__all__ = [
    "RETRYABLE_STATUSES",
    "Retrier",
    "RetryPolicy",
    "Sleep",
    "Transient",
    "backend_secrets",
    "call_with_retries",
    "parse_retry_after",
    "status_failure",
]

T = TypeVar("T")
R = TypeVar("R")

Sleep = Callable[[float], Awaitable[None]]
"""An async sleep; :func:`asyncio.sleep` in production, a recorder in tests."""

RETRYABLE_STATUSES = frozenset({408, 409, 429})
"""Statuses below 500 that are worth another try (timeout, lock conflict, rate limit)."""


@dataclass(frozen=True, slots=True)
class Transient:
    """A failure worth retrying: why it failed, and how long the server asked us to wait."""

    reason: str
    retry_after: float | None = None


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How many times to retry and how long to wait between tries.

    The wait before retry ``n`` (0-based) is ``initial_delay * 2**n`` capped at
    ``max_delay``, shortened by up to ``jitter`` (a fraction) so that clients that failed
    together do not retry together. A server's ``Retry-After`` replaces that wait; one
    longer than ``max_retry_after`` ends the retries at once rather than stall a run.
    """

    max_retries: int = 2
    initial_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 60.0
    jitter: float = 0.25

    def delay(self, retry: int, retry_after: float | None, draw: float) -> float | None:
        """Seconds to wait before retry number ``retry``; None means give up now.

        ``draw`` is a number in ``[0, 1)`` that picks the jitter.
        """
        if retry_after is not None and math.isfinite(retry_after):
            if retry_after > self.max_retry_after:
                return None
            return max(0.0, retry_after)
        backoff = min(self.max_delay, self.initial_delay * 2.0 ** min(retry, 64))
        return backoff * (1.0 - self.jitter * draw)


def parse_retry_after(
    headers: Mapping[str, str], now: Callable[[], float] = time.time
) -> float | None:
    """Seconds a response asks us to wait, from ``retry-after-ms`` or ``retry-after``.

    ``retry-after`` may hold seconds or an HTTP date. Unreadable values are ignored.
    """
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return float(millis) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now())


def status_failure(
    status: int,
    detail: str,
    headers: Mapping[str, str],
    *,
    label: str,
    model: str,
    key_hint: str,
    secrets: Sequence[str] = (),
) -> ModelError | Transient:
    """Map an HTTP error status to a :class:`Transient` or the error to raise.

    ``label`` names the backend in messages; ``key_hint`` says where the key comes from;
    ``secrets`` are redacted from the message (the server's ``detail`` may echo them).
    """
    if status >= 500 or status in RETRYABLE_STATUSES:
        return Transient(f"HTTP {status}: {detail}", parse_retry_after(headers))
    if status in (401, 403):
        return ModelConfigError(
            f"{label}: the server refused the credentials (HTTP {status}: {detail}); "
            f"check the API key ({key_hint})",
            secrets=secrets,
        )
    if status == 404:
        return ModelRequestError(
            f"{label}: unknown model {model!r} (HTTP 404: {detail}); "
            "check the model name and the base URL",
            secrets=secrets,
        )
    return ModelRequestError(
        f"{label}: the server rejected the request (HTTP {status}): {detail}", secrets=secrets
    )


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    classify: Callable[[Exception], ModelError | Transient | None],
    *,
    policy: RetryPolicy,
    sleep: Sleep,
    label: str,
    secrets: Sequence[str] = (),
    draw: Callable[[], float] = random.random,
) -> T:
    """Run ``call`` until it succeeds, fails for good, or runs out of retries.

    ``classify`` maps an exception ``call`` raised to a :class:`Transient` (retry), a
    :class:`ModelError` (raise it now), or None for an exception that is not the SDK's
    (a bug: re-raised unchanged). ``secrets`` are redacted from the errors made here.
    """
    attempts = policy.max_retries + 1
    last: Transient | None = None
    for attempt in range(attempts):
        try:
            return await call()
        except Exception as exc:
            outcome = classify(exc)
            if outcome is None:
                raise
            if isinstance(outcome, ModelError):
                raise outcome from exc
            last = outcome
            if attempt + 1 >= attempts:
                raise ModelUnavailableError(
                    f"{label}: {outcome.reason}; gave up after {attempts} attempt(s)",
                    secrets=secrets,
                ) from exc
            wait = policy.delay(attempt, outcome.retry_after, draw())
            if wait is None:
                raise ModelUnavailableError(
                    f"{label}: {outcome.reason}; the server asked to retry after "
                    f"{outcome.retry_after:.0f}s, longer than the "
                    f"{policy.max_retry_after:.0f}s skillwire waits",
                    secrets=secrets,
                ) from exc
        await sleep(wait)
    raise ModelUnavailableError(
        f"{label}: {last.reason if last else 'no attempt made'}", secrets=secrets
    )


def backend_secrets(api_key: str | None, base_url: str | None) -> tuple[str, ...]:
    """What a backend's errors must never show: its key and its ``base_url``'s credentials."""
    return tuple(s for s in (api_key, *url_credentials(base_url)) if s)


@dataclass(frozen=True, slots=True)
class Retrier:
    """One backend's calls to its server: retried by ``policy``, ``sleep`` between tries,
    every error named ``label`` (``openai:<model>``) and redacted of ``secrets``."""

    label: str
    policy: RetryPolicy
    sleep: Sleep
    secrets: tuple[str, ...] = ()

    async def run(
        self,
        attempt: Callable[[], Awaitable[T]],
        classify: Callable[[Exception], ModelError | Transient | None],
        read: Callable[[T], R],
        *,
        expected: str,
    ) -> R:
        """``attempt`` as :func:`call_with_retries` runs it, then its result through ``read``.

        A result ``read`` cannot take (``AttributeError``, ``TypeError``, ``ValueError``)
        is a :class:`ModelError` saying it is not the ``expected`` reply (``"a chat
        completion"``): the server at ``base_url`` speaks another API.
        """
        result = await call_with_retries(
            attempt,
            classify,
            policy=self.policy,
            sleep=self.sleep,
            label=self.label,
            secrets=self.secrets,
        )
        try:
            return read(result)
        except (AttributeError, TypeError, ValueError) as exc:
            raise ModelError(
                f"{self.label}: the server's reply is not {expected} ({exc}); "
                "does base_url point at the API root?",
                secrets=self.secrets,
            ) from exc
