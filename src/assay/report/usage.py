"""Provider usage of a run (calls, cached calls, tokens, latency, cost), summed overall, per
metric and per model from the per-call records metrics return."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from assay.report.model import ModelUsage, Usage, UsageBlock


class UsageAccumulator:
    """Sums per-call usage records overall, per metric and per model."""

    def __init__(self) -> None:
        self.total = _UsageSum()
        self.per_metric: dict[str, _UsageSum] = defaultdict(_UsageSum)

    def add(self, metric: str, records: Iterable[Mapping[str, Any]]) -> None:
        for record in records:
            self.total.add(record)
            self.per_metric[metric].add(record)

    def build(self) -> Usage:
        base = self.total.build()
        return Usage(
            **base.model_dump(),
            per_metric={m: s.build() for m, s in sorted(self.per_metric.items())},
        )


def _int(value: object) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return 0


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


class _UsageSum:
    def __init__(self) -> None:
        self.calls = self.cached = self.prompt = self.completion = self.total_tokens = 0
        self.latencies: list[float] = []
        self.cost = 0.0
        self.priced_calls = 0
        self.unpriced: set[str] = set()
        self.reported = 0.0
        self.sources: set[str] = set()
        self.models: dict[str, dict[str, Any]] = {}

    def add(self, record: Mapping[str, Any]) -> None:
        model = str(record.get("model") or "(unnamed model)")
        cached = bool(record.get("cached"))
        prompt, completion = (
            _int(record.get("prompt_tokens")),
            _int(record.get("completion_tokens")),
        )
        total = _int(record.get("total_tokens")) or prompt + completion
        cost = _finite(record.get("cost_usd"))
        entry = self.models.setdefault(
            model,
            {
                "calls": 0,
                "cached": 0,
                "prompt": 0,
                "completion": 0,
                "total": 0,
                "cost": 0.0,
                "priced": True,
                "sources": set(),
            },
        )
        self.calls += 1
        entry["calls"] += 1
        if cached:
            # A cache hit costs nothing now; its tokens were paid for by an earlier run. Its
            # cost is known (0), so a run served wholly from the cache costs 0, not null.
            self.cached += 1
            entry["cached"] += 1
            if cost is not None:
                self.priced_calls += 1
            return
        self.prompt += prompt
        self.completion += completion
        self.total_tokens += total
        entry["prompt"] += prompt
        entry["completion"] += completion
        entry["total"] += total
        latency = _finite(record.get("latency_ms"))
        if latency is not None:
            self.latencies.append(latency)
        if cost is None:
            self.unpriced.add(model)
            entry["priced"] = False
        else:
            self._priced(entry, cost, record.get("cost_source") == "reported")

    def _priced(self, entry: dict[str, Any], cost: float, reported: bool) -> None:
        """Count a paid call's cost, overall and for its model, with where it came from."""
        self.cost += cost
        self.priced_calls += 1
        entry["cost"] += cost
        source = "reported" if reported else "estimated"
        self.sources.add(source)
        entry["sources"].add(source)
        if reported:
            self.reported += cost

    def build(self) -> UsageBlock:
        return UsageBlock(
            calls=self.calls,
            cached_calls=self.cached,
            prompt_tokens=self.prompt,
            completion_tokens=self.completion,
            total_tokens=self.total_tokens,
            latency_ms_total=round(sum(self.latencies), 3),
            latency_ms_mean=round(sum(self.latencies) / len(self.latencies), 3)
            if self.latencies
            else None,
            latency_ms_max=round(max(self.latencies), 3) if self.latencies else None,
            cost_usd=round(self.cost, 8) if self.priced_calls else None,
            complete=not self.unpriced,
            cost_source=_source(self.sources),
            reported_cost_usd=round(self.reported, 8) if "reported" in self.sources else None,
            unpriced_models=sorted(self.unpriced),
            models=[
                ModelUsage(
                    model=name,
                    calls=e["calls"],
                    cached_calls=e["cached"],
                    prompt_tokens=e["prompt"],
                    completion_tokens=e["completion"],
                    total_tokens=e["total"],
                    cost_usd=round(e["cost"], 8) if e["priced"] else None,
                    priced=e["priced"],
                    cost_source=_source(e["sources"]),
                )
                for name, e in sorted(self.models.items())
            ],
        )


def _source(sources: set[str]) -> Any:
    """``reported`` or ``estimated`` when every paid, priced call was so; ``mixed``; or None."""
    if not sources:
        return None
    return next(iter(sources)) if len(sources) == 1 else "mixed"
