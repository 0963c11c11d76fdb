"""Semantic similarity metrics: cosine-embedding and bertscore-like.

Both ask the configured embedding provider (``assay.providers``) for vectors, so they work
with an OpenAI-compatible endpoint, the offline local model, or the hashing test embedder.
Neither keeps state between samples except ``bertscore-like``'s optional IDF table, which
``prepare`` builds once per run from the dataset's references and never changes afterwards.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np

from assay.errors import MetricConfigError, MetricError, ProviderError
from assay.metrics.base import (
    MetricScore,
    check_bool_option,
    clamp01,
    embedding_label,
    environment_settings,
    expected_string,
    positive_int_option,
    unique,
)
from assay.metrics.lexical import tokenize
from assay.metrics.vectors import check_vectors, cosine, greedy_match, idf_table
from assay.providers.registry import embedder
from assay.providers.settings import ProviderSettings

if TYPE_CHECKING:
    from assay.data.dataset import Sample
    from assay.data.outputs import Output
    from assay.providers.embeddings import MemoEmbedder
    from assay.providers.local import TokenVectors

DEFAULT_MAX_TOKENS = 128  # isolated-token mode, as in the reference implementation


class TokenEmbedder(Protocol):
    """What contextual mode asks of an embedder (one whose ``contextual`` is true: local)."""

    @property
    def max_tokens(self) -> int: ...

    def tokenize(self, text: str) -> list[str]: ...

    async def embed_tokens(self, texts: list[str]) -> list[TokenVectors]: ...


def _token_embedder(embedder: MemoEmbedder) -> TokenEmbedder:
    """``embedder`` as a contextual one; only called once ``embedder.contextual`` was checked."""
    return cast("TokenEmbedder", embedder)


def _embedder(
    settings: ProviderSettings, model: str | None, dimensions: int | None = None
) -> MemoEmbedder:
    """The embedder of ``settings`` for ``model``; ``dimensions`` only for the openai one."""
    if dimensions is not None and settings.embedding_provider != "openai":
        raise MetricError("the 'dimensions' option applies to the openai embedding provider only")
    return embedder(settings, model, dimensions=dimensions)


def _dimensions_option(value: object, metric: str) -> int | None:
    if value is None:
        return None
    return positive_int_option(value, f"{metric} dimensions")


def _usage(records: Sequence[dict[str, Any]]) -> tuple[dict[str, Any], ...] | None:
    return tuple(records) if records else None


def _provider_failure(exc: ProviderError, what: str) -> MetricError:
    usage = tuple(getattr(exc, "usage", ()) or ())
    return MetricError(f"{what} failed: {exc}", usage=usage)


def check_text(text: str, field: str, metric: str) -> str:
    """Reject text that cannot be sent to a model: lone surrogates are not valid UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise MetricError(
            f"{field} must be valid UTF-8 text for {metric} (it contains a lone surrogate)"
        ) from None
    return text


# --------------------------------------------------------------------------- cosine-embedding


@dataclass(frozen=True)
class CosineEmbedding:
    """Paraphrase-tolerant similarity: cos(embed(expected), embed(actual)), clamped to [0, 1].

    ``negative: clamp`` (default, the reference semantics) maps negative similarity to 0;
    ``negative: rescale`` maps [-1, 1] linearly onto [0, 1] instead.
    """

    name: str = "cosine-embedding"
    model: str | None = None
    negative: str = "clamp"
    dimensions: int | None = None
    settings: ProviderSettings = field(
        default_factory=environment_settings, compare=False, repr=False
    )

    def used(self, settings: ProviderSettings) -> dict[str, str]:
        """The embedder this metric calls: its own ``model`` option, else the settings' one."""
        return {
            "method": "embedding",
            "provider": embedding_label(settings),
            "model": self.model or settings.resolved_embedding_model,
        }

    def __post_init__(self) -> None:
        object.__setattr__(self, "dimensions", _dimensions_option(self.dimensions, self.name))
        if self.negative not in ("clamp", "rescale"):
            raise MetricConfigError(
                "cosine-embedding option 'negative' must be 'clamp' or 'rescale'; got "
                f"{self.negative!r}"
            )

    async def prefetch(self, pairs: Sequence[tuple[Sample, Output]]) -> None:
        """Embed every distinct string of a chunk in batched, deduplicated requests."""
        texts: list[str] = []
        for sample, output in pairs:
            if (
                isinstance(sample.expected_output, str)
                and sample.expected_output.strip()
                and output.text.strip()
            ):
                texts += [sample.expected_output, output.text]
        if texts:
            # On failure each sample retries and reports the problem itself.
            with contextlib.suppress(ProviderError):
                await _embedder(self.settings, self.model, self.dimensions).prefetch(unique(texts))

    async def score(self, sample: Sample, output: Output) -> MetricScore:
        expected = check_text(expected_string(sample, self.name), "expected_output", self.name)
        actual = check_text(output.text, "output", self.name)
        if not expected.strip() or not actual.strip():
            both = not expected.strip() and not actual.strip()
            empty = "both" if both else "expected" if not expected.strip() else "actual"
            return MetricScore(1.0 if both else 0.0, {"empty": empty, "cosine_similarity": None})
        embedder = _embedder(self.settings, self.model, self.dimensions)
        try:
            result = await embedder.embed([expected, actual])
        except ProviderError as exc:
            raise _provider_failure(exc, "embeddings request") from None
        usage = _usage(result.usage)
        try:
            check_vectors(result.vectors, 2, self.name)
        except MetricError as exc:
            raise MetricError(str(exc), usage=usage or ()) from None
        e, a = result.vectors
        raw = cosine(e, a)
        value = clamp01(raw) if self.negative == "clamp" else clamp01((1.0 + raw) / 2.0)
        details = {
            "expected_dim": int(e.shape[0]),
            "actual_dim": int(a.shape[0]),
            "cosine_similarity": round(raw, 10),
            "clamped_score": value,
            "embedding_provider": embedder.kind,
        }
        return MetricScore(value, details, usage=usage)


