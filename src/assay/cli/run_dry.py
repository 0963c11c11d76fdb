"""``assay run --dry-run``: what a run would ask of its model providers, with nothing sent.

The run goes through the usual path (the same metrics, prompts, cache keys and price table),
but the provider client sends no request: a request the provider cache answers is replayed
(a *cache hit*, as in a real run), any other is counted with its estimated tokens and cost
(:mod:`assay.providers.estimate`) and stops that metric for that sample. The system under test
is not called either: saved outputs are read as usual; a Python or HTTP system is stood in for
by each sample's expected output (its answers are not known before it runs). Nothing is stored
and the exit code is 0.

What the count cannot see: a metric whose later requests depend on an earlier reply (claims
first, then one verdict per claim) counts only its first uncached request per sample, and a
judge's re-ask after a malformed reply is not counted.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import typer

from assay.cli.console import fail
from assay.cli.run_plan import Plan
from assay.providers.pricing import format_usd
from assay.report.model import Report, UsageBlock

COLUMNS = ("metric", "calls", "cached", "to send", "prompt tokens", "reply tokens", "cost")


def dry_run(plan: Plan, evaluate: Callable[[Plan], Any]) -> None:
    """Count the run's provider calls per metric and print them (stdout); exit 0."""
    if len(plan.systems) > 1:
        fail("--dry-run works with one system under test")
    if plan.systems and plan.systems[0].kind == "outputs":
        pass  # saved outputs are read, as in a real run
    else:
        plan.system = _stand_in(plan)
    report = evaluate(plan)
    names = [metric.name for metric in plan.metrics]
    rows = [_row(name, report.usage.per_metric.get(name)) for name in names]
    total = _row("total", report.usage)
    if plan.config.fmt == "json":
        document = {
            "schema_version": "assay.dry-run.v1",
            "dataset": report.dataset.name,
            "executions": report.summary.total_executions,
            "metrics": [dict(zip(COLUMNS, row)) for row in rows],
            "total": dict(zip(COLUMNS, total)),
        }
        typer.echo(json.dumps(document, indent=2))
    else:
        typer.echo(_table(report, rows, total))
    raise typer.Exit(0)


def _stand_in(plan: Plan) -> Any:
    """Saved outputs holding each selected sample's expected output (as text)."""
    from assay.data.outputs import Output
    from assay.engine.sut import SavedOutputs

    answers = {
        sample.id: Output(
            text=sample.expected_output
            if isinstance(sample.expected_output, str)
            else json.dumps(sample.expected_output, ensure_ascii=False)
        )
        for sample in plan.selected.samples
    }
    return SavedOutputs(answers, "expected outputs (dry run)")


def _row(name: str, block: UsageBlock | None) -> tuple[Any, ...]:
    """One metric's (or the total's) counts; cost None when a model is unpriced."""
    if block is None:
        return (name, 0, 0, 0, 0, 0, 0.0)
    cost = block.cost_usd if block.complete else None
    to_send = block.calls - block.cached_calls
    return (
        name,
        block.calls,
        block.cached_calls,
        to_send,
        block.prompt_tokens,
        block.completion_tokens,
        cost if cost is not None or block.calls else 0.0,
    )


def _table(report: Report, rows: list[tuple[Any, ...]], total: tuple[Any, ...]) -> str:
    """The counts as an aligned text table, with the estimate's basis under it."""
    cells = [list(COLUMNS)] + [[*map(str, r[:-1]), _money(r[-1])] for r in [*rows, total]]
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    lines = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths))
        )
        for line in cells
    ]
    head = (
        f"dry run of {report.dataset.name}: {report.summary.total_executions} executions, "
        "no request sent"
    )
    foot = (
        "tokens are estimates (4 characters a token, 100 a reply; docs/runner.md); a cost is "
        "tokens times the price table; later calls that depend on a reply are not counted"
    )
    return "\n".join([head, *lines, foot])


def _aligned(line: list[str], widths: list[int]) -> list[str]:
    """The metric name left-aligned, the numbers right-aligned."""
    return [c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths))]


def _money(value: float | None) -> str:
    return "unpriced" if value is None else format_usd(float(value))
