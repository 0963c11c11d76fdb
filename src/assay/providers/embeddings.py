"""Embedding providers: the shared memo/batching machinery and the OpenAI-compatible client.

Every embedder deduplicates the strings it is asked for, serves repeats from an in-process
memo (bounded LRU), joins requests already in flight for the same string, and sends the rest
in batches of ``embedding_batch_size`` concurrently under the endpoint's adaptive limiter.
The OpenAI-compatible embedder also reads and writes the SQLite provider cache, one entry per
(string, model, endpoint, request parameters), so a rerun sends nothing.

Vectors are float32 from the moment they arrive, so a score computed from a fresh answer and
one computed from the cache are bit-for-bit equal.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from assay.errors import ProviderError
from assay.providers import estimate
from assay.providers.cache import ProviderCache, cache_key
from assay.providers.chat import PROVIDER_KIND
from assay.providers.embedding_body import parse_embeddings
from assay.providers.endpoint import JSONClient
from assay.providers.limiter import Limiter
from assay.providers.pool import Reply
from assay.providers.pricing import cost_usd
from assay.providers.settings import ProviderSettings
from assay.providers.transport import call_provider, endpoint_host
from assay.providers.usage import UsageRecord, cached_record, record

Vector = np.ndarray


@dataclass(frozen=True)
class Embeddings:
    """Vectors aligned with the requested texts, plus the usage this request accounts for."""

    vectors: tuple[Vector, ...]
    usage: tuple[UsageRecord, ...]


MEMO_BYTES = 256 * 1024 * 1024  # per embedder: vectors kept in memory during a run


def _nbytes(value: object) -> int:
    array = getattr(value, "vectors", value)
    return int(getattr(array, "nbytes", 0)) + 64


class _Memo:
    """An LRU of key -> vector(s), bounded by entry count and by the bytes it holds."""

    def __init__(self, size: int, max_bytes: int = MEMO_BYTES) -> None:
        self.size = size
        self.max_bytes = max_bytes
        self.bytes = 0
        self._data: OrderedDict[str, Any] = OrderedDict()

    def get(self, key: str) -> Any:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def put(self, key: str, value: Any) -> None:
        old = self._data.pop(key, None)
        if old is not None:
            self.bytes -= _nbytes(old)
        self._data[key] = value
        self.bytes += _nbytes(value)
        while len(self._data) > 1 and (len(self._data) > self.size or self.bytes > self.max_bytes):
            _, evicted = self._data.popitem(last=False)
            self.bytes -= _nbytes(evicted)

    def __len__(self) -> int:
        return len(self._data)


def _swallow(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()  # mark as retrieved: waiters that never came must not warn


class MemoEmbedder:
    """Shared machinery: dedupe, memo, in-flight joining, batching, deferred usage."""

    kind: str = "abstract"
    bills: bool = False  # whether calls produce usage records (paid providers only)
    contextual: bool = False

    def __init__(self, model: str, *, batch_size: int = 128, memo_size: int = 200_000) -> None:
        self.model = model
        self.batch_size = batch_size
        self._memo = _Memo(memo_size)
        self._inflight: dict[str, asyncio.Future[Vector]] = {}
        self._pending: dict[int, UsageRecord] = {}
        self._key_batch: dict[str, int] = {}
        self._batch_ids = itertools.count()
        self.requests = 0  # batches fetched from the backend (not memo or cache)

    # -- hooks for subclasses ------------------------------------------------------------
    def _key(self, text: str) -> str:
        return text

    async def _fetch(self, texts: list[str]) -> tuple[list[Vector], UsageRecord | None]:
        raise NotImplementedError

    def _cache_get(self, keys: list[str]) -> dict[str, Vector]:
        return {}

    def _cache_put(self, items: list[tuple[str, Vector]]) -> None:
        return None

    # -- public API ------------------------------------------------------------------------
    async def embed(self, texts: Sequence[str]) -> Embeddings:
        """Vectors for ``texts`` (in order); usage for whatever this call had to pay for."""
        keys = [self._key(text) for text in texts]
        found, usage, local = await self._resolve(dict(zip(keys, texts)), defer=False)
        if not usage and local and self.bills:
            usage.append(cached_record(self.model, 0.0))
        return Embeddings(tuple(found[key] for key in keys), tuple(usage))

    async def prefetch(self, texts: Sequence[str]) -> None:
        """Embed many strings ahead of scoring; their usage is claimed by the first consumer."""
        by_key = {self._key(text): text for text in texts}
        await self._resolve(by_key, defer=True)

    # -- machinery ---------------------------------------------------------------------------
    def _claim(self, key: str, usage: list[UsageRecord]) -> None:
        batch = self._key_batch.pop(key, None)
        if batch is not None and batch in self._pending:
            usage.append(self._pending.pop(batch))

    async def _resolve(
        self, by_key: dict[str, str], *, defer: bool
    ) -> tuple[dict[str, Vector], list[UsageRecord], bool]:
        """Vectors by key from the memo, the cache, requests in flight and new requests; the
        usage this caller accounts for; whether any came without a new request."""
        found: dict[str, Vector] = {}
        usage: list[UsageRecord] = []
        local, waiting, missing = self._partition(by_key, found, usage, defer=defer)
        if missing:
            missing, hit = self._from_cache(missing, found, usage, defer=defer)
            local = local or hit
        if missing:
            await self._fetch_missing(missing, by_key, found, usage, defer)
        for key in waiting:
            await self._join(key, by_key, found, usage, defer=defer)
            local = True
        return found, usage, local

    def _partition(
        self,
        by_key: dict[str, str],
        found: dict[str, Vector],
        usage: list[UsageRecord],
        *,
        defer: bool,
    ) -> tuple[bool, list[str], list[str]]:
        """Serve what the memo holds; the keys already in flight, and the ones still missing."""
        local = False
        waiting: list[str] = []
        missing: list[str] = []
        for key in by_key:
            vector = self._memo.get(key)
            if vector is not None:
                found[key] = vector
                local = True
                if not defer:
                    self._claim(key, usage)
            elif key in self._inflight:
                waiting.append(key)
            else:
                missing.append(key)
        return local, waiting, missing

    def _from_cache(
        self, missing: list[str], found: dict[str, Vector], usage: list[UsageRecord], *, defer: bool
    ) -> tuple[list[str], bool]:
        """Serve what the provider cache holds; the keys still missing, and whether any hit."""
        started = time.perf_counter()
        hits = self._cache_get(missing)
        if not hits:
            return missing, False
        for key, vector in hits.items():
            self._memo.put(key, vector)
            found[key] = vector
        missing = [key for key in missing if key not in hits]
        if not missing and not defer and self.bills:
            usage.append(cached_record(self.model, (time.perf_counter() - started) * 1000))
        return missing, True

    async def _join(
        self,
        key: str,
        by_key: dict[str, str],
        found: dict[str, Vector],
        usage: list[UsageRecord],
        *,
        defer: bool,
    ) -> None:
        """Wait for another caller's request of ``key``; fetch it again if it was evicted."""
        future = self._inflight.get(key)
        vector = None
        if future is not None:
            try:
                vector = await asyncio.shield(future)
            except ProviderError as exc:
                # The request belongs to another caller, which reports its usage.
                raise ProviderError(str(exc), status=exc.status, retryable=exc.retryable) from None
        vector = vector if vector is not None else self._memo.get(key)
        if vector is None:  # evicted between resolution and now: fetch again
            await self._fetch_missing([key], by_key, found, usage, defer)
        else:
            found[key] = vector

    async def _fetch_missing(
        self,
        missing: list[str],
        by_key: dict[str, str],
        found: dict[str, Vector],
        usage: list[UsageRecord],
        defer: bool,
    ) -> None:
        """Request ``missing`` in batches, concurrently; others asking meanwhile join in."""
        batches = [
            missing[i : i + self.batch_size] for i in range(0, len(missing), self.batch_size)
        ]
        loop = asyncio.get_running_loop()
        futures: dict[str, asyncio.Future[Vector]] = {}
        for key in missing:
            future: asyncio.Future[Vector] = loop.create_future()
            future.add_done_callback(_swallow)
            futures[key] = self._inflight[key] = future
        try:
            results = await asyncio.gather(
                *(self._fetch([by_key[key] for key in batch]) for batch in batches),
                return_exceptions=True,
            )
            error = self._settle(batches, results, futures, found, usage, defer=defer)
        finally:
            for key, future in futures.items():
                if not future.done():
                    future.cancel()
                if self._inflight.get(key) is future:
                    del self._inflight[key]
        if error is not None:
            if isinstance(error, ProviderError):
                error.usage = tuple(usage)
                raise error
            raise error

    def _settle(
        self,
        batches: list[list[str]],
        results: list[Any],
        futures: dict[str, asyncio.Future[Vector]],
        found: dict[str, Vector],
        usage: list[UsageRecord],
        *,
        defer: bool,
    ) -> BaseException | None:
        """Resolve every batch's futures with its vectors or its error, memo and cache the
        vectors, and account for the usage; the first error, if any."""
        error: BaseException | None = None
        to_cache: list[tuple[str, Vector]] = []
        for batch, result in zip(batches, results):
            if isinstance(result, BaseException):
                error = error or result
                for key in batch:
                    futures[key].set_exception(result)
                continue
            vectors, rec = result
            for key, vector in zip(batch, vectors):
                self._memo.put(key, vector)
                found[key] = vector
                futures[key].set_result(vector)
                to_cache.append((key, vector))
            if rec is not None:
                self._account(rec, batch, usage, defer=defer)
        self._cache_put(to_cache)
        return error

    def _account(
        self, rec: UsageRecord, batch: list[str], usage: list[UsageRecord], *, defer: bool
    ) -> None:
        """A batch's usage: this caller's now, or (prefetching) the first consumer's later."""
        if not defer:
            usage.append(rec)
            return
        batch_id = next(self._batch_ids)
        self._pending[batch_id] = rec
        for key in batch:
            self._key_batch[key] = batch_id


