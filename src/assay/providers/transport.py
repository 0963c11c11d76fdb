"""Provider requests through the shared retry stack (:mod:`assay.providers.limiter`).

Chat and embedding requests go out through :mod:`assay.providers.pool` (httpx) with no retries
of their own: a client's backoff cannot tell the endpoint's other requests to pause or to send
fewer at once, and its attempts would be invisible to the usage count. Here each failure
becomes a :class:`~assay.providers.limiter.Refusal` (connection errors, timeouts, HTTP 429 and
5xx are tried again) or a :class:`~assay.errors.ProviderError` at once (other 4xx, a TLS
failure, anything unexpected). Messages name the request, the endpoint host and the
status, never the key or the response body.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar
from urllib.parse import urlsplit

from assay.errors import ConnectionFailure, GaveUp, ProviderError, StatusFailure, TimedOut
from assay.providers.limiter import (
    Classify,
    Limiter,
    Refusal,
    RetryPolicy,
    call_limited,
)
from assay.providers.retry_after import is_overload, retry_after_seconds
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


def _status_of(exc: Exception) -> tuple[int, Mapping[str, str]] | None:
    """The HTTP status and headers of a status failure (ours or the SDK's), else None."""
    if isinstance(exc, StatusFailure):
        return exc.status, exc.headers
    openai = sys.modules.get("openai")  # not loaded: the failure cannot be one of its errors
    if openai is not None and isinstance(exc, openai.APIStatusError):
        return exc.status_code, exc.response.headers
    return None


def _is_timeout(exc: Exception) -> bool:
    openai = sys.modules.get("openai")
    sdk_timeout = openai is not None and isinstance(exc, openai.APITimeoutError)
    return sdk_timeout or isinstance(exc, TimedOut)


def _is_connection_failure(exc: Exception) -> bool:
    openai = sys.modules.get("openai")
    sdk_failure = openai is not None and isinstance(exc, openai.APIConnectionError)
    return sdk_failure or isinstance(exc, ConnectionFailure)


def classifier(what: str, host: str, timeout_s: float) -> Classify:
    """Maps the pool's and the SDK's failures for one kind of request to refusals or errors."""

    def classify(exc: Exception) -> Refusal | None:
        if isinstance(exc, ProviderError):
            return None
        if _is_timeout(exc):
            return Refusal(f"{what} to {host} timed out after {timeout_s:g}s")
        if _is_connection_failure(exc):
            return Refusal(f"{what} to {host} failed: connection error")
        answer = _status_of(exc)
        if answer is None:
            raise ProviderError(f"{what} to {host} failed: {type(exc).__name__}") from None
        status, headers = answer
        message = f"{what} to {host} failed: HTTP {status}"
        if status != 429 and status < 500:
            raise ProviderError(message, status=status, retryable=False) from None
        return Refusal(
            message,
            status,
            overloaded=is_overload(status, headers),
            retry_after=retry_after_seconds(headers),
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
