"""``assay simulate`` up to the written transcripts: check the request, read the goals, build
the system under test, run the conversations, write the dataset and its saved outputs.

Scoring the written files is ``assay run``'s work (the command does it through the Python
API right after), so simulated conversations are scored exactly as written ones are.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from assay.data.fileio import write_atomic
from assay.data.loading import load_dataset
from assay.engine.http_sut import HttpTarget
from assay.engine.sut import PythonTarget
from assay.errors import UsageError
from assay.generate.commands import check_writable
from assay.generate.simulate import Goal, SimulateOptions, Simulator, Target, Transcript, goals_of
from assay.generate.transcripts import DEFAULT_TURN_METRICS, transcripts_documents
from assay.generate.writer import write_dataset
from assay.metrics.registry import resolve_all
from assay.providers import registry
from assay.providers.settings import ProviderSettings

MAX_TURNS = 50
Echo = Callable[[str], None]


@dataclass(frozen=True)
class SimulateRequest:
    """The command line of ``assay simulate``, as given."""

    dataset: Path
    sut: str
    out: Path
    outputs: Path | None = None
    max_turns: int = 8
    user_model: str | None = None
    budget: float | None = None
    concurrency: int = 4
    sut_timeout: float = 60.0
    turn_metrics: tuple[str, ...] = DEFAULT_TURN_METRICS

    @property
    def outputs_path(self) -> Path:
        return self.outputs or self.out.with_name(f"{self.out.stem}.outputs.json")


@dataclass(frozen=True)
class SimulateOutcome:
    transcripts: list[Transcript]
    skipped: list[tuple[str, str]]
    written: bool
    halted: str | None
    spend_line: str


def check_request(request: SimulateRequest) -> None:
    if not 1 <= request.max_turns <= MAX_TURNS:
        raise UsageError(f"--max-turns must be between 1 and {MAX_TURNS}; got {request.max_turns}")
    if not 1 <= request.concurrency <= 64:
        raise UsageError(f"--concurrency must be between 1 and 64; got {request.concurrency}")
    if request.budget is not None and not (math.isfinite(request.budget) and request.budget >= 0):
        raise UsageError(f"--budget must be a number of dollars, 0 or more; got {request.budget}")
    if not (math.isfinite(request.sut_timeout) and request.sut_timeout > 0):
        raise UsageError(f"--sut-timeout must be above 0 seconds; got {request.sut_timeout}")
    if request.outputs_path.resolve() == request.out.resolve():
        raise UsageError("--outputs and -o must be different files")
    # A bad --metric before any call (built with default settings: nothing is called here).
    resolve_all([*request.turn_metrics, "goal-accuracy"], ProviderSettings())
    check_writable(request.out, "-o")
    check_writable(request.outputs_path, "--outputs")


def build_target(spec: str, timeout_s: float) -> Target:
    """The system under test: an http(s) URL, else ``module:function``."""
    if spec.startswith(("http://", "https://")):
        return HttpTarget.from_environment(spec, timeout_s=timeout_s)
    target = PythonTarget(spec)
    target.timeout_s = timeout_s
    return target


def run_simulate(
    request: SimulateRequest, settings: ProviderSettings, echo: Echo
) -> SimulateOutcome:
    """Simulate and write (the user model and judge call with ``settings``); the transcripts
    and their end."""
    check_request(request)
    dataset = load_dataset(request.dataset)
    goals, skipped = goals_of(dataset)
    if not goals:
        raise UsageError(
            f"{request.dataset}: no sample has both metadata.goal and metadata.persona"
        )
    _check_ids(dataset.name, goals, request.turn_metrics)
    target = build_target(request.sut, request.sut_timeout)
    for sample_id, reason in skipped:
        echo(f"skipped sample '{sample_id}': {reason}")
    options = SimulateOptions(
        request.max_turns, request.user_model, request.budget, request.concurrency
    )
    simulator = Simulator(target, options, settings)
    transcripts = asyncio.run(_simulate(simulator, goals, echo))
    for transcript in transcripts:
        echo(_ended(transcript))
    written = _write(request, dataset.name, transcripts, simulator.model)
    if not written:
        echo("no conversation got past its first turn; nothing was written")
    return SimulateOutcome(
        transcripts, skipped, written, simulator.spend.halted, simulator.spend.line()
    )


def _check_ids(name: str, goals: Sequence[Goal], turn_metrics: Sequence[str]) -> None:
    """The transcripts' dataset would validate (its ids too: ``c`` and ``c#goal``) before
    any call is made: checked on a one-turn stand-in of every conversation."""
    stand_ins = [Transcript(goal, ("?",), ("?",), "done") for goal in goals]
    transcripts_documents(f"{name}.simulated", stand_ins, "?", turn_metrics)


async def _simulate(simulator: Simulator, goals: Sequence[Goal], echo: Echo) -> list[Transcript]:
    try:
        return await simulator.run(goals, lambda plan: echo(plan.line()), scored=len(goals))
    finally:
        await registry.aclose()


def _ended(transcript: Transcript) -> str:
    detail = f": {transcript.detail}" if transcript.detail else ""
    turns = len(transcript.users)
    return (
        f"conversation '{transcript.goal.sample.id}': {turns} turn{'s' * (turns != 1)}, "
        f"ended {transcript.status}{detail}"
    )


def _write(request: SimulateRequest, name: str, transcripts: list[Transcript], model: str) -> bool:
    if not any(t.users for t in transcripts):
        return False
    dataset, outputs = transcripts_documents(
        f"{name}.simulated", transcripts, model, request.turn_metrics
    )
    write_dataset(request.out, dataset)
    write_atomic(request.outputs_path, json.dumps(outputs, ensure_ascii=False, indent=2) + "\n")
    return True
