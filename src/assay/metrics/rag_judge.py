"""The judge method of the RAG metrics (``method: judge``).

The units are the heuristic method's (claims, statements, contexts in ranking order); one judge
call per sample gives every unit its verdict (:mod:`assay.judging.prompts`: CLAIM_SUPPORT,
CONTEXT_USEFUL, STATEMENT_RELEVANCE). The reply must judge every unit exactly once, or it is
re-asked once and then the row is errored. Rows carry the judge's model, template version,
prompt and reply sizes and the usage, like ``llm-as-judge``; never the reply text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from assay.errors import MetricConfigError, MetricError
from assay.judging.client import Judge, Verdict, ask, fill, template_version, verdict_details
from assay.judging.prompts import CLAIM_SUPPORT, CONTEXT_USEFUL, STATEMENT_RELEVANCE
from assay.judging.replies import parse_numbered_flags
from assay.metrics.base import MetricScore, environment_settings
from assay.metrics.judge import judge_use
from assay.metrics.rag import (
    RagOptions,
    answer_claims,
    answer_statements,
    average_precision,
    contexts_of,
    precision_details,
    question_text,
    reference_text,
    relevance_from_ids,
    share_score,
)
from assay.metrics.retrieval import RELEVANT_KEY
from assay.providers.settings import ProviderSettings

if TYPE_CHECKING:
    from assay.data.dataset import Sample
    from assay.data.outputs import Output


def optional_question(metric: str, sample: Sample) -> str:
    """The question when the sample has one; context precision can be judged without it."""
    try:
        return question_text(metric, sample)
    except MetricError:
        return "(not given)"


def numbered(units: Sequence[str]) -> str:
    """``[1] first`` ... one unit per block, for a prompt."""
    return "\n\n".join(f"[{n}] {text}" for n, text in enumerate(units, start=1))


@dataclass(frozen=True)
class Judged(RagOptions):
    """The judge method's options: the heuristic's, and the provider settings it calls with."""

    method: str = "judge"
    settings: ProviderSettings = field(
        default_factory=environment_settings, compare=False, repr=False
    )

    METHOD = "judge"

    def _check_method_options(self) -> None:
        if self.tau is not None:
            raise MetricConfigError(f"{self.name}: option 'tau' applies to method: heuristic")
        if self.model is not None and (not isinstance(self.model, str) or not self.model):
            raise MetricConfigError(f"{self.name}: option 'model' must be a non-empty string")

    def used(self, settings: ProviderSettings) -> dict[str, str]:
        """The judge this metric calls: its own ``model`` option, else the settings' one."""
        return judge_use(self.model, settings)

    async def flags(
        self, template: str, values: dict[str, str], count: int, item: str, flag: str
    ) -> tuple[list[bool], Verdict[list[bool]], dict[str, Any]]:
        """One verdict per numbered unit from one judge call, and the call's details."""
        prompt = fill(template, values)
        version = template_version(f"{self.name}-{item}", template)

        def parse(text: str) -> list[bool]:
            return parse_numbered_flags(text, count, item, flag)

        verdict = await ask(
            Judge(self.model, reask=self.reask, settings=self.settings),
            prompt,
            parse,
            version=version,
        )
        details = verdict_details(verdict, model=self.model, version=version, prompt=prompt)
        return verdict.value, verdict, details

    async def claim_score(self, claims: list[str], contexts: Sequence[str]) -> MetricScore:
        values = {"contexts": numbered(contexts), "claims": numbered(claims)}
        verdicts, verdict, call = await self.flags(
            CLAIM_SUPPORT, values, len(claims), "claim", "supported"
        )
        value, details = share_score(
            claims, verdicts, ("supported", "unsupported"), texts=self.texts
        )
        return MetricScore(
            value, {"method": self.method, **details, **call}, usage=verdict.usage or None
        )


@dataclass(frozen=True)
class JudgedFaithfulness(Judged):
    name: str = "faithfulness"

    async def score(self, sample: Sample, output: Output) -> MetricScore:
        contexts = contexts_of(self.name, output)
        claims = answer_claims(self.name, output.text, "the answer")
        return await self.claim_score(claims, contexts)


@dataclass(frozen=True)
class JudgedContextRecall(Judged):
    name: str = "context-recall"

    async def score(self, sample: Sample, output: Output) -> MetricScore:
        contexts = contexts_of(self.name, output)
        reference = reference_text(self.name, sample)
        claims = answer_claims(self.name, reference, "the reference answer")
        return await self.claim_score(claims, contexts)


@dataclass(frozen=True)
class JudgedContextPrecision(Judged):
    name: str = "context-precision"

    async def score(self, sample: Sample, output: Output) -> MetricScore:
        flags = relevance_from_ids(self.name, sample, output)
        if flags is not None:  # ground-truth ids decide; no judge call is needed
            details = precision_details(flags, f"metadata.{RELEVANT_KEY}")
            return MetricScore(average_precision(flags), {"method": self.method, **details})
        reference = reference_text(self.name, sample)
        contexts = contexts_of(self.name, output)
        values = {
            "question": optional_question(self.name, sample),
            "expected": reference,
            "contexts": numbered(contexts),
        }
        flags, verdict, call = await self.flags(
            CONTEXT_USEFUL, values, len(contexts), "passage", "relevant"
        )
        details = {"method": self.method, **precision_details(flags, "judge"), **call}
        return MetricScore(average_precision(flags), details, usage=verdict.usage or None)


@dataclass(frozen=True)
class JudgedAnswerRelevancy(Judged):
    name: str = "answer-relevancy"

    async def score(self, sample: Sample, output: Output) -> MetricScore:
        question = question_text(self.name, sample)
        units = answer_statements(self.name, output)
        values = {"question": question, "statements": numbered(units)}
        verdicts, verdict, call = await self.flags(
            STATEMENT_RELEVANCE, values, len(units), "statement", "relevant"
        )
        value, details = share_score(
            units, verdicts, ("relevant", "irrelevant"), texts=self.texts, key="statements"
        )
        return MetricScore(
            value, {"method": self.method, **details, **call}, usage=verdict.usage or None
        )
