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

The score is the weighted rubric score (:mod:`assay.calibration.aggregate`) under the abstention
policy ``abstain: skip | zero | worst`` (recorded in the details). When nothing could be scored
(every verdict abstained) the sample fails; it is never scored 0.0. Per-criterion verdicts and
every judge's vote go into the details, which ``assay calibrate`` reads.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.errors import AssayError, MetricConfigError, MetricError
from assay.judging.client import fill
from assay.judging.prompts import RUBRIC as RUBRIC_TEMPLATE
from assay.judging.prompts import RUBRIC_CRITERION as CRITERION_TEMPLATE
from assay.metrics.base import MetricScore, check_bool_option, environment_settings
from assay.providers.settings import ProviderSettings

if TYPE_CHECKING:
    import numpy as np

    from assay.calibration.aggregate import AbstainPolicy
    from assay.calibration.model import Criterion
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
        from assay.calibration.aggregate import ABSTAIN_POLICIES

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

        from assay.calibration.aggregate import weighted_scores

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

        from assay.calibration.aggregate import weighted_scores

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


if TYPE_CHECKING:
    from assay.calibration.aggregate import Aggregation


def judge_list(
    name: str, model: str | None, models: object
) -> tuple[tuple[str | None, float], ...]:
    """(model, weight) per judge: ``models`` when given, else the single ``model`` (None = the
    settings' judge model). ``name`` is the metric's, for the error messages."""
    if models is None:
        return ((model, 1.0),)
    if model is not None:
        raise MetricConfigError(f"{name}: give 'model' or 'models', not both")
    if not isinstance(models, list) or not models:
        raise MetricConfigError(f"{name} option 'models' must be a non-empty list")
    judges = [_judge_entry(name, entry) for entry in models]
    if len({m for m, _ in judges}) != len(judges):
        raise MetricConfigError(f"{name}: judge models must be distinct")
    return tuple(judges)


def _judge_entry(name: str, entry: object) -> tuple[str | None, float]:
    """One entry of ``models``: a model name, or ``{model, weight}`` with a positive weight."""
    if isinstance(entry, str) and entry.strip():
        return entry, 1.0
    if isinstance(entry, Mapping) and isinstance(entry.get("model"), str):
        weight = entry.get("weight", 1.0)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight <= 0:
            raise MetricConfigError(f"{name}: judge weights must be positive numbers")
        return entry["model"], float(weight)
    raise MetricConfigError(f"{name}: each of 'models' is a model name or {{model, weight}}")


def aggregation_of(name: str, value: object) -> Aggregation:
    """The :class:`Aggregation` of the ``aggregation`` option (a mapping of kind -> method)."""
    from assay.calibration.aggregate import Aggregation

    allowed = {
        "binary": ("majority", "weighted", "unanimous"),
        "ordinal": ("median", "mean", "mode"),
        "nominal": ("mode",),
    }
    aggregation = value or {}
    if not isinstance(aggregation, Mapping):
        raise MetricConfigError(f"{name} option 'aggregation' must be a mapping")
    for key, method in aggregation.items():
        if key not in allowed or method not in allowed[key]:
            raise MetricConfigError(
                f"{name} option 'aggregation': {key}={method!r} is not one of "
                + "; ".join(f"{k}: {'|'.join(v)}" for k, v in allowed.items())
            )
    return Aggregation(**dict(aggregation))


if TYPE_CHECKING:
    from assay.calibration.model import Criterion


def _verdict_code(criterion: Criterion, raw: object, name: str) -> int:
    from assay.errors import JudgeParseError

    if not isinstance(raw, str):
        raise JudgeParseError(f"the verdict for '{name}' must be a string")
    if criterion.options is not None and raw.strip().upper().replace(" ", "_") == "CANNOT_ASSESS":
        return criterion.abstain_codes[0]
    try:
        return criterion.code_of(raw)
    except ValueError:
        allowed = (
            "MET, UNMET or CANNOT_ASSESS"
            if criterion.options is None
            else "one of the listed options"
        )
        raise JudgeParseError(f"the verdict for '{name}' is not {allowed}") from None


