"""Pricing: exact and dated-suffix matches, vendor prefixes, and unpriced models (None, not 0)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from assay.providers.pricing import ModelPrice, cost_usd, packaged_prices, price_for

PRICES = {
    "gpt-4o": ModelPrice(input_per_million=2.5, output_per_million=10.0),
    "gpt-4o-mini": ModelPrice(input_per_million=0.15, output_per_million=0.6),
}


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gpt-4o", "gpt-4o"),
        ("GPT-4o", "gpt-4o"),
        ("openai/gpt-4o-mini", "gpt-4o-mini"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
    ],
)
def test_price_lookup(model: str, expected: str) -> None:
    assert price_for(model, PRICES) == PRICES[expected]


@pytest.mark.parametrize("model", ["gpt-4", "gpt-4ox", "llama3", "my-gpt-4o"])
def test_unknown_models_are_unpriced(model: str) -> None:
    assert price_for(model, PRICES) is None
    assert cost_usd(model, 1000, 1000, PRICES) is None


def test_cost_matches_hand_arithmetic() -> None:
    # 1234 prompt tokens at $0.15/M plus 567 completion tokens at $0.60/M, in exact decimals.
    expected = (Decimal(1234) * Decimal("0.15") + Decimal(567) * Decimal("0.6")) / Decimal(
        1_000_000
    )
    assert cost_usd("gpt-4o-mini", 1234, 567, PRICES) == pytest.approx(float(expected), abs=1e-12)
    assert cost_usd("gpt-4o-mini", 0, 0, PRICES) == 0.0


def test_default_table_prices_embeddings_by_input_only() -> None:
    assert cost_usd("text-embedding-3-small", 1_000_000, 0, packaged_prices()) == pytest.approx(
        0.02
    )
