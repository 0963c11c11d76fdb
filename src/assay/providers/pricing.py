"""Token prices and the cost of one provider call.

A model with no price is *unpriced*: its cost is ``None``, never 0, so a report can say its
spend is incomplete instead of quietly under-counting. Prices are per million tokens; users
extend or override the table in the dataset's ``providers.prices`` block.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field


class ModelPrice(BaseModel):
    """US dollars per million prompt (input) and completion (output) tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_per_million: float = Field(ge=0, allow_inf_nan=False)
    output_per_million: float = Field(ge=0, allow_inf_nan=False)


# OpenAI list prices (standard tier, USD per 1M tokens) as published in mid-2025. They go stale:
# override them in configuration when they change. Nothing else is priced by default.
DEFAULT_PRICES: dict[str, ModelPrice] = {
    "gpt-4o": ModelPrice(input_per_million=2.50, output_per_million=10.00),
    "gpt-4o-mini": ModelPrice(input_per_million=0.15, output_per_million=0.60),
    "gpt-4.1": ModelPrice(input_per_million=2.00, output_per_million=8.00),
    "gpt-4.1-mini": ModelPrice(input_per_million=0.40, output_per_million=1.60),
    "gpt-4.1-nano": ModelPrice(input_per_million=0.10, output_per_million=0.40),
    "text-embedding-3-small": ModelPrice(input_per_million=0.02, output_per_million=0.0),
    "text-embedding-3-large": ModelPrice(input_per_million=0.13, output_per_million=0.0),
    "text-embedding-ada-002": ModelPrice(input_per_million=0.10, output_per_million=0.0),
}


def _normalise(model: str) -> str:
    name = model.strip().lower()
    return name.rsplit("/", 1)[-1]  # "openai/gpt-4o" and "gpt-4o" share a price


def price_for(model: str, prices: Mapping[str, ModelPrice]) -> ModelPrice | None:
    """The price of ``model``: an exact entry, else the longest entry it extends with '-'.

    ``gpt-4o-mini-2024-07-18`` takes the ``gpt-4o-mini`` price; ``gpt-4o-mini`` never takes the
    ``gpt-4o`` price because a longer declared entry matches first.
    """
    name = _normalise(model)
    table = {_normalise(key): value for key, value in prices.items()}
    if name in table:
        return table[name]
    best: str | None = None
    for key in table:
        if name.startswith(key + "-") and (best is None or len(key) > len(best)):
            best = key
    return table[best] if best is not None else None


def cost_usd(
    model: str, prompt_tokens: int, completion_tokens: int, prices: Mapping[str, ModelPrice]
) -> float | None:
    """Dollars for one call, rounded to 8 decimals; ``None`` when the model is unpriced."""
    return charge(price_for(model, prices), prompt_tokens, completion_tokens)


def charge(price: ModelPrice | None, prompt_tokens: int, completion_tokens: int) -> float | None:
    """Dollars for one call at ``price`` (looked up once per model by a client), or ``None``."""
    if price is None:
        return None
    total = prompt_tokens * price.input_per_million + completion_tokens * price.output_per_million
    return round(total / 1_000_000, 8)
