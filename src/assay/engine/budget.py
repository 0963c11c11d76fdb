"""Budget halting: stop launching work before priced spend would pass ``--budget-usd``.

Spend is the sum of ``cost_usd`` over provider calls that were not cache hits. Before each new
execution the guard projects the next one's cost as the mean cost per execution so far, and
halts when spent + projected would exceed the limit. Work already in flight still finishes and
is kept; a halted run exits 1 and its report says where it stopped.
"""

from __future__ import annotations

from assay.data.results import ExecutionResult
from assay.engine.evaluation import RunState
from assay.providers.pricing import format_usd
from assay.report.model import Budget


def execution_cost(result: ExecutionResult) -> float:
    records = list(result.sut_usage)
    for score in result.scores.values():
        records.extend(score.usage)
    total = 0.0
    for record in records:
        cost = record.get("cost_usd")
        if (
            not record.get("cached")
            and isinstance(cost, (int, float))
            and not isinstance(cost, bool)
            and cost > 0
        ):
            total += float(cost)
    return total


class BudgetGuard:
    """Watches finished executions and tells the runner when to stop."""

    def __init__(self, limit_usd: float, state: RunState) -> None:
        self.limit_usd = limit_usd
        self.state = state
        self.spent_usd = 0.0
        self.executions = 0
        state.should_stop = self.should_stop

    def observe(self, result: ExecutionResult) -> None:
        self.spent_usd += execution_cost(result)
        self.executions += 1

    def should_stop(self, in_flight: int = 0) -> bool:
        """True when one more execution (on top of ``in_flight`` unfinished ones) could overspend.

        The concurrent runner passes ``in_flight`` and, on True, waits for those to finish and
        asks again; it halts only when nothing is in flight. Until the first execution has
        finished its cost is unknown, so only one runs.
        """
        if in_flight and not self.executions:
            return True
        projected = self.spent_usd / self.executions if self.executions else 0.0
        if self.spent_usd + projected * (1 + in_flight) > self.limit_usd:
            if not in_flight:
                self.state.halt_reason = (
                    f"spent {format_usd(self.spent_usd)} of a {format_usd(self.limit_usd)} budget "
                    f"after {self.executions} executions; "
                    f"the next one was projected at {format_usd(projected)}"
                )
            return True
        return False

    def block(self, completed: int) -> Budget:
        return Budget(
            limit_usd=self.limit_usd,
            spent_usd=round(self.spent_usd, 8),
            halted=self.state.halted,
            completed_executions=completed,
            reason=self.state.halt_reason if self.state.halted else None,
        )
