"""The ``rubric`` metric: an LLM judge gives one verdict per weighted criterion.

The rubric (metric option ``rubric``: a list of criteria, a mapping with ``criteria``, or a
YAML/JSON file path; or ``metadata.rubric`` on a sample) declares binary criteria
(MET / UNMET / CANNOT_ASSESS), ordinal and nominal multi-choice criteria (options, NA options)
and weights (negative = penalty). Every multi-choice criterion gets a "cannot assess" NA
option when it has none, so a judge can always abstain instead of guessing.

The judge answers in strict JSON, one call per rubric (default) or one call per criterion
(``per_criterion: true``); a malformed answer gets one bounded re-ask, then the call fails.
With several judge models (``models: [a, b, c]``) the verdicts are aggregated per criterion
(``aggregation: {binary: majority|weighted|unanimous, ordinal: median|mean|mode, nominal:
mode}``, worst-case tie-break; see :mod:`assay.calibration.aggregate`). A judge whose call
failed does not vote; if every judge failed, the sample is a recorded failure.

The score is the weighted rubric score (:mod:`assay.calibration.scoring`) under the abstention
policy ``abstain: skip | zero | worst`` (recorded in the details). When nothing could be scored
(every verdict abstained) the sample fails; it is never scored 0.0. Per-criterion verdicts and
every judge's vote go into the details, which ``assay calibrate`` reads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from assay.errors import MetricConfigError, MetricError
from assay.judging.client import fill
from assay.judging.prompts import RUBRIC as RUBRIC_TEMPLATE
from assay.judging.prompts import RUBRIC_CRITERION as CRITERION_TEMPLATE
from assay.metrics.base import MetricScore, check_bool_option, environment_settings
from assay.metrics.rubric_criteria import NA_LABEL, describe, parse_rubric, with_na_options
from assay.metrics.rubric_options import aggregation_of, judge_list
from assay.metrics.rubric_replies import parse_criterion_reply, parse_rubric_reply
from assay.providers.settings import ProviderSettings

if TYPE_CHECKING:
    import numpy as np

    from assay.calibration.model import Criterion
    from assay.calibration.scoring import AbstainPolicy
    from assay.data.dataset import Sample
    from assay.data.outputs import Output

__all__ = [
    "NA_LABEL",
    "JudgeVotes",
    "RubricJudge",
    "describe",
    "parse_criterion_reply",
    "parse_rubric",
    "parse_rubric_reply",
    "with_na_options",
]

_Usage = tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class JudgeVotes:
    """One judge model's verdict codes on one sample (FAILED where its call failed)."""

    model: str
    codes: list[int]
    reason: str | None
    error: str | None
    usage: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class RubricJudge:
    """Weighted rubric grading by one or more LLM judges (see the module docstring).

    Options: ``rubric``, ``model`` (one judge) or ``models`` (a list: an ensemble; entries may
    be ``{model, weight}``), ``per_criterion`` (default false), ``aggregation``, ``abstain``
    (skip | zero | worst, default skip), ``reask`` (default true).
    """

    name: str = "rubric"
    rubric: Any = None
    model: str | None = None
    models: Any = None
    per_criterion: bool = False
    aggregation: Any = None
    abstain: AbstainPolicy = "skip"  # checked in __post_init__ (options come from YAML)
    reask: bool = True
    settings: ProviderSettings = field(
        default_factory=environment_settings, compare=False, repr=False
    )
    _criteria: tuple[Criterion, ...] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    _judges: tuple[tuple[str | None, float], ...] = field(
        default=(), init=False, repr=False, compare=False
    )
    _aggregation: Any = field(default=None, init=False, repr=False, compare=False)

    def used(self, settings: ProviderSettings) -> dict[str, str]:
        """The judge(s) this metric calls: its ``model``/``models`` options, else the settings'."""
        models = [model or settings.judge_model for model, _ in self._judges]
        return {
            "method": "llm-judge",
            "provider": "openai-compatible",
            "model": ", ".join(dict.fromkeys(models or [settings.judge_model])),
        }

    def __post_init__(self) -> None:
        """Check the options (they come from YAML) and resolve rubric, judges, aggregation."""
        from assay.calibration.scoring import ABSTAIN_POLICIES

        if self.rubric is not None:
            object.__setattr__(
                self, "_criteria", parse_rubric(self.rubric, where=f"{self.name} option 'rubric'")
            )
        if self.abstain not in ABSTAIN_POLICIES:
            raise MetricConfigError(
                f"{self.name} option 'abstain' must be one of {', '.join(ABSTAIN_POLICIES)}"
            )
        for flag in ("per_criterion", "reask"):
            check_bool_option(getattr(self, flag), self.name, flag)
        object.__setattr__(self, "_judges", judge_list(self.name, self.model, self.models))
        object.__setattr__(self, "_aggregation", aggregation_of(self.name, self.aggregation))

    # ------------------------------------------------------------------ pieces

    def criteria_for(self, sample: Sample) -> tuple[Criterion, ...]:
        """The effective criteria for ``sample`` (metadata.rubric wins over the option)."""
        raw = sample.metadata.get("rubric")
        if raw is not None:
            try:
                criteria = parse_rubric(raw, where="metadata.rubric")
            except MetricConfigError as exc:
                raise MetricError(str(exc)) from None
        elif self._criteria is not None:
            criteria = self._criteria
        else:
            raise MetricError(
                f"{self.name}: no rubric; set the metric option 'rubric' or the sample's "
                "metadata.rubric"
            )
        return with_na_options(criteria)

    def _values(self, sample: Sample, output: Output) -> dict[str, str]:
        from assay.metrics.judge import expected_of, question_of

        return {
            "question": question_of(sample),
            "expected": expected_of(sample),
            "actual": output.text,
        }

    def prompts(self, criteria: Sequence[Criterion], sample: Sample, output: Output) -> list[str]:
        """The prompts one judge receives: one, or one per criterion."""
        values = self._values(sample, output)
        if self.per_criterion:
            return [
                fill(CRITERION_TEMPLATE, {**values, "criteria": describe([c]), "keys": ""})
                for c in criteria
            ]
        keys = ", ".join(f'"{c.name}": "..."' for c in criteria)
        return [fill(RUBRIC_TEMPLATE, {**values, "criteria": describe(criteria), "keys": keys})]

    async def _one_judge(
        self, model: str | None, criteria: Sequence[Criterion], prompts: list[str]
    ) -> JudgeVotes:
        """One judge model's votes: one call for the rubric, or one call per criterion."""
        if model is None:
            model = self.settings.judge_model
        if not self.per_criterion:
            return await self._whole_rubric(model, criteria, prompts[0])
        results = await asyncio.gather(
            *(self._one_criterion(model, p, c) for p, c in zip(prompts, criteria))
        )
        codes = [r[0] for r in results]
        errors = [r[2] for r in results if r[2] is not None]
        usage = tuple(u for r in results for u in r[3])
        reasons = [r[1] for r in results if r[1]]
        return JudgeVotes(
            model,
            codes,
            " | ".join(reasons)[:500] if reasons else None,
            errors[0] if errors and len(errors) == len(codes) else None,
            usage,
        )

    async def _whole_rubric(
        self, model: str, criteria: Sequence[Criterion], prompt: str
    ) -> JudgeVotes:
        """One call for every criterion; a failed call fails every verdict."""
        from assay.calibration.model import FAILED
        from assay.judging.client import Judge, ask, template_version

        try:
            verdict = await ask(
                Judge(model, reask=self.reask, settings=self.settings),
                prompt,
                lambda text: parse_rubric_reply(text, criteria),
                version=template_version(self.name, RUBRIC_TEMPLATE),
            )
        except MetricError as exc:
            return JudgeVotes(model, [FAILED] * len(criteria), None, str(exc), tuple(exc.usage))
        codes, reason = verdict.value
        return JudgeVotes(model, list(codes), reason, None, verdict.usage)

    async def _one_criterion(
        self, model: str, prompt: str, criterion: Criterion
    ) -> tuple[int, str | None, str | None, _Usage]:
        """(code, reason, error, usage) of one criterion's call; FAILED when it failed."""
        from assay.calibration.model import FAILED
        from assay.judging.client import Judge, ask, template_version

        try:
            verdict = await ask(
                Judge(model, reask=self.reask, settings=self.settings),
                prompt,
                lambda text: parse_criterion_reply(text, criterion),
                version=template_version(f"{self.name}-criterion", CRITERION_TEMPLATE),
            )
        except MetricError as exc:
            return FAILED, None, str(exc), tuple(exc.usage)
        code, reason = verdict.value
        return code, reason, None, verdict.usage

    async def votes(
        self, sample: Sample, output: Output
    ) -> tuple[tuple[Criterion, ...], list[JudgeVotes]]:
        """Every judge's verdict codes on one sample, before aggregation and scoring.

        ``assay calibrate`` uses this directly: a judge that abstained on every criterion has
        no score, but its verdicts still count as agreement data.
        """
        criteria = self.criteria_for(sample)
        prompts = self.prompts(criteria, sample, output)  # input errors before any call
        votes = await asyncio.gather(
            *(self._one_judge(m, criteria, prompts) for m, _ in self._judges)
        )
        return criteria, list(votes)

    async def score(self, sample: Sample, output: Output) -> MetricScore:
        """The weighted rubric score of the judges' aggregated verdicts, with every vote in the
        details; MetricError when every judge failed or nothing could be scored."""
        import numpy as np

        from assay.calibration.scoring import weighted_scores

        criteria, votes = await self.votes(sample, output)
        prompts = self.prompts(criteria, sample, output)
        usage = tuple(u for v in votes for u in v.usage)
        if all(v.error is not None for v in votes):
            raise MetricError(votes[0].error or "every judge call failed", usage=usage)
        final = self._consensus(criteria, votes)
        value = float(weighted_scores(criteria, final[:, None], self.abstain)[0])
        if np.isnan(value):
            raise MetricError(
                f"{self.name}: no criterion could be scored (every verdict abstained or failed; "
                f"abstain policy '{self.abstain}')",
                usage=usage,
            )
        details = {
            "rubric_score": value,
            "abstain_policy": self.abstain,
            "mode": "per_criterion" if self.per_criterion else "per_rubric",
            "judges": [v.model for v in votes],
            "aggregation": self._aggregation.describe() if len(votes) > 1 else None,
            "criteria": _criteria_details(criteria, votes, final),
            "judge_scores": self._judge_scores(criteria, votes),
            "judge_errors": {v.model: v.error for v in votes if v.error is not None},
            "judge_reasons": {v.model: v.reason for v in votes if v.reason},
            "prompt_chars": sum(len(p.encode("utf-8")) for p in prompts),
        }
        return MetricScore(value, details, usage=usage or None)

    def _consensus(self, criteria: Sequence[Criterion], votes: list[JudgeVotes]) -> np.ndarray:
        """The aggregated verdict code per criterion (the judges' weights and aggregation)."""
        import numpy as np

        from assay.calibration.aggregate import consensus

        matrix = np.array([v.codes for v in votes], dtype=np.int16)  # judges x criteria
        weights = np.array([w for _, w in self._judges])
        return np.array(
            [
                consensus(c, matrix[:, i : i + 1], weights, self._aggregation)[0]
                for i, c in enumerate(criteria)
            ],
            dtype=np.int16,
        )

    def _judge_scores(
        self, criteria: Sequence[Criterion], votes: list[JudgeVotes]
    ) -> dict[str, float | None]:
        """Each judge's own rubric score; None when it failed or nothing could be scored."""
        import numpy as np

        from assay.calibration.scoring import weighted_scores

        judge_scores: dict[str, float | None] = {}
        for v in votes:
            s = float(weighted_scores(criteria, np.array(v.codes)[:, None], self.abstain)[0])
            judge_scores[v.model] = None if (np.isnan(s) or v.error is not None) else s
        return judge_scores


def _criteria_details(
    criteria: Sequence[Criterion], votes: list[JudgeVotes], final: np.ndarray
) -> dict[str, dict[str, Any]]:
    """Per criterion: kind, weight, the aggregated verdict and every judge's vote (labels)."""

    def label_of(criterion: Criterion, code: int) -> str | None:
        return criterion.labels[code] if code >= 0 else None

    return {
        c.name: {
            "kind": c.kind,
            "weight": c.weight,
            "verdict": label_of(c, int(final[i])),
            "votes": {v.model: label_of(c, v.codes[i]) for v in votes},
        }
        for i, c in enumerate(criteria)
    }
