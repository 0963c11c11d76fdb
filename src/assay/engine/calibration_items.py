"""The human-labelled samples of an ``assay calibrate`` dataset: which samples carry labels,
the answer each one's judges see, and the human verdict codes and scores.

``--metric rubric`` reads ``metadata.labels`` (criterion -> label) against the rubric;
``--metric llm-as-judge`` reads ``metadata.human_score`` in [0, 1] and ``metadata.human_pass``
(a boolean; otherwise pass = score >= 0.5) as the single ``pass`` criterion.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from assay.calibration.model import MET, MISSING, UNMET, Criterion
from assay.data.dataset import Dataset, Sample
from assay.data.outputs import Output
from assay.errors import CalibrationError, UsageError

MetricName = Literal["rubric", "llm-as-judge"]
PASS_CRITERION = Criterion(
    name="pass", requirement="judge score >= 0.5 (human: human_pass or human_score >= 0.5)"
)


@dataclass(frozen=True)
class Labelled:
    """The labelled samples, their answers, human codes (criteria x items) and human scores
    (NaN where the sample gives none)."""

    samples: list[Sample]
    answers: list[Output]
    human: np.ndarray
    human_scores: np.ndarray


def rubric_criteria(dataset: Dataset, rubric: str | Path | None) -> tuple[Criterion, ...]:
    """The rubric of a calibration run (``--rubric`` wins over the dataset's ``rubric:``)."""
    from assay.errors import MetricConfigError
    from assay.metrics.rubric import parse_rubric, with_na_options

    value: Any = str(rubric) if rubric is not None else dataset.rubric
    if value is None:
        raise UsageError(
            "--metric rubric needs a rubric: pass --rubric FILE or declare 'rubric:' in the dataset"
        )
    try:
        return with_na_options(parse_rubric(value, where="rubric"))
    except MetricConfigError as exc:
        raise UsageError(str(exc)) from None


def read_labelled(
    dataset: Dataset,
    criteria: Sequence[Criterion],
    *,
    metric: MetricName,
    outputs: Mapping[str, Output] | None,
    source: str,
) -> Labelled:
    """The samples with human labels; CalibrationError when none has any, or on a bad label."""
    samples = [s for s in dataset.samples if _has_labels(s, metric)]
    if not samples:
        where = (
            "metadata.labels"
            if metric == "rubric"
            else "metadata.human_score / metadata.human_pass"
        )
        raise CalibrationError(f"no sample carries human labels ({where})", file=source)
    answers = [_answer(s, outputs, source) for s in samples]
    human = np.array([_human_codes(criteria, s, source, metric) for s in samples], dtype=np.int16).T
    human_scores = np.array([_human_score(s, source) for s in samples])
    return Labelled(samples, answers, human, human_scores)


def _answer(sample: Sample, outputs: Mapping[str, Output] | None, source: str) -> Output:
    """The answer to judge: from the outputs file when given, else ``metadata.answer``."""
    if outputs is not None:
        found = outputs.get(sample.id)
        if found is None:
            raise CalibrationError(
                "no answer for this sample in the outputs file", file=source, sample=sample.id
            )
        return found
    text = sample.metadata.get("answer")
    if not isinstance(text, str):
        raise CalibrationError(
            "the answer to judge is missing: give metadata.answer (a string) or --outputs FILE",
            file=source,
            sample=sample.id,
            field="metadata.answer",
        )
    return Output(text=text)


def _has_labels(sample: Sample, metric: MetricName) -> bool:
    """Whether ``sample`` carries the human labels ``metric`` compares with."""
    if metric == "rubric":
        return isinstance(sample.metadata.get("labels"), Mapping) and bool(
            sample.metadata["labels"]
        )
    return sample.metadata.get("human_score") is not None or isinstance(
        sample.metadata.get("human_pass"), bool
    )


def _human_codes(
    criteria: Sequence[Criterion], sample: Sample, source: str, metric: MetricName
) -> list[int]:
    """The sample's human verdict code per criterion (MISSING where unlabelled)."""
    if metric == "llm-as-judge":
        return [_human_pass(sample, source)]
    labels = sample.metadata["labels"]
    names = {c.name for c in criteria}
    for key in labels:
        if key not in names:
            raise CalibrationError(
                f"unknown criterion {key!r}; the rubric has {', '.join(sorted(names))}",
                file=source,
                sample=sample.id,
                field=f"metadata.labels.{key}",
            )
    codes = []
    for criterion in criteria:
        raw = labels.get(criterion.name)
        if raw is None:
            codes.append(MISSING)
            continue
        try:
            codes.append(criterion.code_of(raw))
        except ValueError as exc:
            raise CalibrationError(
                str(exc), file=source, sample=sample.id, field=f"metadata.labels.{criterion.name}"
            ) from None
    return codes


def _human_pass(sample: Sample, source: str) -> int:
    """MET or UNMET: ``metadata.human_pass``, else whether the human score is >= 0.5."""
    passed = sample.metadata.get("human_pass")
    if passed is None:
        passed = _human_score(sample, source) >= 0.5
    elif not isinstance(passed, bool):
        raise CalibrationError(
            "must be true or false", file=source, sample=sample.id, field="metadata.human_pass"
        )
    return MET if passed else UNMET


def _human_score(sample: Sample, source: str) -> float:
    """``metadata.human_score`` in [0, 1], NaN when absent."""
    raw = sample.metadata.get("human_score")
    if raw is None:
        return math.nan
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not 0.0 <= float(raw) <= 1.0:
        raise CalibrationError(
            "must be a number in [0, 1]",
            file=source,
            sample=sample.id,
            field="metadata.human_score",
        )
    return float(raw)
