"""``assay generate``'s work: ask the generator for samples, check each, keep the good ones.

Tasks come from :mod:`assay.generate.plan` in rounds: the first round asks for ``n`` samples;
each later round asks for as many as were dropped, until ``n`` are kept or ``max_attempts``
tasks were tried. Every reply is kept in the provider cache as it arrived (a malformed one
too), so a rerun with the same seed and options replays every answer and makes no call, and
drops the same samples for the same reasons. Checks run in task order, so the kept set does
not depend on which reply arrived first.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from assay.data.dataset import Sample
from assay.errors import JudgeParseError, ProviderError
from assay.generate.corpus import Corpus
from assay.generate.cost import CallPlan, Spend, estimate_call, plan_calls
from assay.generate.plan import DEFAULT_MIX, Task, tasks
from assay.generate.prompts import (
    CHECK,
    GENERATE,
    KIND_INSTRUCTIONS,
    parse_generation,
    passages,
    prompt_hash,
)
from assay.generate.quality import (
    DEFAULT_DUPLICATE_THRESHOLD,
    Duplicates,
    Verdict,
    heuristic_check,
    judge_check,
    leaks,
)
from assay.judging.client import Judge, fill, template_version
from assay.providers.cache import open_cache
from assay.providers.chat import ChatProvider, RejectedReply
from assay.providers.registry import chat_provider
from assay.providers.settings import ProviderSettings

COMPLETION_ALLOWANCE: Final = 200  # tokens a generation or check reply is estimated at
ANSWERED_KINDS: Final = ("single-fact", "multi-hop", "comparison")


@dataclass(frozen=True)
class GenerateOptions:
    """Everything ``assay generate`` decides besides the corpus and the provider settings."""

    n: int
    seed: int = 0
    mix: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_MIX))
    personas: tuple[str, ...] = ()
    check: str = "heuristic"  # or "judge"
    duplicate_threshold: float = DEFAULT_DUPLICATE_THRESHOLD
    max_attempts: int | None = None  # default: three times n
    model: str | None = None  # the generator; default: the judge model
    budget_usd: float | None = None
    temperature: float = 0.7

    @property
    def attempts(self) -> int:
        return self.max_attempts if self.max_attempts is not None else 3 * self.n


@dataclass(frozen=True)
class Drop:
    """A generated sample that was not kept, and why."""

    task: int
    kind: str
    reason: str
    detail: str = ""


@dataclass
class Generated:
    """The outcome: kept samples in task order, drops, spend, and the plan printed first."""

    model: str
    samples: list[Sample] = field(default_factory=list)
    drops: list[Drop] = field(default_factory=list)
    attempted: int = 0
    spend: Spend = field(default_factory=Spend)


@dataclass(frozen=True)
class _Draft:
    """One task's prompt and, once asked, the reply text (None after an error)."""

    task: Task
    prompt: str
    text: str | None = None
    error: str = ""


def generation_prompt(task: Task) -> str:
    values = {
        "persona": task.persona,
        "kind": task.kind,
        "instruction": KIND_INSTRUCTIONS[task.kind],
        "passages": passages(task.chunks),
    }
    return fill(GENERATE, values)


def generation_params(task: Task, options: GenerateOptions) -> dict[str, Any]:
    """Request parameters: the task's own seed makes a deterministic model repeat itself."""
    return {
        "temperature": options.temperature,
        "seed": task.seed,
        "response_format": {"type": "json_object"},
    }


VERSION: Final = template_version("generate", GENERATE)


