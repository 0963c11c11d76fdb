"""``assay simulate``: a simulated user with a goal and a persona talks to a system under test.

For each sample carrying ``metadata.goal`` and ``metadata.persona``, the user model (through
the one judge stack, so its replies are parsed strictly, re-asked once and cached) writes the
next message given the conversation so far; the system under test answers it with the
conversation's ``history``, exactly as ``assay run`` calls it on a conversation turn. The talk
ends when the user says its goal is reached (``done``) or gives up (``abandon``), at the turn
limit, or when either side fails. The transcripts become an ordinary dataset of conversations
plus saved outputs (:mod:`assay.generate.transcripts`), scored like any other.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from assay.data.dataset import HISTORY_KEY, MESSAGE_KEY, Dataset, Sample, conversation_of, turn_id
from assay.data.outputs import Output
from assay.errors import AssayError, MetricError
from assay.generate.cost import CallPlan, Spend, estimate_call, plan_calls
from assay.generate.prompts import USER, parse_user_turn
from assay.judging.client import JUDGE_PARAMS, Judge, ask, fill, template_version
from assay.providers.cache import open_cache
from assay.providers.registry import chat_provider
from assay.providers.settings import ProviderSettings

USER_VERSION: Final = template_version("simulate-user", USER)
TURN_ALLOWANCE: Final = 80  # completion tokens a user turn is estimated at
NOTHING_YET: Final = "(nothing yet: write your first message)"


class Target(Protocol):
    """A system under test as :mod:`assay.engine.sut` builds it."""

    async def answer(self, sample: Sample) -> Output: ...


@dataclass(frozen=True)
class Goal:
    """A sample to simulate: its goal and the persona that pursues it."""

    sample: Sample
    goal: str
    persona: str


@dataclass(frozen=True)
class Transcript:
    """One simulated conversation: user messages, the system's replies, how it ended."""

    goal: Goal
    users: tuple[str, ...]
    replies: tuple[str, ...]
    status: str  # done | abandon | max-turns | sut-error | user-error | budget
    detail: str = ""


@dataclass(frozen=True)
class SimulateOptions:
    max_turns: int = 8
    user_model: str | None = None
    budget_usd: float | None = None
    concurrency: int = 4


def goals_of(dataset: Dataset) -> tuple[list[Goal], list[tuple[str, str]]]:
    """The samples to simulate, and ``(id, reason)`` for each sample left out."""
    goals: list[Goal] = []
    skipped: list[tuple[str, str]] = []
    for sample in dataset.samples:
        goal, persona = sample.metadata.get("goal"), sample.metadata.get("persona")
        if conversation_of(sample) is not None:
            skipped.append((sample.id, "a turn of a written conversation"))
        elif not isinstance(goal, str) or not goal.strip():
            skipped.append((sample.id, "no metadata.goal (a non-empty string)"))
        elif not isinstance(persona, str) or not persona.strip():
            skipped.append((sample.id, "no metadata.persona (a non-empty string)"))
        else:
            goals.append(Goal(sample, goal.strip(), persona.strip()))
    return goals, skipped


def transcript_text(users: Sequence[str], replies: Sequence[str]) -> str:
    """The conversation as ``user: ...`` / ``assistant: ...`` lines (one line per message)."""
    lines = []
    for number, message in enumerate(users):
        lines.append(f"user: {' '.join(message.split())}")
        if number < len(replies):
            lines.append(f"assistant: {' '.join(replies[number].split())}")
    return "\n".join(lines)


def user_prompt(goal: Goal, users: Sequence[str], replies: Sequence[str]) -> str:
    so_far = transcript_text(users, replies) or NOTHING_YET
    return fill(USER, {"persona": goal.persona, "goal": goal.goal, "transcript": so_far})


def history(users: Sequence[str], replies: Sequence[str]) -> list[dict[str, str]]:
    """Earlier turns as chat messages, as ``assay run`` hands them to a conversation's turn."""
    messages: list[dict[str, str]] = []
    for message, reply in zip(users, replies):
        messages += [{"role": "user", "content": message}, {"role": "assistant", "content": reply}]
    return messages


