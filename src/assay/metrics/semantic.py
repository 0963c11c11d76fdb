"""Semantic similarity metrics: cosine-embedding and bertscore-like.

Both ask the configured embedding provider (``assay.providers``) for vectors, so they work
with an OpenAI-compatible endpoint, the offline local model, or the hashing test embedder.
Neither keeps state between samples except ``bertscore-like``'s optional IDF table, which
``prepare`` builds once per run from the dataset's references and never changes afterwards.
"""

from __future__ import annotations

import contextlib
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from assay.errors import MetricConfigError, MetricError, ProviderError
from assay.metrics.base import (
    MetricScore,
    clamp01,
    expected_string,
    positive_int_option,
    unique,
)
from assay.metrics.lexical import tokenize

if TYPE_CHECKING:
    from assay.dataset import Sample
    from assay.outputs import Output
    from assay.providers.embeddings import MemoEmbedder

DEFAULT_MAX_TOKENS = 128  # isolated-token mode, as in the reference implementation


def _embedder(model: str | None, dimensions: int | None = None) -> MemoEmbedder:
    from assay.providers.registry import embedder
    from assay.providers.settings import current

    if dimensions is not None and current().embedding_provider != "openai":
        raise MetricError("the 'dimensions' option applies to the openai embedding provider only")
    return embedder(model, dimensions=dimensions)


def _dimensions_option(value: Any, metric: str) -> int | None:
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


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity in float64; 0.0 (not NaN) when either vector has zero norm."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    norm = float(np.linalg.norm(a64) * np.linalg.norm(b64))
    if norm <= 0.0 or not math.isfinite(norm):
        return 0.0
    return float(np.dot(a64, b64) / norm)


