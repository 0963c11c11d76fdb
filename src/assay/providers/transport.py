"""Provider requests through the shared retry stack (:mod:`assay.limiter`).

The ``openai`` SDK's own retries are switched off (``max_retries=0`` in the registry): its
backoff cannot tell the endpoint's other requests to pause or to send fewer at once, and its
attempts are invisible to the usage count. Here each SDK failure becomes a
:class:`~assay.limiter.Refusal` (connection errors, timeouts, HTTP 429 and 5xx are tried again)
or a :class:`~assay.errors.ProviderError` at once (other 4xx, anything unexpected). Messages
name the request, the endpoint host and the status, never the key or the response body.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar
from urllib.parse import urlsplit

import openai

from assay.errors import GaveUp, ProviderError
from assay.limiter import (
    Classify,
    Limiter,
    Refusal,
    RetryPolicy,
    call_limited,
    is_overload,
    retry_after_seconds,
)
from assay.providers.settings import ProviderSettings

T = TypeVar("T")
DEFAULT_HOST = "api.openai.com"


def endpoint_host(base_url: str | None) -> str:
    """``host:port`` of an endpoint, without credentials, path or query (safe to print)."""
    if not base_url:
        return DEFAULT_HOST
    parts = urlsplit(base_url)
    host = parts.hostname or "unknown-host"
    return f"{host}:{parts.port}" if parts.port else host


def policy_of(settings: ProviderSettings) -> RetryPolicy:
    """The retry policy a provider's settings ask for."""
    return RetryPolicy(
        max_retries=settings.max_retries,
        base_s=settings.retry_base_s,
        max_wait_s=settings.retry_max_wait_s,
    )


def classifier(what: str, host: str, timeout_s: float) -> Classify:
    """Maps the SDK's failures for one kind of request to refusals or provider errors."""

    def classify(exc: Exception) -> Refusal | None:
        if isinstance(exc, ProviderError):
            return None
        if isinstance(exc, openai.APITimeoutError):
            return Refusal(f"{what} to {host} timed out after {timeout_s:g}s")
        if isinstance(exc, openai.APIConnectionError):
            return Refusal(f"{what} to {host} failed: connection error")
        if not isinstance(exc, openai.APIStatusError):
            raise ProviderError(f"{what} to {host} failed: {type(exc).__name__}") from None
        status = exc.status_code
        message = f"{what} to {host} failed: HTTP {status}"
        if status != 429 and status < 500:
            raise ProviderError(message, status=status, retryable=False) from None
        headers = exc.response.headers
        overloaded = is_overload(status, headers)
        return Refusal(
            message, status, overloaded=overloaded, retry_after=retry_after_seconds(headers)
        )

    return classify


async def call_provider(
    send: Callable[[], Awaitable[T]],
    *,
    what: str,
    host: str,
    settings: ProviderSettings,
    limiter: Limiter,
) -> tuple[T, int]:
    """Run ``send`` in the endpoint's limiter, retrying transient failures; (result, retries)."""
    try:
        return await call_limited(
            limiter,
            send,
            policy=policy_of(settings),
            classify=classifier(what, host, settings.timeout_s),
        )
    except GaveUp as exc:
        raise ProviderError(str(exc), status=exc.status, retryable=True) from None
