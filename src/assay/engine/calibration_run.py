"""``assay calibrate``: run judge model(s) over a human-labelled dataset, then measure agreement.

Per sample the dataset carries the answer to judge (``metadata.answer``, or an entry of a
saved-outputs file) and the human labels:

* ``--metric rubric``: ``metadata.labels`` maps each rubric criterion to its label (``MET`` /
  ``UNMET`` / ``CANNOT_ASSESS`` or an option label); the rubric comes from ``--rubric FILE``
  or the dataset's ``rubric:``;
* ``--metric llm-as-judge``: ``metadata.human_score`` in [0, 1] (and optionally
  ``metadata.human_pass``, a boolean; otherwise pass = score >= 0.5). The judge's score is
  compared with the human score, and pass/fail (>= 0.5) is compared as a binary criterion.

Each judge model scores every labelled sample through the metric (so through the providers'
client and cache); a failed scoring is a failed judgment, never a 0. The verdicts become a
:class:`LabelSet` and :func:`compute_agreement` does the rest. The workflow adds warnings for
length bias (Spearman between answer length and each judge's score, next to the human
scores' own) and self-preference (a judge model that is also the model under test).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from assay.calibration.aggregate import (
    ABSTAIN_POLICIES,
    AbstainPolicy,
    is_abstain_policy,
    weighted_scores,
)
from assay.calibration.caveats import LENGTH_BIAS_RHO
from assay.calibration.compute import compute_agreement
from assay.calibration.model import FAILED, MET, UNMET, Criterion, LabelSet
from assay.calibration.result import CalibrationResult, JudgeRun
from assay.data.dataset import Dataset, Sample
from assay.data.outputs import Output
from assay.engine.calibration_items import (
    PASS_CRITERION,
    Labelled,
    MetricName,
    read_labelled,
    rubric_criteria,
)
from assay.engine.preflight import check_providers
from assay.errors import MetricError, UsageError
from assay.metrics.base import Metric
from assay.metrics.judge import LLMAsJudge
from assay.metrics.registry import resolve
from assay.metrics.rubric import RubricJudge
from assay.providers import registry
from assay.providers import settings as provider_settings
from assay.providers.settings import ProviderSettings
from assay.providers.usage import total_cost

__all__ = [
    "PASS_CRITERION",
    "Judged",
    "MetricName",
    "calibrate",
    "calibrate_async",
    "judge_all",
    "rubric_criteria",
]


@dataclass(frozen=True)
class Judged:
    """One judge model's outcome on one sample: verdict codes (rubric) or a score, or a failure."""

    value: float | None
    codes: tuple[int, ...] | None
    usage: tuple[Mapping[str, Any], ...]
    error: str | None


async def judge_all(
    metric: Metric | LLMAsJudge,
    samples: Sequence[Sample],
    answers: Sequence[Output],
    concurrency: int,
) -> list[Judged]:
    """Judge every sample with one metric instance; failures are kept as failures.

    A :class:`~assay.metrics.rubric.RubricJudge` is asked for its verdicts (so a judge that
    abstained everywhere still contributes verdicts); other metrics for their score.
    """
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(sample: Sample, output: Output) -> Judged:
        async with gate:
            try:
                if isinstance(metric, RubricJudge):
                    _criteria, votes = await metric.votes(sample, output)
                    vote = votes[0]
                    return Judged(None, tuple(vote.codes), vote.usage, vote.error)
                result = metric.score(sample, output)
                if asyncio.iscoroutine(result):
                    result = await result
            except MetricError as exc:
                return Judged(None, None, tuple(exc.usage), str(exc))
            return Judged(result.value, None, tuple(result.usage or ()), None)

    return list(await asyncio.gather(*(one(s, o) for s, o in zip(samples, answers))))


def _judge_codes(criteria: Sequence[Criterion], judged: Judged) -> list[int]:
    if judged.codes is not None:
        return list(judged.codes)
    if judged.error is not None or judged.value is None:
        return [FAILED] * len(criteria)
    return [MET if judged.value >= 0.5 else UNMET]


def _model_of(output: Output) -> str | None:
    usage = output.usage
    model = usage.get("model") if isinstance(usage, Mapping) else None
    return model if isinstance(model, str) and model else None


