"""Where metrics get their providers: one client, limiter and memo per event loop and settings.

Metrics stay stateless; they ask for ``chat_provider(settings)`` or ``embedder(settings)`` with
the settings they were built with when they score.
Objects that hold loop-bound state (HTTP connections, semaphores, in-flight futures) are kept
per running event loop, so a test suite or a program that runs several loops never shares
them across loops. The SQLite cache and loaded local models are process-wide.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from assay.providers.cache import close_all, open_cache
from assay.providers.chat import ChatProvider
from assay.providers.endpoint import NO_KEY_PLACEHOLDER, Endpoint
from assay.providers.limiter import Limiter
from assay.providers.settings import ProviderSettings

if TYPE_CHECKING:  # loaded by embedder() only: a judge run sends its first requests sooner
    from assay.providers.embeddings import MemoEmbedder

__all__ = ["NO_KEY_PLACEHOLDER", "aclose", "chat_provider", "embedder", "reset"]

_per_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[Any, ...], Any]] = (
    weakref.WeakKeyDictionary()
)


def _detach_clients(state: dict[tuple[Any, ...], Any]) -> list[Any]:
    """Remove every provider from ``state``; return the HTTP clients that need closing."""
    clients = [
        c for key, value in list(state.items()) if key[0] == "endpoint" for c in value.clients()
    ]
    clients += state.pop(("closer-retired",), [])
    for key in [key for key in state if not key[0].startswith("closer")]:
        del state[key]
    return clients


async def _close_clients(state: dict[tuple[Any, ...], Any]) -> None:
    for client in _detach_clients(state):
        with contextlib.suppress(Exception):
            await client.close()


async def _closer(state: dict[tuple[Any, ...], Any]) -> AsyncIterator[None]:
    """Parked for the loop's lifetime; ``asyncio.run`` finalises it, closing the clients."""
    try:
        yield
    finally:
        state.pop(("closer",), None)  # the generator refers to its loop: let both be collected
        await _close_clients(state)


_starting: set[asyncio.Task[None]] = set()


async def _start(generator: AsyncIterator[None]) -> None:
    await generator.__anext__()


def _state() -> dict[tuple[Any, ...], Any]:
    loop = asyncio.get_running_loop()
    state = _per_loop.get(loop)
    if state is None:
        state = _per_loop[loop] = {}
        # An async generator started in this loop is closed by loop.shutdown_asyncgens()
        # (asyncio.run does that), so HTTP connections never outlive their loop.
        closer = _closer(state)
        state[("closer",)] = closer
        task = loop.create_task(_start(closer))
        _starting.add(task)  # a strong reference until it ran (the loop keeps only weak ones)
        task.add_done_callback(_starting.discard)
    return state


def _endpoint(settings: ProviderSettings) -> tuple[Endpoint, Limiter]:
    """The endpoint of the settings (its clients, made on first use) and its adaptive limiter."""
    state = _state()
    key = ("endpoint", id(settings))
    found = state.get(key)
    if found is None:
        found = state[key] = Endpoint(settings)
    return found, found.limiter


def chat_provider(settings: ProviderSettings, model: str | None = None) -> ChatProvider:
    """The chat client of ``settings`` for ``model`` (default: their judge model)."""
    model = model or settings.judge_model
    state = _state()
    key = ("chat", id(settings), model)
    provider = state.get(key)
    if provider is None:
        endpoint, limiter = _endpoint(settings)
        cache = open_cache(settings.cache_dir, settings.cache_mode)
        provider = state[key] = ChatProvider(
            settings, model, client=endpoint.json, limiter=limiter, cache=cache
        )
    return provider


def embedder(
    settings: ProviderSettings, model: str | None = None, *, dimensions: int | None = None
) -> MemoEmbedder:
    """The embedder of ``settings`` for ``model`` (default: their embedding model)."""
    model = model or settings.resolved_embedding_model
    state = _state()
    key = ("embed", id(settings), settings.embedding_provider, model, dimensions)
    found = state.get(key)
    if found is None:
        found = state[key] = _make_embedder(settings, model, dimensions)
    return found


def _make_embedder(settings: ProviderSettings, model: str, dimensions: int | None) -> MemoEmbedder:
    if settings.embedding_provider == "hashing":
        from assay.providers.hashing import HashingEmbedder

        return HashingEmbedder(model)
    if settings.embedding_provider == "local":
        from assay.providers.local import LocalEmbedder

        return LocalEmbedder(model)
    from assay.providers.embeddings import OpenAIEmbedder

    endpoint, limiter = _endpoint(settings)
    cache = open_cache(settings.cache_dir, settings.cache_mode)
    return OpenAIEmbedder(
        settings, model, client=endpoint.json, limiter=limiter, cache=cache, dimensions=dimensions
    )


async def aclose() -> None:
    """Close this loop's HTTP clients and every cache connection (end of a run)."""
    state = _per_loop.get(asyncio.get_running_loop())
    if state is not None:
        await _close_clients(state)
    close_all()


def reset() -> None:
    """Forget every client and close caches (tests; switching settings in a long process).

    Clients of a loop that is still open are kept aside and closed when that loop shuts down
    (its closer stays registered); new calls get new clients.
    """
    for loop, state in list(_per_loop.items()):
        clients = _detach_clients(state)
        if not loop.is_closed():
            # Closed by the loop's closer when the loop shuts down.
            state[("closer-retired",)] = clients
    close_all()