class Simulator:
    """Runs the simulated conversations (the settings must be in force: the user model is
    asked through :mod:`assay.judging`)."""

    def __init__(
        self, target: Target, options: SimulateOptions, settings: ProviderSettings
    ) -> None:
        self.target = target
        self.options = options
        self.settings = settings
        self.model = options.user_model or settings.judge_model
        self.spend = Spend(options.budget_usd)

    def plan(self, goals: Sequence[Goal], scored: int) -> CallPlan:
        """At most ``max_turns`` user calls per conversation, plus ``scored`` judge calls."""
        first = [(user_prompt(g, [], []), self._cached(user_prompt(g, [], []))) for g in goals]
        later = [(prompt, False) for prompt, _ in first] * (self.options.max_turns - 1)
        prompts = first + later
        note = (
            f"an upper bound: {len(goals)} conversations of at most {self.options.max_turns} "
            f"turns; then {scored} judge calls to score them"
        )
        return plan_calls(self.model, prompts, TURN_ALLOWANCE, self.settings.prices, note)

    def _cached(self, prompt: str) -> bool:
        """Whether the cache answers this user prompt (known for first turns only: later
        prompts hold the system's replies)."""
        cache = open_cache(self.settings.cache_dir, self.settings.cache_mode)
        if not cache.reads:
            return False
        provider = chat_provider(self.settings, self.options.user_model)
        messages = [{"role": "user", "content": prompt}]
        return cache.get(provider.key(messages, JUDGE_PARAMS, USER_VERSION)) is not None

    async def run(
        self, goals: Sequence[Goal], on_plan: Callable[[CallPlan], None], scored: int
    ) -> list[Transcript]:
        on_plan(self.plan(goals, scored))
        gate = asyncio.Semaphore(self.options.concurrency)

        async def one(goal: Goal) -> Transcript:
            async with gate:
                return await self.converse(goal)

        return list(await asyncio.gather(*(one(goal) for goal in goals)))

    async def converse(self, goal: Goal) -> Transcript:
        """One conversation, turn by turn, until it ends."""
        users: list[str] = []
        replies: list[str] = []
        for _ in range(self.options.max_turns):
            said = await self._user_turn(goal, users, replies)
            if isinstance(said, Transcript):
                return said
            users.append(said)
            reply = await self._sut_turn(goal, users, replies)
            if isinstance(reply, Transcript):
                return reply
            replies.append(reply)
        return Transcript(goal, tuple(users), tuple(replies), "max-turns")

    async def _user_turn(
        self, goal: Goal, users: list[str], replies: list[str]
    ) -> str | Transcript:
        """The user's next message, or the transcript's end (done, abandon, error, budget)."""
        prompt = user_prompt(goal, users, replies)
        ended = tuple(users), tuple(replies)
        estimate = estimate_call(self.model, prompt, TURN_ALLOWANCE, self.settings.prices)
        if not self.spend.allows(estimate):
            return Transcript(goal, *ended, "budget", self.spend.halted or "")
        try:
            verdict = await ask(
                Judge(self.options.user_model, settings=self.settings),
                prompt,
                parse_user_turn,
                version=USER_VERSION,
            )
        except MetricError as exc:
            self.spend.add(exc.usage)
            return Transcript(goal, *ended, "user-error", str(exc))
        self.spend.add(verdict.usage)
        message, status = verdict.value
        if status != "continue":
            return Transcript(goal, *ended, status)
        return message

    async def _sut_turn(self, goal: Goal, users: list[str], replies: list[str]) -> str | Transcript:
        """The system's reply to the last user message, or the transcript's end on a failure
        (the unanswered message is left out)."""
        shared = {k: v for k, v in goal.sample.input.items() if k not in (MESSAGE_KEY, HISTORY_KEY)}
        data: Mapping[str, Any] = {
            **shared,
            MESSAGE_KEY: users[-1],
            HISTORY_KEY: history(users[:-1], replies),
        }
        sample = Sample(
            id=turn_id(goal.sample.id, len(users)), input=dict(data), expected_output=None
        )
        try:
            output = await self.target.answer(sample)
        except AssayError as exc:
            return Transcript(goal, tuple(users[:-1]), tuple(replies), "sut-error", str(exc))
        return output.text