def _same_model(a: str, b: str) -> bool:
    def norm(name: str) -> str:
        return name.strip().lower().rsplit("/", 1)[-1]

    return norm(a) == norm(b)


def calibrate(dataset: Dataset, **options: Any) -> CalibrationResult:
    """Run the judge(s) over the human-labelled samples and compute agreement.

    A sync wrapper over :func:`calibrate_async` (same keyword options) that owns its event loop
    and closes the provider clients at the end.
    """

    async def run() -> CalibrationResult:
        try:
            return await calibrate_async(dataset, **options)
        finally:
            await registry.aclose()

    return asyncio.run(run())


async def calibrate_async(
    dataset: Dataset,
    *,
    metric: MetricName = "rubric",
    judge_models: Sequence[str] = (),
    outputs: Mapping[str, Output] | None = None,
    rubric: str | Path | None = None,
    abstain: str = "skip",
    model_under_test: str | None = None,
    cannot_assess_mode: str = "exclude",
    na_mode: str = "exclude",
    bootstrap: int = 0,
    seed: int | None = None,
    confidence_level: float = 0.95,
    concurrency: int = 8,
    source: str = "<dataset>",
    keep_distribution: bool = False,
    settings: ProviderSettings | None = None,
) -> CalibrationResult:
    """Run the judge(s) over the human-labelled samples and compute agreement; the judges call
    the provider of ``settings`` (None: the environment's)."""
    settings = settings or provider_settings.from_environment()
    policy = _check_options(metric, abstain)
    models = list(dict.fromkeys(judge_models)) or [settings.judge_model]
    criteria = rubric_criteria(dataset, rubric) if metric == "rubric" else (PASS_CRITERION,)
    labelled = read_labelled(dataset, criteria, metric=metric, outputs=outputs, source=source)
    judges = {model: _judge_metric(metric, model, criteria, abstain, settings) for model in models}
    # No key and no base URL: one usage error before any call, as `assay run` gives.
    check_providers(list(judges.values()), settings)
    runs: dict[str, list[Judged]] = {}
    for model, judge in judges.items():
        runs[model] = await judge_all(judge, labelled.samples, labelled.answers, concurrency)
    labels = label_set(criteria, labelled, runs, metric=metric, abstain=policy, source=source)
    result = compute_agreement(
        labels,
        cannot_assess_mode=cannot_assess_mode,
        na_mode=na_mode,
        bootstrap=bootstrap,
        seed=seed,
        confidence_level=confidence_level,
        score_abstain=abstain,
        keep_distribution=keep_distribution,
    )
    warnings = list(result.warnings)
    skipped = len(dataset.samples) - len(labelled.samples)
    if skipped:
        warnings.insert(0, f"{skipped} sample(s) without human labels were not judged")
    warnings.extend(_bias_warnings(result, labels, models, labelled.answers, model_under_test))
    run = _judge_run(metric, runs, model_under_test=model_under_test, n_samples=labels.n_items)
    return result.model_copy(update={"warnings": warnings, "judge_run": run})


def _check_options(metric: str, abstain: str) -> AbstainPolicy:
    """The abstention policy; UsageError on an unknown metric or policy."""
    if metric not in ("rubric", "llm-as-judge"):
        raise UsageError(f"--metric must be rubric or llm-as-judge; got {metric!r}")
    if not is_abstain_policy(abstain):
        raise UsageError(f"--abstain must be one of {', '.join(ABSTAIN_POLICIES)}; got {abstain!r}")
    return abstain


def _judge_metric(
    metric: MetricName,
    model: str,
    criteria: Sequence[Criterion],
    abstain: str,
    settings: ProviderSettings,
) -> Metric:
    """The metric instance that judges with ``model`` (the rubric and abstain policy given)."""
    spec: dict[str, Any] = {"name": metric, "model": model}
    if metric == "rubric":
        spec.update(rubric=[c.model_dump(exclude_none=True) for c in criteria], abstain=abstain)
    return resolve(spec, settings)


