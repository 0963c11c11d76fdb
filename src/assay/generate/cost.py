"""Model calls and dollars: the estimate printed before the first call, and the budget stop.

An estimate counts a prompt at one token per four characters (a rough rule for English text)
plus a fixed allowance of completion tokens per call, priced by
:func:`assay.providers.pricing.cost_usd`; a call the provider cache already answers costs
nothing. An unpriced model has no dollar estimate (``None``), never $0. While the command
runs, spend is the priced cost of the calls actually sent (cache hits are free), and a call
is not started when the spend so far plus that call's estimate would pass ``--budget``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assay.providers.pricing import ModelPrice, cost_usd

CHARS_PER_TOKEN = 4


def count(number: int, noun: str) -> str:
    """``1 call``, ``2 calls``: a count with its noun (a regular plural)."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def estimate_call(
    model: str, prompt: str, completion_tokens: int, prices: Mapping[str, ModelPrice]
) -> float | None:
    """The estimated dollars of one call (None: the model is unpriced)."""
    prompt_tokens = len(prompt) // CHARS_PER_TOKEN + 1
    return cost_usd(model, prompt_tokens, completion_tokens, prices)


@dataclass(frozen=True)
class CallPlan:
    """The calls a command plans before it starts, and what they should cost."""

    model: str
    calls: int
    cached: int
    cost_usd: float | None
    note: str = ""

    def line(self) -> str:
        """One line for stderr: calls, cache hits and estimated dollars."""
        cost = "unpriced model" if self.cost_usd is None else f"about ${self.cost_usd:.4f}"
        note = f"; {self.note}" if self.note else ""
        planned = count(self.calls, "call")
        return (
            f"planned {planned} to {self.model} ({self.cached} answered by the cache, "
            f"{self.calls - self.cached} to send): {cost}{note}"
        )


def plan_calls(
    model: str,
    prompts: Sequence[tuple[str, bool]],
    completion_tokens: int,
    prices: Mapping[str, ModelPrice],
    note: str = "",
) -> CallPlan:
    """A :class:`CallPlan` of ``(prompt, cached)`` pairs (cached ones cost nothing)."""
    total: float | None = 0.0
    for prompt, cached in prompts:
        if cached:
            continue
        cost = estimate_call(model, prompt, completion_tokens, prices)
        total = None if cost is None or total is None else total + cost
    cached_count = sum(1 for _, cached in prompts if cached)
    return CallPlan(model, len(prompts), cached_count, total, note)


@dataclass
class Spend:
    """What the calls so far cost, and whether the next one still fits the budget."""

    budget_usd: float | None = None
    spent_usd: float = 0.0
    sent: int = 0
    cached: int = 0
    unpriced: int = 0
    halted: str | None = None

    def add(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Count the usage records of answered calls (a cache hit spends nothing)."""
        for record in records:
            if record.get("cached"):
                self.cached += 1
                continue
            self.sent += 1
            cost = record.get("cost_usd")
            if isinstance(cost, (int, float)) and not isinstance(cost, bool):
                self.spent_usd += float(cost)
            else:
                self.unpriced += 1

    def allows(self, next_cost: float | None, committed: float = 0.0) -> bool:
        """Whether a call estimated at ``next_cost`` may start, after calls already started
        and estimated at ``committed`` in all; records why not when it may not. An unpriced
        call always may (its cost is unknown, not zero: the summary says so)."""
        if self.budget_usd is None or next_cost is None:
            return True
        if self.spent_usd + committed + next_cost <= self.budget_usd:
            return True
        started = f" and started calls estimated at ${committed:.4f}" if committed else ""
        self.halted = (
            f"spent ${self.spent_usd:.4f}{started} of the ${self.budget_usd:.4f} budget; the "
            f"next call was estimated at ${next_cost:.4f}"
        )
        return False

    def line(self) -> str:
        unpriced = f" ({self.unpriced} unpriced)" if self.unpriced else ""
        return (
            f"{self.sent} calls sent, {self.cached} answered by the cache, "
            f"${self.spent_usd:.4f} spent{unpriced}"
        )
