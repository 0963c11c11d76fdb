"""The body of an OpenAI-compatible ``/v1/embeddings`` response, strictly checked.

A body is trusted for nothing: the ``data`` list must hold exactly one finite, non-empty vector
per input, each ``index`` once, all of one dimensionality; ``usage`` is read when well formed
and ignored otherwise. Vectors are float32 from here on (see :mod:`assay.providers.embeddings`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from assay.data.bounded import loads_json
from assay.errors import ProviderError

Vector = np.ndarray


def _vector(raw: object) -> Vector | None:
    if not isinstance(raw, list) or not raw:
        return None
    for value in raw:
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
        ):
            return None
    with np.errstate(over="ignore"):  # past float32's range (~3.4e38): refused just below
        vector = np.asarray(raw, dtype=np.float32)
    return vector if bool(np.isfinite(vector).all()) else None


def parse_embeddings(
    body: bytes, expected: int, *, what: str, host: str
) -> tuple[list[Vector], dict[str, int] | None]:
    """Vectors (in input order) and token usage from an embeddings body, strictly checked."""
    data = loads_json(
        body,
        lambda _: ProviderError(f"{what} to {host} returned a malformed response (not valid JSON)"),
    )
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ProviderError(f"{what} to {host} returned a malformed response (no 'data' list)")
    if len(items) != expected:
        raise ProviderError(
            f"{what} to {host}: response returned {len(items)} vector(s); expected {expected}"
        )
    vectors = _ordered(items, f"{what} to {host}")
    dims = {v.shape[0] for v in vectors}
    if len(dims) > 1:
        low, high = min(dims), max(dims)
        raise ProviderError(
            f"{what} to {host} returned vectors of different dimensionality ({low} vs {high})"
        )
    return vectors, _token_usage(data.get("usage"))


def _ordered(items: list[Any], where: str) -> list[Vector]:
    """The items' vectors placed by their ``index`` (position when absent), each index once."""
    expected = len(items)
    ordered: list[Vector | None] = [None] * expected
    for position, item in enumerate(items):
        index = item.get("index", position) if isinstance(item, dict) else None
        if (
            isinstance(index, bool)
            or not isinstance(index, int)
            or not 0 <= index < expected
            or ordered[index] is not None
        ):
            raise ProviderError(f"{where} returned a malformed response (bad or repeated 'index')")
        vector = _vector(item.get("embedding"))
        if vector is None:
            raise ProviderError(
                f"{where} returned a malformed response (embedding {index} is not a "
                "non-empty list of finite numbers within float32's range)"
            )
        ordered[index] = vector
    return [v for v in ordered if v is not None]


def _token_usage(usage: object) -> dict[str, int] | None:
    """Prompt and total tokens from the body's ``usage`` (None unless a count is given)."""
    if not isinstance(usage, dict):
        return None
    prompt = usage.get("prompt_tokens")
    total = usage.get("total_tokens", prompt)
    if not isinstance(prompt, int) or isinstance(prompt, bool) or prompt < 0:
        return None
    return {
        "prompt_tokens": prompt,
        "total_tokens": total if isinstance(total, int) and total >= 0 else prompt,
    }