class Generator:
    """One ``assay generate`` run over a corpus (the settings must be in force: the judge
    check asks through :mod:`assay.judging`, which reads them)."""

    def __init__(
        self, corpus: Corpus, options: GenerateOptions, settings: ProviderSettings
    ) -> None:
        self.corpus = corpus
        self.options = options
        self.settings = settings
        self.provider: ChatProvider = chat_provider(settings, options.model)
        self.result = Generated(self.provider.model, spend=Spend(options.budget_usd))
        self._duplicates = Duplicates(options.duplicate_threshold)
        self._cache = open_cache(settings.cache_dir, settings.cache_mode)
        self._stream: Iterator[Task] = tasks(
            corpus, dict(options.mix), options.personas, options.seed
        )

    def _cached(self, task: Task, prompt: str) -> bool:
        cache = self._cache
        if not cache.reads:
            return False
        key = self.provider.key(
            self._messages(prompt), generation_params(task, self.options), VERSION
        )
        return cache.get(key) is not None

    @staticmethod
    def _messages(prompt: str) -> list[dict[str, str]]:
        return [{"role": "user", "content": prompt}]

    def plan(self, first: Sequence[Task]) -> CallPlan:
        """The calls of the first round (and the check calls with ``check: judge``)."""
        prompts = [(p, self._cached(t, p)) for t in first for p in [generation_prompt(t)]]
        extra = self.options.attempts - len(first)
        note = f"up to {extra} more to replace dropped samples" if extra > 0 else ""
        if self.options.check == "judge":
            note += f"{'; ' if note else ''}plus one judge check per generated sample"
            prompts += [(CHECK + p, False) for p, _ in prompts]
        return plan_calls(
            self.provider.model, prompts, COMPLETION_ALLOWANCE, self.settings.prices, note
        )

    async def run(self, on_plan: Callable[[CallPlan], None]) -> Generated:
        """Rounds of generation until ``n`` are kept, the attempts run out or the budget ends."""
        batch = list(itertools.islice(self._stream, min(self.options.n, self.options.attempts)))
        on_plan(self.plan(batch))
        while batch:
            drafts = await self._ask_all(batch)
            await self._keep(drafts)
            if self.result.spend.halted:
                break
            missing = self.options.n - len(self.result.samples)
            room = self.options.attempts - self.result.attempted
            batch = list(itertools.islice(self._stream, max(0, min(missing, room))))
        return self.result

    def _affordable(self, batch: Sequence[Task]) -> list[_Draft]:
        """The batch's drafts up to the first uncached one the budget cannot pay for."""
        drafts: list[_Draft] = []
        spend, planned = self.result.spend, 0.0
        for task in batch:
            prompt = generation_prompt(task)
            if spend.budget_usd is not None and not self._cached(task, prompt):
                cost = estimate_call(
                    self.provider.model, prompt, COMPLETION_ALLOWANCE, self.settings.prices
                )
                if cost is not None and self.options.check == "judge":
                    cost *= 2  # its check: about as long a prompt
                if not spend.allows(cost, planned):
                    break
                planned += cost or 0.0
            drafts.append(_Draft(task, prompt))
        return drafts

    async def _ask_all(self, batch: Sequence[Task]) -> list[_Draft]:
        drafts = self._affordable(batch)
        return list(await asyncio.gather(*(self._ask(d) for d in drafts)))

    async def _ask(self, draft: _Draft) -> _Draft:
        params = generation_params(draft.task, self.options)
        try:
            text, reply = await self.provider.complete(
                self._messages(draft.prompt),
                params=params,
                template_version=VERSION,
                accept=_as_text,
                what="generation request",
            )
        except RejectedReply as exc:
            self.result.spend.add(exc.usage)
            return _Draft(draft.task, draft.prompt, None, f"malformed: {exc.reason}")
        except ProviderError as exc:
            self.result.spend.add(tuple(getattr(exc, "usage", ()) or ()))
            return _Draft(draft.task, draft.prompt, None, str(exc))
        self.result.spend.add(reply.usage)
        return _Draft(draft.task, draft.prompt, text)

    async def _keep(self, drafts: Sequence[_Draft]) -> None:
        """Parse, check and de-duplicate the drafts in task order."""
        parsed: list[tuple[_Draft, str, str]] = []
        for draft in drafts:
            self.result.attempted += 1
            found = self._parse(draft)
            if found is not None:
                parsed.append((draft, *found))
        verdicts = await asyncio.gather(*(self._check(d, q, a) for d, q, a in parsed))
        for (draft, question, answer), verdict in zip(parsed, verdicts, strict=True):
            self.result.spend.add(verdict.usage)
            if verdict.reason is not None:
                self._drop(draft.task, verdict.reason, verdict.detail)
            else:
                self._admit(draft, question, answer)

    def _parse(self, draft: _Draft) -> tuple[str, str] | None:
        """``(question, answer)``, or None after recording the drop."""
        if draft.text is None:
            reason = "malformed" if draft.error.startswith("malformed") else "error"
            self._drop(draft.task, reason, draft.error)
            return None
        try:
            question, answer = parse_generation(draft.text)
        except JudgeParseError as exc:
            self._drop(draft.task, "malformed", str(exc))
            return None
        if draft.task.kind != "unanswerable" and leaks(question, answer):
            self._drop(draft.task, "answer-leak", "the question contains the answer")
            return None
        return question, answer

    async def _check(self, draft: _Draft, question: str, answer: str) -> Verdict:
        if self.options.check == "judge":
            return await judge_check(
                Judge(settings=self.settings), draft.task.kind, question, answer, draft.task.chunks
            )
        return heuristic_check(draft.task.kind, answer, draft.task.chunks)

    def _admit(self, draft: _Draft, question: str, answer: str) -> None:
        if len(self.result.samples) >= self.options.n:
            return  # a round never asks for more than are missing; kept for safety
        duplicate = self._duplicates.match(question)
        if duplicate is not None:
            kept_id, similarity = duplicate
            self._drop(draft.task, "near-duplicate", f"{similarity:.0f}% like sample {kept_id}")
            return
        sample = build_sample(draft, question, answer, self.provider.model, self.options.check)
        self._duplicates.add(sample.id, question)
        self.result.samples.append(sample)

    def _drop(self, task: Task, reason: str, detail: str) -> None:
        self.result.drops.append(Drop(task.index, task.kind, reason, detail))


def _as_text(text: str) -> str:
    """Every non-empty reply is cached as it came, so a rerun drops a malformed one again
    without asking: the run is reproducible and its rerun free."""
    return text


def sample_id(task: Task) -> str:
    return f"gen-{task.index + 1:04d}"


def build_sample(draft: _Draft, question: str, answer: str, model: str, check: str) -> Sample:
    """The dataset sample of a kept draft, with its labels and provenance."""
    task = draft.task
    metadata: dict[str, Any] = {
        "tags": ["generated", task.kind],
        "kind": task.kind,
        "persona": task.persona,
        "contexts": [{"id": c.id, "text": c.text} for c in task.chunks],
    }
    if task.kind == "unanswerable":
        metadata["refusal_expected"] = True
    else:
        metadata["relevant"] = {chunk.id: 1 for chunk in task.chunks}
    metadata["provenance"] = {
        "documents": sorted({chunk.document for chunk in task.chunks}),
        "chunks": [chunk.id for chunk in task.chunks],
        "model": model,
        "template_version": VERSION,
        "prompt_hash": prompt_hash(draft.prompt),
        "seed": task.seed,
        "check": check,
    }
    return Sample(
        id=sample_id(task), input={"question": question}, expected_output=answer, metadata=metadata
    )