class OpenAIEmbedder(MemoEmbedder):
    """Embeddings from an OpenAI-compatible ``/v1/embeddings`` endpoint, cached in SQLite."""

    kind = PROVIDER_KIND
    bills = True

    def __init__(
        self,
        settings: ProviderSettings,
        model: str,
        *,
        client: JSONClient,
        limiter: Limiter,
        cache: ProviderCache,
        dimensions: int | None = None,
    ) -> None:
        super().__init__(model, batch_size=settings.embedding_batch_size)
        self.settings = settings
        self.host = endpoint_host(settings.base_url)
        self.dimensions = dimensions
        self._client = client
        self._limiter = limiter
        self._cache = cache
        self._params: dict[str, Any] = {"encoding_format": "float"}
        if dimensions is not None:
            self._params["dimensions"] = dimensions
        self.calls = 0  # HTTP requests sent, retries included

    def _key(self, text: str) -> str:
        return cache_key(
            {
                "kind": "embedding",
                "provider": self.kind,
                "base_url": self.settings.base_url or "",
                "model": self.model,
                "params": self._params,
                "input": text,
            }
        )

    def _cache_get(self, keys: list[str]) -> dict[str, Vector]:
        if not self._cache.reads:
            return {}
        return {
            key: np.frombuffer(value, dtype=np.float32)
            for key, value in self._cache.get_many(keys).items()
        }

    def _cache_put(self, items: list[tuple[str, Vector]]) -> None:
        if items and self._cache.writes and not self.settings.dry_run:
            self._cache.put_many(
                [(key, "embedding", self.model, vector.tobytes()) for key, vector in items]
            )

    def _planned(self, texts: list[str]) -> tuple[list[Vector], UsageRecord]:
        """A dry run's stand-in for one request: placeholder unit vectors (never cached) and
        the estimated usage, marked ``planned``; batching stays as in a real run."""
        tokens = estimate.text_tokens(texts)
        cost = cost_usd(self.model, tokens, 0, self.settings.prices)
        usage = record(
            model=self.model,
            prompt_tokens=tokens,
            completion_tokens=0,
            latency_ms=0.0,
            cost_usd=cost,
            cost_source="estimated" if cost is not None else None,
        )
        return [np.ones(1, dtype=np.float32) for _ in texts], {**usage, "planned": True}

    async def _fetch(self, texts: list[str]) -> tuple[list[Vector], UsageRecord | None]:
        if self.settings.dry_run:
            return self._planned(texts)
        what = "embeddings request"
        payload = json.dumps({"model": self.model, "input": list(texts), **self._params}).encode(
            "utf-8"
        )
        sent_at = [0.0]

        async def send() -> Reply:
            self.calls += 1
            sent_at[0] = time.perf_counter()  # latency: the answered attempt, not queueing
            return await self._client.post("embeddings", payload)

        reply, _ = await call_provider(
            send, what=what, host=self.host, settings=self.settings, limiter=self._limiter
        )
        latency = (time.perf_counter() - sent_at[0]) * 1000
        self.requests += 1
        body = reply.body
        vectors, tokens = parse_embeddings(body, len(texts), what=what, host=self.host)
        if self.dimensions is not None and vectors and vectors[0].shape[0] != self.dimensions:
            raise ProviderError(
                f"{what} to {self.host} returned {vectors[0].shape[0]}-dimensional vectors; "
                f"expected {self.dimensions}"
            )
        prompt = tokens["prompt_tokens"] if tokens else 0
        cost = cost_usd(self.model, prompt, 0, self.settings.prices) if tokens else None
        rec = record(
            model=self.model,
            prompt_tokens=prompt,
            completion_tokens=0,
            total_tokens=tokens["total_tokens"] if tokens else 0,
            latency_ms=latency,
            cost_usd=cost,
            cost_source="estimated" if cost is not None else None,
        )
        return vectors, rec
