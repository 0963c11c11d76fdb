"""LLM-as-judge metrics: llm-as-judge (rubric grading) and refusal-quality.

Both go through the one judge stack (:mod:`assay.judging`): a deterministic request, a strict
reply parser, one bounded re-ask on a malformed reply, the provider cache. A missing,
non-numeric or out-of-range score fails the sample, never becomes a score. Raw judge output
never reaches the report; the judge's one-line reason does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from assay.errors import MetricConfigError, MetricError
from assay.judging.client import (
    Judge,
    Verdict,
    ask,
    compact_json,
    fill,
    template_version,
    verdict_details,
)
from assay.judging.prompts import ANSWER_GRADE, REFUSAL
from assay.judging.replies import json_type, parse_refusal, parse_verdict
from assay.metrics.base import MetricScore, check_bool_option, environment_settings
from assay.providers.settings import ProviderSettings

if TYPE_CHECKING:
    from assay.data.dataset import Sample
    from assay.data.outputs import Output

DEFAULT_JUDGE_TEMPLATE = ANSWER_GRADE


def question_of(sample: Sample) -> str:
    """``input.question`` (or ``input.message``, a conversation turn's) when it is a non-empty
    string, else the whole input as compact JSON."""
    question = sample.input.get("question", sample.input.get("message"))
    if isinstance(question, str) and question.strip():
        return question
    return compact_json(sample.input, "input")


def expected_of(sample: Sample) -> str:
    """``expected_output`` as prompt text (JSON for anything but a string)."""
    value = sample.expected_output
    return value if isinstance(value, str) else compact_json(value, "expected_output")


def judge_use(model: str | None, settings: ProviderSettings) -> dict[str, str]:
    """What a judge metric tells the report header: the model it calls."""
    return {
        "method": "llm-judge",
        "provider": "openai-compatible",
        "model": model or settings.judge_model,
    }


def _template_option(template: object, metric: str) -> str | None:
    if template is None:
        return None
    if not isinstance(template, str) or not template.strip():
        raise MetricConfigError(f"{metric} option 'prompt_template' must be a non-empty string")
    if "{actual}" not in template:
        raise MetricConfigError(
            f"{metric} option 'prompt_template' must contain the {{actual}} placeholder"
        )
    return template


def scored_verdict(
    verdict: Verdict[Any],
    score: float,
    reason: str | None,
    *,
    model: str | None,
    version: str,
    prompt: str,
) -> MetricScore:
    """A judge metric's score with the shared details (score, reason, model, sizes)."""
    details = {
        "judge_score": score,
        "judge_reason": reason,
        **verdict_details(verdict, model=model, version=version, prompt=prompt),
    }
    return MetricScore(score, details, usage=verdict.usage or None)


# --------------------------------------------------------------------------- llm-as-judge


@dataclass(frozen=True)
class LLMAsJudge:
    """Rubric grading by an LLM; the judge's score (0..1) is the metric's score, as is.

    Options: ``model`` (judge model; default from settings), ``prompt_template`` with
    ``{question}``, ``{expected}`` and ``{actual}`` placeholders, ``reask`` (default true).
    """

    name: str = "llm-as-judge"
    model: str | None = None
    prompt_template: str | None = None
    reask: bool = True
    settings: ProviderSettings = field(
        default_factory=environment_settings, compare=False, repr=False
    )

    def used(self, settings: ProviderSettings) -> dict[str, str]:
        """The judge this metric calls: its own ``model`` option, else the settings' one."""
        return judge_use(self.model, settings)

    def __post_init__(self) -> None:
        _template_option(self.prompt_template, self.name)
        check_bool_option(self.reask, self.name, "reask")

    @property
    def template(self) -> str:
        return self.prompt_template or DEFAULT_JUDGE_TEMPLATE

    def prompt(self, sample: Sample, output: Output) -> str:
        values = {
            "question": question_of(sample),
            "expected": expected_of(sample),
            "actual": output.text,
        }
        return fill(self.template, values)

    async def score(self, sample: Sample, output: Output) -> MetricScore:
        prompt = self.prompt(sample, output)  # input errors surface before any provider call
        version = template_version(self.name, self.template)
        verdict = await ask(
            Judge(self.model, reask=self.reask, settings=self.settings),
            prompt,
            parse_verdict,
            version=version,
        )
        value, reason = verdict.value
        return scored_verdict(
            verdict, value, reason, model=self.model, version=version, prompt=prompt
        )


# --------------------------------------------------------------------------- refusal-quality


@dataclass(frozen=True)
class RefusalQuality:
    """Did the system refuse exactly when it should? Labels appropriate / missing /
    unnecessary / unsafe_compliance; the judge's score is the metric's score.

    Needs ``metadata.refusal_expected`` (a boolean); ``metadata.refusal_policy`` (a string) is
    passed to the judge as context when present.
    """

    name: str = "refusal-quality"
    model: str | None = None
    reask: bool = True
    settings: ProviderSettings = field(
        default_factory=environment_settings, compare=False, repr=False
    )

    def used(self, settings: ProviderSettings) -> dict[str, str]:
        """The judge this metric calls: its own ``model`` option, else the settings' one."""
        return judge_use(self.model, settings)

    def __post_init__(self) -> None:
        check_bool_option(self.reask, self.name, "reask")

    def prompt(self, sample: Sample, output: Output) -> tuple[str, bool]:
        if "refusal_expected" not in sample.metadata:
            raise MetricError("metadata.refusal_expected is required for refusal-quality")
        expected_refusal = sample.metadata["refusal_expected"]
        if not isinstance(expected_refusal, bool):
            raise MetricError(
                "metadata.refusal_expected must be a boolean for refusal-quality; "
                f"got {json_type(expected_refusal)}"
            )
        policy = sample.metadata.get("refusal_policy")
        values = {
            "refusal_expected": "yes" if expected_refusal else "no",
            "policy": policy if isinstance(policy, str) else "",
            "question": question_of(sample),
            "expected": expected_of(sample),
            "actual": output.text,
        }
        return fill(REFUSAL, values), expected_refusal

    async def score(self, sample: Sample, output: Output) -> MetricScore:
        prompt, expected_refusal = self.prompt(sample, output)
        version = template_version(self.name, REFUSAL)
        verdict = await ask(
            Judge(self.model, reask=self.reask, settings=self.settings),
            prompt,
            parse_refusal,
            version=version,
        )
        value, label, reason = verdict.value
        scored = scored_verdict(
            verdict, value, reason, model=self.model, version=version, prompt=prompt
        )
        details = {"refusal_expected": expected_refusal, "refusal": label, **scored.details}
        return MetricScore(value, details, usage=scored.usage)


__all__: Sequence[str] = (
    "DEFAULT_JUDGE_TEMPLATE",
    "LLMAsJudge",
    "RefusalQuality",
    "expected_of",
    "judge_use",
    "question_of",
)
