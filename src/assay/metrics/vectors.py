"""Vector arithmetic of the embedding metrics: cosine similarity, BERTScore's greedy matching
and IDF weights, and the sanity check on what an embedding provider returned.

Pure functions over numpy arrays (float64 throughout), so each can be checked by hand.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

from assay.errors import MetricError


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


def check_vectors(vectors: Sequence[np.ndarray], expected: int, metric: str) -> None:
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
