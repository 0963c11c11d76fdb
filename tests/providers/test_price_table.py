"""Prices as dated data: the packaged table, a user's file over it, stale-price warnings, a cost
the provider reports in its reply (marked reported) next to derived ones (estimated), and money
printed with enough digits to be non-zero."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from assay.engine.budget import BudgetGuard
from assay.engine.evaluation import RunState
from assay.errors import UsageError
from assay.providers import registry, settings
from assay.providers.chat import parse_completion
from assay.providers.pricing import (
    ModelPrice,
    format_usd,
    packaged_prices,
    price_for,
    stale_prices,
)
from assay.providers.settings import ProviderSettings
from assay.report.usage import UsageAccumulator
from openai_server import CHAT, OpenAIServer, Step, chat_completion


def test_every_packaged_price_says_where_and_when() -> None:
    table = packaged_prices()
    assert {"gpt-4o-mini", "gpt-4.1", "gpt-5-mini", "text-embedding-3-small"} <= set(table)
    for model, price in table.items():
        assert price.source and price.source.startswith("https://"), model
        assert price.date is not None and price.date.year >= 2025, model


def test_a_users_prices_file_overrides_the_packaged_entries(tmp_path: Path) -> None:
    mine = tmp_path / "prices.yml"
    mine.write_text(
        "schema_version: assay.prices.v1\n"
        "prices:\n"
        "  - {model: gpt-4o-mini, input_per_million: 0.1, output_per_million: 0.4,\n"
        "     source: contract, date: 2026-11-01}\n"
        "  - {model: acme-judge, input_per_million: 3, output_per_million: 6}\n",
        encoding="utf-8",
    )
    built = settings.build(env={"ASSAY_PRICES_FILE": str(mine)})
    assert built.prices["gpt-4o-mini"] == ModelPrice(
        input_per_million=0.1,
        output_per_million=0.4,
        source="contract",
        date=dt.date(2026, 11, 1),
    )
    assert built.prices["acme-judge"].output_per_million == 6
    assert built.prices["gpt-4.1"] == packaged_prices()["gpt-4.1"]  # the rest kept
    # the dataset's providers.prices still wins over the file
    dataset = {"prices": {"acme-judge": {"input_per_million": 1, "output_per_million": 1}}}
    assert (
        settings.build(dataset=dataset, env={"ASSAY_PRICES_FILE": str(mine)})
        .prices["acme-judge"]
        .output_per_million
        == 1
    )


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("prices: [{model: m, input_per_million: -1, output_per_million: 0}]", "prices.0"),
        ("prices: [{model: m, input_per_million: 1}]", "output_per_million"),
        ("schema_version: other\nprices: []", "schema_version"),
        ("[1, 2", "prices file"),
    ],
)
def test_a_bad_prices_file_is_a_one_line_usage_error(
    tmp_path: Path, text: str, needle: str
) -> None:
    bad = tmp_path / "p.yml"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(UsageError) as info:
        settings.build(env={"ASSAY_PRICES_FILE": str(bad)})
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_old_prices_warn_and_current_or_undated_ones_do_not() -> None:
    prices = {
        "old": ModelPrice(input_per_million=1, output_per_million=1, date=dt.date(2025, 1, 1)),
        "new": ModelPrice(input_per_million=1, output_per_million=1, date=dt.date(2026, 11, 1)),
        "undated": ModelPrice(input_per_million=1, output_per_million=1),
    }
    today = dt.date(2026, 11, 28)
    warnings = stale_prices(
        ["old-2025-01", "new", "undated", "unpriced"], prices, today=today, max_age_days=180
    )
    assert warnings == [
        "the price of old-2025-01 is from 2025-01-01 (696 days old, more than 180); costs may "
        "be wrong: give a current one in a prices file (ASSAY_PRICES_FILE) or the dataset's "
        "providers.prices"
    ]
    assert stale_prices(["old"], prices, today=today, max_age_days=1000) == []


def test_a_judge_run_warns_about_a_stale_judge_price() -> None:
    from assay.engine.preflight import price_warnings
    from assay.metrics.registry import resolve

    judge = resolve("llm-as-judge")
    exact = resolve("exact-match")
    built = settings.build(env={"ASSAY_JUDGE_MODEL": "gpt-4o-mini"})
    date = price_for("gpt-4o-mini", built.prices).date  # type: ignore[union-attr]
    assert date is not None
    later = date + dt.timedelta(days=built.max_price_age_days + 1)
    (warning,) = price_warnings([judge, exact], built, later)
    assert warning.startswith("the price of gpt-4o-mini is from")
    assert price_warnings([judge, exact], built, date) == []
    assert price_warnings([exact], built, later) == []  # nothing paid, nothing to warn about


def test_the_reply_s_own_cost_is_read() -> None:
    body = json.loads(chat_completion({"messages": []}, "ok"))
    body["usage"]["cost"] = 0.00042
    assert parse_completion(json.dumps(body).encode(), what="w", host="h")[2] == 0.00042
    for odd in (None, "0.1", -1, True, [0.1]):
        body["usage"]["cost"] = odd
        assert parse_completion(json.dumps(body).encode(), what="w", host="h")[2] is None


async def test_reported_cost_is_used_and_marked_derived_marked_estimated(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    body = json.loads(chat_completion({"messages": []}, json.dumps({"score": 1.0})))
    body["usage"]["cost"] = 0.0123  # what the gateway billed, whatever the table says
    openai_server.script(CHAT, Step.json(body))
    provider = registry.chat_provider(provider_settings, "gpt-4o-mini")
    params = {"temperature": 0, "seed": 42}
    _, first = await provider.complete(
        [{"role": "user", "content": "a"}], params=params, template_version="v1", accept=json.loads
    )
    _, second = await provider.complete(
        [{"role": "user", "content": "b"}], params=params, template_version="v1", accept=json.loads
    )
    reported, estimated = first.usage[0], second.usage[0]
    assert reported["cost_usd"] == 0.0123 and reported["cost_source"] == "reported"
    expected = (estimated["prompt_tokens"] * 0.15 + estimated["completion_tokens"] * 0.6) / 1e6
    assert estimated["cost_usd"] == pytest.approx(expected)
    assert estimated["cost_source"] == "estimated"
    totals = UsageAccumulator()
    totals.add("judge", [reported, estimated])
    block = totals.build()
    assert block.cost_source == "mixed"
    assert block.reported_cost_usd == pytest.approx(0.0123)
    assert block.cost_usd == pytest.approx(0.0123 + expected)
    assert block.models[0].cost_source == "mixed"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "$0.00"),
        (12.3456, "$12.35"),
        (1234.5, "$1,234.50"),
        (0.055, "$0.055"),
        (0.005, "$0.0050"),
        (0.0049, "$0.0049"),
        (0.00004, "$0.000040"),
        (3e-9, "$0.0000000030"),
    ],
)
def test_money_shows_two_significant_digits(value: float, text: str) -> None:
    assert format_usd(value) == text


def test_a_budget_halt_under_a_cent_prints_non_zero_amounts() -> None:
    state = RunState()
    guard = BudgetGuard(0.00005, state)
    guard.spent_usd, guard.executions = 0.00004, 2
    assert guard.should_stop() is True
    assert state.halt_reason == (
        "spent $0.000040 of a $0.000050 budget after 2 executions; the next one was projected "
        "at $0.000020"
    )