def parse_rubric_reply(text: str, criteria: Sequence[Criterion]) -> tuple[list[int], str | None]:
    """Codes (in criteria order) and the reason from a one-call-per-rubric reply."""
    from assay.errors import JudgeParseError
    from assay.judging.replies import parse_object

    data = parse_object(text)
    verdicts = data.get("verdicts")
    if not isinstance(verdicts, dict):
        raise JudgeParseError("judge response must have a 'verdicts' object")
    names = [c.name for c in criteria]
    missing = [n for n in names if n not in verdicts]
    if missing:
        raise JudgeParseError(f"judge response has no verdict for: {', '.join(missing)}")
    extra = [k for k in verdicts if k not in names]
    if extra:
        raise JudgeParseError(f"judge response has {len(extra)} verdict(s) for unknown criteria")
    codes = [_verdict_code(c, verdicts[c.name], c.name) for c in criteria]
    return codes, _reason(data)


def parse_criterion_reply(text: str, criterion: Criterion) -> tuple[int, str | None]:
    """Code and reason from a one-call-per-criterion reply."""
    from assay.errors import JudgeParseError
    from assay.judging.replies import parse_object

    data = parse_object(text)
    if "verdict" not in data:
        raise JudgeParseError("judge response is missing the required 'verdict' key")
    return _verdict_code(criterion, data["verdict"], criterion.name), _reason(data)


def _reason(data: Mapping[str, Any]) -> str | None:
    from assay.errors import JudgeParseError

    reason = data.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise JudgeParseError("judge response 'reason' must be a string")
    return reason[:500] if isinstance(reason, str) else None


if TYPE_CHECKING:
    from assay.calibration.model import Criterion

NA_LABEL = "cannot assess"


def parse_rubric(value: object, *, where: str) -> tuple[Criterion, ...]:
    """Criteria from a list, a mapping with ``criteria`` / ``rubric``, or a file path."""
    from pydantic import ValidationError

    from assay.calibration.loaders import load_criteria
    from assay.calibration.model import Criterion

    if isinstance(value, (str, Path)):
        try:
            return tuple(load_criteria(value))
        except AssayError as exc:
            raise MetricConfigError(f"{where}: {exc}") from None
    if isinstance(value, Mapping):
        value = value.get("criteria", value.get("rubric"))
    if not isinstance(value, list) or not value:
        raise MetricConfigError(f"{where} must be a non-empty list of criteria (or a file path)")
    criteria: list[Criterion] = []
    for index, raw in enumerate(value):
        try:
            criteria.append(Criterion.model_validate(raw))
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"])
            message = first["msg"].removeprefix("Value error, ")
            raise MetricConfigError(
                f"{where}[{index}]{'.' + loc if loc else ''}: {message}"
            ) from None
    names = [c.name for c in criteria]
    if len(set(names)) != len(names):
        raise MetricConfigError(f"{where}: criterion names must be unique")
    return tuple(criteria)


def with_na_options(criteria: Sequence[Criterion]) -> tuple[Criterion, ...]:
    """Append a "cannot assess" NA option to multi-choice criteria that have none (last, so
    the authored option indices do not move)."""
    from assay.calibration.model import Option

    out = []
    for criterion in criteria:
        if criterion.options is not None and not any(o.na for o in criterion.options):
            labels = {o.label.lower() for o in criterion.options}
            label = NA_LABEL if NA_LABEL not in labels else "cannot assess (n/a)"
            options = (*criterion.options, Option(label=label, na=True))
            criterion = criterion.model_copy(update={"options": options})
        out.append(criterion)
    return tuple(out)


def describe(criteria: Sequence[Criterion]) -> str:
    """The CRITERIA block of the prompt."""
    lines = []
    for number, c in enumerate(criteria, start=1):
        requirement = c.requirement or c.name
        if c.options is None:
            if c.weight < 0:
                lines.append(f'{number}. "{c.name}" (penalty): {requirement}')
                lines.append(
                    "   MET if the answer has this problem, UNMET if it does not, CANNOT_ASSESS "
                    "only if the answer gives no basis to decide."
                )
            else:
                lines.append(f'{number}. "{c.name}": {requirement}')
                lines.append(
                    "   MET if the answer satisfies it, UNMET if it does not, CANNOT_ASSESS only "
                    "if the answer gives no basis to decide."
                )
        else:
            scale = "ordered from worst to best" if c.kind == "ordinal" else "unordered"
            lines.append(f'{number}. "{c.name}" (choose one option, {scale}): {requirement}')
            shown = ", ".join(
                json.dumps(o.label, ensure_ascii=False)
                + (" (not applicable / cannot assess)" if o.na else "")
                for o in c.options
            )
            lines.append(f"   Options: {shown}")
    return "\n".join(lines)