def label_set(
    criteria: Sequence[Criterion],
    labelled: Labelled,
    runs: Mapping[str, list[Judged]],
    *,
    metric: MetricName,
    abstain: AbstainPolicy,
    source: str,
) -> LabelSet:
    """The judges' verdicts next to the human labels; a rubric's missing human scores are
    derived from the human verdicts under the abstention policy."""
    models = list(runs)
    n_items = len(labelled.samples)
    votes = np.array(
        [[_judge_codes(criteria, runs[m][i]) for i in range(n_items)] for m in models],
        dtype=np.int16,
    ).transpose(0, 2, 1)  # judges x criteria x items
    judge_scores = np.array(
        [[np.nan if r.value is None else r.value for r in runs[m]] for m in models],
        dtype=np.float64,
    )  # rubric: NaN, so the score is derived from the verdicts under the same policy
    errored = np.array([all(runs[m][i].error is not None for m in models) for i in range(n_items)])
    human_scores = labelled.human_scores
    if metric == "rubric":
        derived = weighted_scores(criteria, labelled.human, abstain)
        human_scores = np.where(np.isnan(human_scores), derived, human_scores)
    return LabelSet(
        criteria=tuple(criteria),
        item_ids=tuple(s.id for s in labelled.samples),
        judges=tuple(models),
        human=labelled.human,
        votes=votes,
        item_errored=errored,
        human_scores=human_scores,
        judge_scores=judge_scores,
        lengths=np.array([len(a.text.split()) for a in labelled.answers], dtype=np.float64),
        source=source,
    )


def _judge_run(
    metric: MetricName,
    runs: Mapping[str, list[Judged]],
    *,
    model_under_test: str | None,
    n_samples: int,
) -> JudgeRun:
    """What judging cost: calls, cache hits, failures, tokens and dollars over every model."""
    usage = [u for judged in runs.values() for r in judged for u in r.usage]
    return JudgeRun(
        metric=metric,
        judge_models=list(runs),
        model_under_test=model_under_test,
        n_samples=n_samples,
        n_failed=sum(1 for judged in runs.values() for r in judged if r.error is not None),
        n_calls=len(usage),
        n_cached=sum(1 for u in usage if u.get("cached")),
        prompt_tokens=sum(int(u.get("prompt_tokens") or 0) for u in usage),
        completion_tokens=sum(int(u.get("completion_tokens") or 0) for u in usage),
        cost_usd=total_cost(usage),
    )


def _bias_warnings(
    result: CalibrationResult,
    labels: LabelSet,
    models: Sequence[str],
    answers: Sequence[Output],
    model_under_test: str | None,
) -> list[str]:
    """Per-judge length bias (with the humans' own for comparison) and self-preference."""
    out = _judge_length_bias(result) if len(models) > 1 else []  # one judge: overall warned
    human_rho = _human_length_rho(labels)
    if human_rho is not None and any("length bias" in w for w in [*result.warnings, *out]):
        out.append(f"for comparison, Spearman(answer words, human score) = {human_rho:+.2f}")
    return out + _self_preference(models, answers, model_under_test)


def _judge_length_bias(result: CalibrationResult) -> list[str]:
    """A warning per judge whose score correlates significantly with the answer's length."""
    out: list[str] = []
    for block in result.per_judge:
        lb = block.length_bias
        if (
            lb is not None
            and lb.coefficient is not None
            and lb.p_value is not None
            and abs(lb.coefficient) >= LENGTH_BIAS_RHO
            and lb.p_value < 0.05
        ):
            out.append(
                f"possible length bias in judge {block.rater!r}: "
                f"Spearman(answer words, judge score) = {lb.coefficient:+.2f} "
                f"(p={lb.p_value:.3g})"
            )
    return out


def _human_length_rho(labels: LabelSet) -> float | None:
    """Spearman between answer length and the human score."""
    from assay.calibration import stats

    assert labels.lengths is not None and labels.human_scores is not None
    use = ~np.isnan(labels.human_scores)
    return stats.correlation(labels.lengths[use], labels.human_scores[use], "spearman").coefficient


def _self_preference(
    models: Sequence[str], answers: Sequence[Output], model_under_test: str | None
) -> list[str]:
    """A warning per judge model that also produced the answers (or is named under test)."""
    out: list[str] = []
    under_test = {model_under_test} if model_under_test else set()
    under_test |= {m for m in (_model_of(a) for a in answers) if m}
    for model in models:
        if any(_same_model(model, sut) for sut in sorted(under_test)):
            out.append(
                f"self-preference risk: judge model {model!r} is also the model under test; "
                "judges tend to favour their own answers - prefer a different judge"
            )
    return out