# --------------------------------------------------------------------------- bertscore-like


@dataclass(frozen=True)
class BertScoreLike:
    """BERTScore-style F1 between output tokens and expected tokens.

    ``mode: auto`` (default) uses contextual token embeddings when the provider has them (the
    local model: real BERTScore over word pieces) and otherwise embeds each unique word in
    isolation (OpenAI-compatible or hashing providers). ``idf: true`` weights tokens by their
    inverse document frequency over the dataset's references; the runner builds that table by
    calling ``prepare(samples)`` once before scoring.
    """

    name: str = "bertscore-like"
    model: str | None = None
    max_tokens: int | None = None
    idf: bool = False
    mode: str = "auto"
    dimensions: int | None = None
    settings: ProviderSettings = field(
        default_factory=environment_settings, compare=False, repr=False
    )
    _idf: tuple[dict[str, float], float] | None = field(default=None, repr=False, compare=False)

    def used(self, settings: ProviderSettings) -> dict[str, str]:
        """The embedder this metric calls: its own ``model`` option, else the settings' one."""
        return {
            "method": "embedding",
            "provider": embedding_label(settings),
            "model": self.model or settings.resolved_embedding_model,
        }

    def __post_init__(self) -> None:
        object.__setattr__(self, "dimensions", _dimensions_option(self.dimensions, self.name))
        if self.mode not in ("auto", "contextual", "isolated"):
            raise MetricConfigError(
                "bertscore-like option 'mode' must be auto, contextual or isolated; got "
                f"{self.mode!r}"
            )
        if self.max_tokens is not None:
            object.__setattr__(
                self,
                "max_tokens",
                positive_int_option(self.max_tokens, "bertscore-like max_tokens"),
            )
        check_bool_option(self.idf, "bertscore-like", "idf")

    # -- helpers ------------------------------------------------------------------------------
    def _contextual(self, embedder: MemoEmbedder) -> bool:
        if self.mode == "contextual" and not embedder.contextual:
            raise MetricError(
                "bertscore-like mode 'contextual' needs the local embedding provider "
                "(--embedding-provider local)"
            )
        return self.mode != "isolated" and embedder.contextual

    def _tokens(self, text: str, embedder: MemoEmbedder, contextual: bool) -> list[str]:
        return _token_embedder(embedder).tokenize(text) if contextual else tokenize(text)

    def _cap(self, embedder: MemoEmbedder, contextual: bool) -> int:
        if contextual:
            limit = int(_token_embedder(embedder).max_tokens)
            return min(limit, self.max_tokens) if self.max_tokens else limit
        return self.max_tokens or DEFAULT_MAX_TOKENS

    def _weights(self, tokens: Sequence[str]) -> np.ndarray | None:
        if not self.idf:
            return None
        if self._idf is None:
            raise MetricError(
                "bertscore-like idf: true needs the dataset's references; call prepare(samples) "
                "before scoring"
            )
        table, unseen = self._idf
        return np.array([table.get(token, unseen) for token in tokens], dtype=np.float64)

    # -- hooks ----------------------------------------------------------------------------------
    async def prepare(self, samples: Sequence[Sample]) -> None:
        """Build the IDF table over every string reference in the dataset (only with ``idf``)."""
        if not self.idf:
            return
        embedder = _embedder(self.settings, self.model, self.dimensions)
        contextual = self._contextual(embedder)
        documents = [
            self._tokens(s.expected_output, embedder, contextual)
            for s in samples
            if isinstance(s.expected_output, str)
        ]
        object.__setattr__(self, "_idf", idf_table(documents))

    async def prefetch(self, pairs: Sequence[tuple[Sample, Output]]) -> None:
        """Embed a chunk's tokens (or whole texts, contextually) in batched, deduplicated calls."""
        embedder = _embedder(self.settings, self.model, self.dimensions)
        try:
            contextual = self._contextual(embedder)
        except MetricError:
            return
        texts = [
            t
            for s, o in pairs
            if isinstance(s.expected_output, str)
            for t in (s.expected_output, o.text)
        ]
        try:
            if contextual:
                cap = self._cap(embedder, contextual)
                local = _token_embedder(embedder)
                fits = [t for t in unique(texts) if t.strip() and len(local.tokenize(t)) <= cap]
                if fits:
                    await local.embed_tokens(fits)
            else:
                tokens = unique([token for text in texts for token in tokenize(text)])
                if tokens:
                    await embedder.prefetch(tokens)
        except ProviderError:
            pass  # each sample retries and reports the failure itself

    async def score(self, sample: Sample, output: Output) -> MetricScore:
        expected = check_text(expected_string(sample, self.name), "expected_output", self.name)
        actual = check_text(output.text, "output", self.name)
        embedder = _embedder(self.settings, self.model, self.dimensions)
        contextual = self._contextual(embedder)
        expected_tokens = self._tokens(expected, embedder, contextual)
        actual_tokens = self._tokens(actual, embedder, contextual)
        _check_lengths(expected_tokens, actual_tokens, self._cap(embedder, contextual))
        base: dict[str, Any] = {
            "mode": "contextual" if contextual else "isolated",
            "expected_tokens": len(expected_tokens),
            "actual_tokens": len(actual_tokens),
            "idf": self.idf,
        }
        if not expected_tokens or not actual_tokens:
            value = 1.0 if not expected_tokens and not actual_tokens else 0.0
            return _empty_score(base, value)
        if contextual:
            matched = await _contextual_vectors(embedder, expected, actual)
        else:
            matched = await self._isolated_vectors(embedder, expected_tokens, actual_tokens)
            base["embedded_tokens"] = matched.embedded
        precision, recall, f1 = greedy_match(
            matched.expected,
            matched.actual,
            self._weights(matched.expected_tokens),
            self._weights(matched.actual_tokens),
        )
        value = clamp01(f1)
        details = {
            **base,
            "precision": round(precision, 10),
            "recall": round(recall, 10),
            "raw_score": round(f1, 10),
            "clamped_score": value,
        }
        return MetricScore(value, details, usage=matched.usage)

    async def _isolated_vectors(
        self, embedder: MemoEmbedder, expected_tokens: list[str], actual_tokens: list[str]
    ) -> _TokenVectors:
        """Each distinct word embedded on its own, then stacked in token order."""
        vocabulary = unique(expected_tokens + actual_tokens)
        try:
            result = await embedder.embed(vocabulary)
        except ProviderError as exc:
            raise _provider_failure(exc, "embeddings request") from None
        usage = _usage(result.usage)
        try:
            check_vectors(result.vectors, len(vocabulary), self.name)
        except MetricError as exc:
            raise MetricError(str(exc), usage=usage or ()) from None
        index = {token: vector for token, vector in zip(vocabulary, result.vectors)}
        return _TokenVectors(
            expected=np.stack([index[t] for t in expected_tokens]),
            actual=np.stack([index[t] for t in actual_tokens]),
            expected_tokens=expected_tokens,
            actual_tokens=actual_tokens,
            usage=usage,
            embedded=len(vocabulary),
        )


