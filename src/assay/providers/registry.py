"""Where metrics get their providers: one client, gate and memo per event loop and settings.

Metrics stay stateless; they ask for ``chat_provider()`` or ``embedder()`` when they score.
Objects that hold loop-bound state (HTTP connections, semaphores, in-flight futures) are kept
per running event loop, so a test suite or a program that runs several loops never shares
them across loops. The SQLite cache and loaded local models are process-wide.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from assay.providers.cache import close_all, open_cache
from assay.providers.chat import ChatProvider
from assay.providers.embeddings import MemoEmbedder, OpenAIEmbedder
from assay.providers.retry import Gate
from assay.providers.settings import ProviderSettings, current

NO_KEY_PLACEHOLDER = "assay-no-key"  # keyless endpoints (vLLM, Ollama) still get a bearer header

_per_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[Any, ...], Any]] = (
    weakref.WeakKeyDictionary()
)


def _state() -> dict[tuple[Any, ...], Any]:
    loop = asyncio.get_running_loop()
    state = _per_loop.get(loop)
    if state is None:
        state = _per_loop[loop] = {}
    return state


def _endpoint(settings: ProviderSettings) -> tuple[Any, Gate]:
    """The AsyncOpenAI client and the concurrency gate for the settings' endpoint."""
    state = _state()
    key = ("endpoint", id(settings))
    found = state.get(key)
    if found is None:
        from openai import AsyncOpenAI

        api_key = settings.api_key.get_secret_value() if settings.api_key is not None else ""
        client = AsyncOpenAI(
            api_key=api_key or NO_KEY_PLACEHOLDER,
            base_url=settings.base_url or "https://api.openai.com/v1",
            timeout=settings.timeout_s,
            max_retries=0,
        )
        found = state[key] = (client, Gate(settings.max_concurrency), settings)
    return found[0], found[1]


def chat_provider(model: str | None = None, *, settings: ProviderSettings | None = None) -> ChatProvider:
    """The chat client for ``model`` (default: the judge model) under the current settings."""
    settings = settings or current()
    model = model or settings.judge_model
    state = _state()
    key = ("chat", id(settings), model)
    provider = state.get(key)
    if provider is None:
        client, gate = _endpoint(settings)
        cache = open_cache(settings.cache_dir, settings.cache_mode)
        provider = state[key] = ChatProvider(settings, model, client=client, gate=gate, cache=cache)
    return provider


def embedder(
    model: str | None = None, *, settings: ProviderSettings | None = None, dimensions: int | None = None
) -> MemoEmbedder:
    """The embedder for ``model`` (default: the embedding model) of the configured provider."""
    settings = settings or current()
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
    client, gate = _endpoint(settings)
    cache = open_cache(settings.cache_dir, settings.cache_mode)
    return OpenAIEmbedder(settings, model, client=client, gate=gate, cache=cache, dimensions=dimensions)


async def aclose() -> None:
    """Close this loop's HTTP clients and every cache connection (end of a run)."""
    loop = asyncio.get_running_loop()
    state = _per_loop.pop(loop, {})
    for key, value in state.items():
        if key[0] == "endpoint":
            await value[0].close()
    close_all()


def reset() -> None:
    """Forget every client and close caches (tests; switching settings in a long process)."""
    _per_loop.clear()
    close_all()