def cosine_matrix(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Pairwise cosine similarities (rows x cols); zero-norm vectors give 0."""
    r = rows.astype(np.float64)
    c = cols.astype(np.float64)
    rn = np.linalg.norm(r, axis=1, keepdims=True)
    cn = np.linalg.norm(c, axis=1, keepdims=True)
    r = np.divide(r, rn, out=np.zeros_like(r), where=rn > 0)
    c = np.divide(c, cn, out=np.zeros_like(c), where=cn > 0)
    sims: np.ndarray = r @ c.T
    return sims


def _check_vectors(vectors: Sequence[np.ndarray], expected: int, metric: str) -> None:
    if len(vectors) != expected:
        raise MetricError(
            f"{metric} embedding client returned {len(vectors)} vector(s); expected {expected}"
        )
    for vector in vectors:
        if vector.ndim != 1 or vector.shape[0] == 0:
            raise MetricError(f"{metric} embeddings must be non-empty vectors")
    dims = [v.shape[0] for v in vectors]
    if len(set(dims)) > 1:
        first = dims[0]
        other = next(d for d in dims if d != first)
        raise MetricError(
            f"cannot compute {metric} cosine similarity on vectors of different dimensionality "
            f"({first} vs {other})"
        )


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

    def used(self, settings: Any) -> dict[str, str]:
        """The embedder this metric calls: its own ``model`` option, else the settings' one."""
        from assay.metrics.base import embedding_label

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
                await _embedder(self.model, self.dimensions).prefetch(unique(texts))

    async def score(self, sample: Sample, output: Output) -> MetricScore:
        expected = check_text(expected_string(sample, self.name), "expected_output", self.name)
        actual = check_text(output.text, "output", self.name)
        if not expected.strip() or not actual.strip():
            both = not expected.strip() and not actual.strip()
            empty = "both" if both else "expected" if not expected.strip() else "actual"
            return MetricScore(1.0 if both else 0.0, {"empty": empty, "cosine_similarity": None})
        embedder = _embedder(self.model, self.dimensions)
        try:
            result = await embedder.embed([expected, actual])
        except ProviderError as exc:
            raise _provider_failure(exc, "embeddings request") from None
        usage = _usage(result.usage)
        try:
            _check_vectors(result.vectors, 2, self.name)
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


def idf_table(documents: Sequence[Sequence[str]]) -> tuple[dict[str, float], float]:
    """BERTScore's IDF over reference documents: log((M + 1) / (df + 1)); unseen: log(M + 1)."""
    m = len(documents)
    df: Counter[str] = Counter()
    for tokens in documents:
        df.update(set(tokens))
    return {token: math.log((m + 1) / (count + 1)) for token, count in df.items()}, math.log(m + 1)


def greedy_match(
    expected: np.ndarray,
    actual: np.ndarray,
    expected_weights: np.ndarray | None = None,
    actual_weights: np.ndarray | None = None,
) -> tuple[float, float, float]:
    """BERTScore greedy matching: (precision, recall, F1) from token vectors.

    Precision averages, over the actual tokens, each one's best cosine against the expected
    tokens; recall does the reverse. Best matches below 0 count as 0. Weights (IDF) turn the
    means into weighted means.
    """
    sims = cosine_matrix(actual, expected)  # (n_actual, n_expected)
    best_actual = np.maximum(sims.max(axis=1), 0.0)
    best_expected = np.maximum(sims.max(axis=0), 0.0)
    wa = np.ones(len(best_actual)) if actual_weights is None else actual_weights
    we = np.ones(len(best_expected)) if expected_weights is None else expected_weights
    precision = float(np.dot(wa, best_actual) / wa.sum()) if wa.sum() > 0 else 0.0
    recall = float(np.dot(we, best_expected) / we.sum()) if we.sum() > 0 else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return precision, recall, f1


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
    _idf: tuple[dict[str, float], float] | None = field(default=None, repr=False, compare=False)

    def used(self, settings: Any) -> dict[str, str]:
        """The embedder this metric calls: its own ``model`` option, else the settings' one."""
        from assay.metrics.base import embedding_label

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
        if not isinstance(self.idf, bool):
            raise MetricConfigError(
                f"bertscore-like option 'idf' must be true or false; got {self.idf!r}"
            )

    # -- helpers ------------------------------------------------------------------------------
    def _contextual(self, embedder: MemoEmbedder) -> bool:
        if self.mode == "contextual" and not embedder.contextual:
            raise MetricError(
                "bertscore-like mode 'contextual' needs the local embedding provider "
                "(--embedding-provider local)"
            )
        return self.mode != "isolated" and embedder.contextual

    def _tokens(self, text: str, embedder: MemoEmbedder, contextual: bool) -> list[str]:
        return embedder.tokenize(text) if contextual else tokenize(text)  # type: ignore[attr-defined]

    def _cap(self, embedder: MemoEmbedder, contextual: bool) -> int:
        if contextual:
            limit = int(embedder.max_tokens)  # type: ignore[attr-defined]
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
        embedder = _embedder(self.model, self.dimensions)
        contextual = self._contextual(embedder)
        documents = [
            self._tokens(s.expected_output, embedder, contextual)
            for s in samples
            if isinstance(s.expected_output, str)
        ]
        object.__setattr__(self, "_idf", idf_table(documents))

    async def prefetch(self, pairs: Sequence[tuple[Sample, Output]]) -> None:
        """Embed a chunk's tokens (or whole texts, contextually) in batched, deduplicated calls."""
        embedder = _embedder(self.model, self.dimensions)
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
                fits = [t for t in unique(texts) if t.strip() and len(embedder.tokenize(t)) <= cap]  # type: ignore[attr-defined]
                if fits:
                    await embedder.embed_tokens(fits)  # type: ignore[attr-defined]
            else:
                tokens = unique([token for text in texts for token in tokenize(text)])
                if tokens:
                    await embedder.prefetch(tokens)
        except ProviderError:
            pass  # each sample retries and reports the failure itself

    async def score(self, sample: Sample, output: Output) -> MetricScore:
        expected = check_text(expected_string(sample, self.name), "expected_output", self.name)
        actual = check_text(output.text, "output", self.name)
        embedder = _embedder(self.model, self.dimensions)
        contextual = self._contextual(embedder)
        expected_tokens = self._tokens(expected, embedder, contextual)
        actual_tokens = self._tokens(actual, embedder, contextual)
        cap = self._cap(embedder, contextual)
        for label, tokens in (("expected_output", expected_tokens), ("output", actual_tokens)):
            if len(tokens) > cap:
                raise MetricError(
                    f"{label} has {len(tokens)} tokens; bertscore-like supports at most {cap} "
                    "tokens per field"
                )
        base: dict[str, Any] = {
            "mode": "contextual" if contextual else "isolated",
            "expected_tokens": len(expected_tokens),
            "actual_tokens": len(actual_tokens),
            "idf": self.idf,
        }
        if not expected_tokens or not actual_tokens:
            both = not expected_tokens and not actual_tokens
            value = 1.0 if both else 0.0
            return MetricScore(
                value,
                {
                    **base,
                    "precision": value,
                    "recall": value,
                    "raw_score": value,
                    "clamped_score": value,
                },
            )
        usage: tuple[dict[str, Any], ...] | None = None
        if contextual:
            try:
                pair = await embedder.embed_tokens([expected, actual])  # type: ignore[attr-defined]
            except ProviderError as exc:
                raise _provider_failure(exc, "local token embedding") from None
            e_matrix, a_matrix = pair[0].vectors, pair[1].vectors
            expected_tokens, actual_tokens = list(pair[0].tokens), list(pair[1].tokens)
        else:
            vocabulary = unique(expected_tokens + actual_tokens)
            try:
                result = await embedder.embed(vocabulary)
            except ProviderError as exc:
                raise _provider_failure(exc, "embeddings request") from None
            usage = _usage(result.usage)
            try:
                _check_vectors(result.vectors, len(vocabulary), self.name)
            except MetricError as exc:
                raise MetricError(str(exc), usage=usage or ()) from None
            index = {token: vector for token, vector in zip(vocabulary, result.vectors)}
            e_matrix = np.stack([index[t] for t in expected_tokens])
            a_matrix = np.stack([index[t] for t in actual_tokens])
            base["embedded_tokens"] = len(vocabulary)
        precision, recall, f1 = greedy_match(
            e_matrix, a_matrix, self._weights(expected_tokens), self._weights(actual_tokens)
        )
        value = clamp01(f1)
        details = {
            **base,
            "precision": round(precision, 10),
            "recall": round(recall, 10),
            "raw_score": round(f1, 10),
            "clamped_score": value,
        }
        return MetricScore(value, details, usage=usage)
