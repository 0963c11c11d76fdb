"""Token prices, the cost of one provider call, and how money is printed.

Prices are data, not code: ``prices.json`` in this package (``schema_version:
assay.prices.v1``) lists per model the US dollars per million input and output tokens, where
the price was read and on which date. A user's own file of the same shape
(``ASSAY_PRICES_FILE`` / ``providers.prices_file``) overrides it entry by entry, and the
dataset's ``providers.prices`` block overrides both. A price older than the configured age
(``ASSAY_MAX_PRICE_AGE_DAYS``, default 365) is reported by :func:`stale_prices`.

A model with no price is *unpriced*: its cost is ``None``, never 0, so a report can say its
spend is incomplete instead of quietly under-counting. A cost the provider reports in its reply
is used as it is and marked ``reported``; one derived from the table is ``estimated``.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from assay.data.documents import parse_document, read_text
from assay.errors import InputError, UsageError

PRICES_SCHEMA: Final = "assay.prices.v1"
CostSource = Literal["reported", "estimated"]


class ModelPrice(BaseModel):
    """US dollars per million prompt (input) and completion (output) tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_per_million: float = Field(ge=0, allow_inf_nan=False)
    output_per_million: float = Field(ge=0, allow_inf_nan=False)
    source: str | None = Field(default=None, description="where the price was read")
    date: dt.date | None = Field(default=None, description="when it was read (YYYY-MM-DD)")


class PriceEntry(ModelPrice):
    """One row of a prices file."""

    model: str = Field(min_length=1)


class PriceTable(BaseModel):
    """A prices file: the packaged one, or a user's (``schema_version: assay.prices.v1``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal["assay.prices.v1"] = PRICES_SCHEMA
    note: str | None = None
    prices: list[PriceEntry]

    def by_model(self) -> dict[str, ModelPrice]:
        """``{model: price}``; a model listed twice keeps its last row."""
        return {
            e.model: ModelPrice.model_validate(e.model_dump(exclude={"model"})) for e in self.prices
        }


def packaged_prices() -> dict[str, ModelPrice]:
    """The price table shipped with assay (``assay/providers/prices.json``)."""
    text = resources.files("assay.providers").joinpath("prices.json").read_text("utf-8")
    return PriceTable.model_validate_json(text).by_model()


def read_price_file(path: Path) -> dict[str, ModelPrice]:
    """A user's prices file (JSON or YAML, the packaged file's shape); UsageError naming the
    file and the row when it is malformed."""
    try:
        data: Any = parse_document(read_text(path, InputError), path, InputError)
    except InputError as exc:
        raise UsageError(f"prices file {exc}") from None
    try:
        return PriceTable.model_validate(data).by_model()
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "document"
        raise UsageError(f"prices file {path}: field '{where}': {first['msg']}") from None


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


def reported_cost(usage: Mapping[str, Any]) -> float | None:
    """The cost a provider states in its reply's ``usage`` (``cost``, in dollars, as OpenRouter
    and other gateways send it); None when absent or not a finite non-negative number."""
    value = usage.get("cost")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def stale_prices(
    models: Iterable[str],
    prices: Mapping[str, ModelPrice],
    *,
    today: dt.date,
    max_age_days: int,
) -> list[str]:
    """One warning per model whose price is dated more than ``max_age_days`` before
    ``today`` (undated user prices are taken as current)."""
    warnings: list[str] = []
    for model in dict.fromkeys(models):
        price = price_for(model, prices)
        if price is None or price.date is None:
            continue
        age = (today - price.date).days
        if age > max_age_days:
            warnings.append(
                f"the price of {model} is from {price.date.isoformat()} ({age} days old, more "
                f"than {max_age_days}); costs may be wrong: give a current one in a prices file "
                "(ASSAY_PRICES_FILE) or the dataset's providers.prices"
            )
    return warnings


def format_usd(value: float) -> str:
    """Dollars with enough decimals to show at least two significant digits (at least 2, at
    most 10 decimals): ``$12.35``, ``$0.0050``, ``$0.000040``; zero is ``$0.00``."""
    if not math.isfinite(value):
        return f"${value}"
    if value == 0:
        return "$0.00"
    decimals = min(10, max(2, 1 - math.floor(math.log10(abs(value)))))
    return f"${value:,.{decimals}f}"
