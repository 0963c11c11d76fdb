"""Usage records: one JSON-safe dict per provider call, in the shape the report sums.

``{"model", "prompt_tokens", "completion_tokens", "total_tokens", "latency_ms", "cost_usd",
"cost_source", "cached"}``; ``cost_source`` is ``reported`` (the provider stated the cost in its
reply), ``estimated`` (tokens times the price table) or None (unpriced, or a cache hit).
Latency is measured here with a monotonic clock, not taken from the provider.
A cache hit spends nothing this run, so it records zero tokens and a cost of 0.0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

UsageRecord = dict[str, Any]


def total_cost(usage: Sequence[Mapping[str, Any]]) -> float | None:
    """The summed ``cost_usd`` of the records; None when any call was unpriced."""
    costs = [u.get("cost_usd") for u in usage]
    known = [float(c) for c in costs if c is not None]
    return sum(known) if len(known) == len(costs) else None


def record(
    *,
    model: str,
    prompt_tokens: int,
    completion_tokens: int,
    total_tokens: int | None = None,
    latency_ms: float,
    cost_usd: float | None,
    cost_source: str | None = None,
    cached: bool = False,
) -> UsageRecord:
    """A usage record for one call; ``cost_usd`` is ``None`` when the model is unpriced."""
    total = prompt_tokens + completion_tokens if total_tokens is None else total_tokens
    return {
        "model": model,
        "prompt_tokens": int(prompt_tokens),
        "completion_tokens": int(completion_tokens),
        "total_tokens": int(total),
        "latency_ms": round(float(latency_ms), 3),
        "cost_usd": cost_usd,
        "cost_source": cost_source,
        "cached": cached,
    }


def cached_record(model: str, latency_ms: float) -> UsageRecord:
    """A call answered from the provider cache: nothing was sent, nothing was spent."""
    return record(
        model=model,
        prompt_tokens=0,
        completion_tokens=0,
        total_tokens=0,
        latency_ms=latency_ms,
        cost_usd=0.0,
        cached=True,
    )