@dataclass(frozen=True, slots=True)
class _TokenVectors:
    """Token vectors of both texts (rows in token order) and what embedding them cost."""

    expected: np.ndarray
    actual: np.ndarray
    expected_tokens: list[str]
    actual_tokens: list[str]
    usage: tuple[dict[str, Any], ...] | None = None
    embedded: int | None = None


async def _contextual_vectors(embedder: MemoEmbedder, expected: str, actual: str) -> _TokenVectors:
    """Contextual token states of both texts from the local model, with its word pieces."""
    try:
        pair = await _token_embedder(embedder).embed_tokens([expected, actual])
    except ProviderError as exc:
        raise _provider_failure(exc, "local token embedding") from None
    return _TokenVectors(
        expected=pair[0].vectors,
        actual=pair[1].vectors,
        expected_tokens=list(pair[0].tokens),
        actual_tokens=list(pair[1].tokens),
    )


def _check_lengths(expected_tokens: Sequence[str], actual_tokens: Sequence[str], cap: int) -> None:
    """MetricError when either text has more tokens than the metric embeds per field."""
    for label, tokens in (("expected_output", expected_tokens), ("output", actual_tokens)):
        if len(tokens) > cap:
            raise MetricError(
                f"{label} has {len(tokens)} tokens; bertscore-like supports at most {cap} "
                "tokens per field"
            )


def _empty_score(base: dict[str, Any], value: float) -> MetricScore:
    """The score when a text has no tokens: 1.0 when both are empty, else 0.0."""
    return MetricScore(
        value,
        {**base, "precision": value, "recall": value, "raw_score": value, "clamped_score": value},
    )
