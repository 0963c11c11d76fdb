"""A deterministic, offline embedder for tests and demos: feature hashing of character n-grams.

Built on scikit-learn's ``HashingVectorizer`` (signed hashing, L2-normalised), so strings that
share many character 2-4-grams get a high cosine and unrelated strings land near 0. It knows no
meaning: "cat" and "feline" are unrelated to it. Reports made with it say "hashing (test
only)". Model names look like ``hashing-256`` (the number is the dimension).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from assay.errors import UsageError
from assay.providers.embeddings import MemoEmbedder, Vector
from assay.providers.usage import UsageRecord

_NAME = re.compile(r"^hashing(?:-(\d+))?$")


def dimensions_from_name(model: str) -> int:
    """256 for ``hashing``; N for ``hashing-N`` (8 <= N <= 65536)."""
    match = _NAME.match(model.strip().lower())
    if not match:
        raise UsageError(
            "hashing embedding model must be named 'hashing' or 'hashing-N' (N dimensions); got "
            f"{model!r}"
        )
    dims = int(match.group(1) or 256)
    if not 8 <= dims <= 65536:
        raise UsageError(f"hashing embedding dimension must be between 8 and 65536; got {dims}")
    return dims


class HashingEmbedder(MemoEmbedder):
    """Character n-gram feature hashing; no network, no model files, no usage records."""

    kind = "hashing"
    bills = False

    def __init__(self, model: str = "hashing-256", *, batch_size: int = 1024) -> None:
        super().__init__(model, batch_size=batch_size)
        self.dimensions = dimensions_from_name(model)
        from sklearn.feature_extraction.text import HashingVectorizer

        self._vectorizer: Any = HashingVectorizer(
            analyzer="char_wb",
            ngram_range=(2, 4),
            n_features=self.dimensions,
            alternate_sign=True,
            norm="l2",
            lowercase=True,
        )

    def vectors(self, texts: list[str]) -> list[Vector]:
        """Embed synchronously (the vectorizer is pure CPU and fast)."""
        matrix = self._vectorizer.transform(texts).toarray().astype(np.float32)
        return list(matrix)

    async def _fetch(self, texts: list[str]) -> tuple[list[Vector], UsageRecord | None]:
        self.requests += 1
        return self.vectors(texts), None
