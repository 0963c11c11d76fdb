"""Per-conversation aggregates: each metric's mean and minimum over a conversation's turns.

Fed one finished execution at a time (memory grows with conversations, not with turns), so it
works with or without the report's rows. Samples that are not turns are ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from assay.data.dataset import Sample, conversation_of
from assay.data.results import ExecutionResult, Thresholds
from assay.report.model import Conversation, ConversationMetric


@dataclass
class _Tally:
    scored: int = 0
    errored: int = 0
    total: float = 0.0
    low: float | None = None

    def add(self, value: float | None) -> None:
        if value is None:
            self.errored += 1
            return
        self.scored += 1
        self.total += value
        self.low = value if self.low is None else min(self.low, value)


@dataclass
class _Open:
    position: tuple[int, int]
    turns: int = 0
    passed: bool = True
    sut_errors: int = 0
    metrics: dict[str, _Tally] = field(default_factory=dict)


class ConversationCollector:
    """Collects turn results into :class:`~assay.report.model.Conversation` aggregates."""

    def __init__(self, thresholds: Thresholds | None = None) -> None:
        self.thresholds = thresholds
        self._open: dict[tuple[str, int], _Open] = {}

    def add(self, result: ExecutionResult, sample: Sample, position: int) -> None:
        turn = conversation_of(sample)
        if turn is None:
            return
        key = (turn[0], result.repetition)
        state = self._open.setdefault(key, _Open((position, result.repetition)))
        state.position = min(state.position, (position, result.repetition))
        state.turns += 1
        state.passed = state.passed and result.passed(self.thresholds)
        if result.sut_error is not None:
            state.sut_errors += 1
        for name, score in result.scores.items():
            state.metrics.setdefault(name, _Tally()).add(
                score.value if score.error is None else None
            )

    def build(self) -> list[Conversation] | None:
        """The conversations in dataset order; None when the run had none."""
        if not self._open:
            return None
        ordered = sorted(self._open.items(), key=lambda item: item[1].position)
        return [_conversation(cid, repetition, state) for (cid, repetition), state in ordered]


def _conversation(cid: str, repetition: int, state: _Open) -> Conversation:
    metrics = [
        ConversationMetric(
            name=name,
            scored=tally.scored,
            errored=tally.errored,
            mean=tally.total / tally.scored if tally.scored else None,
            min=tally.low,
        )
        for name, tally in state.metrics.items()
    ]
    return Conversation(
        id=cid,
        repetition=repetition,
        turns=state.turns,
        passed=state.passed,
        sut_errors=state.sut_errors,
        metrics=metrics,
    )
