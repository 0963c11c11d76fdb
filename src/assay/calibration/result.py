"""The calibration result contract (``assay.calibration.v1``): pydantic models for every key.

The JSON Schema shipped as ``assay/schemas/calibration.v1.json`` is generated from these
models (``python -m assay.cli.schema_files``). Undefined statistics are ``None`` ("n/a" in
text), never 0 or NaN. Every aggregate is labelled with its level: ``*_micro`` pools the
decisions of all criteria, ``*_macro`` is the unweighted mean over criteria. The handling
modes are recorded on the result so a number is never ambiguous between estimands.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from assay.calibration.bootstrap_result import BootstrapDistribution as BootstrapDistribution
from assay.calibration.bootstrap_result import BootstrapResult as BootstrapResult
from assay.calibration.bootstrap_result import CriterionIntervals as CriterionIntervals
from assay.calibration.bootstrap_result import Interval as Interval
from assay.calibration.bootstrap_result import JudgeComparison as JudgeComparison

if TYPE_CHECKING:
    import pandas

CALIBRATION_SCHEMA: Final = "assay.calibration.v1"

ModeName = Literal["exclude", "as_unmet", "as_category"]
KindName = Literal["binary", "ordinal", "nominal"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Correlation(_Model):
    """A correlation with its p-value; None below 3 pairs or on constant input."""

    method: Literal["spearman", "kendall", "pearson"]
    coefficient: float | None
    p_value: float | None
    n: int
    interpretation: str = Field(description="band, 'insufficient data' or 'undefined'")
    ci: tuple[float, float] | None = Field(
        default=None,
        description="95% interval of the coefficient by Fisher's z (None when undefined)",
    )
    ci_method: str | None = Field(
        default=None,
        description="pearson: exact Fisher z (scipy); spearman / kendall: Fisher z with the "
        "Fieller-Hartley-Pearson (1957) variances 1.06/(n-3) and 0.437/(n-4)",
    )


class Bias(_Model):
    """Systematic bias of judge scores against human scores (paired: judge - human)."""

    n: int
    mean_bias: float | None
    std_bias: float | None = Field(description="sample SD of the differences (ddof=1)")
    t_statistic: float | None
    p_value: float | None = Field(
        description="paired t-test; None when the differences do not vary"
    )
    ci_low: float | None
    ci_high: float | None
    confidence_level: float
    effect_size: float | None = Field(description="Cohen's d_z = mean / SD of the differences")
    effect_interpretation: str
    limits_of_agreement: tuple[float, float] | None = Field(
        description="Bland-Altman 95% limits: mean +- 1.96 SD"
    )
    direction: Literal["positive", "negative", "none"] | None = Field(
        description="positive = the judge scores higher than people; None when n = 0"
    )
    is_significant: bool | None = Field(description="p < 0.05; None when the test is undefined")


class ConfusionMatrix(_Model):
    """Rows are the human label, columns the judge label, in ``labels`` order."""

    labels: list[str]
    matrix: list[list[int]]


class Coverage(_Model):
    """How many human-labelled pairs survived errors, missing votes and abstentions."""

    n_total: int = Field(description="pairs with a human label (errored items included)")
    n_covered: int = Field(description="pairs the statistics used")
    n_errored: int = Field(description="pairs on items whose grading errored")
    n_failed: int = Field(description="pairs whose judgment failed on an otherwise graded item")
    n_missing: int = Field(description="pairs the judge did not rate")
    n_judge_abstain: int
    n_human_abstain: int
    coverage: float | None
    judge_abstain_rate: float | None
    human_abstain_rate: float | None
    error_rate: float | None = Field(description="(errored + failed) / total")


class OptionScores(_Model):
    """One option of a multi-choice criterion, one-vs-rest; None where a denominator is 0."""

    label: str
    precision: float | None
    recall: float | None
    f1: float | None
    support_human: int = Field(description="pairs where the human chose this option")
    support_judge: int = Field(description="pairs where the judge chose this option")


class CriterionAgreement(_Model):
    """Judge-vs-human agreement on one criterion (fields that do not apply stay None)."""

    name: str
    kind: KindName
    weight: float
    n_samples: int
    has_data: bool = Field(description="False when no pair survived: no data, not degenerate")
    is_degenerate: bool = Field(
        description="pairs exist but chance-corrected agreement is undefined"
    )
    accuracy: float | None = Field(description="exact agreement")
    kappa: float | None = Field(description="unweighted Cohen's kappa over the full label list")
    kappa_interpretation: str
    precision: float | None = Field(default=None, description="binary: MET class")
    recall: float | None = None
    f1: float | None = None
    phi: float | None = Field(default=None, description="binary: Matthews phi (MET flags)")
    fpr: float | None = None
    fnr: float | None = None
    support_human: int | None = Field(default=None, description="binary: human MET count")
    support_judge: int | None = None
    weighted_kappa: float | None = Field(
        default=None,
        description="ordinal: quadratic-weighted kappa over the full option list (the headline)",
    )
    weighted_kappa_interpretation: str | None = None
    weighted_kappa_linear: float | None = Field(
        default=None, description="ordinal: linear-weighted kappa over the full option list"
    )
    macro_precision: float | None = Field(
        default=None,
        description="precision averaged over the options either side used (undefined ones left "
        "out, as scikit-learn's zero_division=nan)",
    )
    macro_recall: float | None = None
    macro_f1: float | None = None
    per_option: list[OptionScores] | None = Field(
        default=None, description="multi-choice: one-vs-rest precision / recall / F1 per option"
    )
    adjacent_accuracy: float | None = Field(default=None, description="ordinal: |index gap| <= 1")
    n_scale_pairs: int | None = Field(
        default=None, description="ordinal: pairs with a position on the scale (NA excluded)"
    )
    rmse: float | None = Field(default=None, description="ordinal: on option values")
    mae: float | None = None
    spearman: Correlation | None = None
    kendall: Correlation | None = None
    pearson: Correlation | None = None
    confusion_matrix: ConfusionMatrix | None
    coverage: Coverage


class BinaryMicro(_Model):
    """Statistics pooled over every binary criterion's decisions (micro)."""

    n_criteria: int
    n_samples: int
    accuracy: float | None
    precision: float | None
    recall: float | None
    f1: float | None
    kappa: float | None
    kappa_interpretation: str
    phi: float | None
    confusion_matrix: ConfusionMatrix


class Aggregate(_Model):
    """Criterion-level aggregates, each labelled micro (pooled) or macro (mean over criteria)."""

    n_samples: int
    accuracy_micro: float | None = Field(description="exact agreement pooled over all criteria")
    accuracy_macro: float | None = Field(description="mean of per-criterion accuracy")
    mean_kappa_macro: float | None = Field(
        description="mean unweighted Cohen's kappa over criteria (the same statistic everywhere)"
    )
    n_kappa_criteria: int = Field(description="criteria whose kappa was defined")
    mean_weighted_kappa_macro: float | None = Field(
        description="mean quadratic-weighted kappa over ordinal criteria only"
    )
    mean_weighted_kappa_linear_macro: float | None = Field(
        default=None, description="mean linear-weighted kappa over ordinal criteria only"
    )
    kappa_micro: float | None = Field(
        default=None,
        description="Cohen's kappa pooled over every criterion's pairs; a category is "
        "(criterion, label), so categories of different criteria never match",
    )
    macro_f1_macro: float | None = Field(
        default=None, description="mean over criteria of each criterion's macro F1"
    )
    binary_micro: BinaryMicro | None
    coverage: Coverage


class ScoreAgreement(_Model):
    """Per-item weighted score: judge vs human."""

    n: int
    rmse: float | None
    mae: float | None
    spearman: Correlation
    kendall: Correlation
    pearson: Correlation
    bias: Bias
    icc_absolute: float | None = Field(
        default=None, description="ICC(2,1): two-way random, absolute agreement, judge and human"
    )
    icc_consistency: float | None = Field(
        default=None, description="ICC(3,1): two-way mixed, consistency (ignores a constant bias)"
    )
    icc_interpretation: str = Field(default="undefined", description="band of icc_absolute")


class JudgeRun(_Model):
    """How ``assay calibrate`` produced the verdicts (absent for precomputed labels)."""

    metric: Literal["rubric", "llm-as-judge"]
    judge_models: list[str]
    model_under_test: str | None
    n_samples: int = Field(description="samples judged (those with human labels and an answer)")
    n_failed: int = Field(description="(judge, sample) scorings that failed")
    n_calls: int = Field(description="provider calls, cache hits included")
    n_cached: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None = Field(description="None when any call was unpriced")


class AbstentionAgreement(_Model):
    """Do judge and human abstain on the same pairs? Mode-independent, pooled over criteria.

    ``cannot_assess`` pools the binary criteria, ``na`` the multi-choice criteria that have an
    NA option; the kappa is Cohen's kappa on the abstained / answered dichotomy.
    """

    kind: Literal["cannot_assess", "na"]
    n_criteria: int
    n_pairs: int = Field(description="pairs with both labels present on graded items")
    human_abstain: int
    judge_abstain: int
    both_abstain: int
    judge_only: int = Field(description="the judge abstained where the human answered")
    human_only: int = Field(description="the human abstained where the judge answered")
    kappa: float | None
    kappa_interpretation: str


class AgreementBlock(_Model):
    """One rater (the ensemble's consensus, or one judge) against the human labels."""

    rater: str
    aggregate: Aggregate
    criteria: list[CriterionAgreement]
    scores: ScoreAgreement
    abstention: list[AbstentionAgreement] = Field(
        default_factory=list, description="CANNOT_ASSESS and NA agreement, where they apply"
    )
    length_bias: Correlation | None = Field(
        default=None, description="Spearman between answer length (words) and this rater's score"
    )
    bootstrap: BootstrapResult | None = Field(
        default=None,
        description="per-judge blocks: intervals on the same resamples as the top-level bootstrap",
    )


class InterJudge(_Model):
    """Agreement among the judges on one criterion, independent of the human labels."""

    name: str
    kind: KindName
    n_items: int = Field(description="items with at least two usable votes")
    krippendorff_alpha: float | None
    alpha_level: Literal["nominal", "ordinal"]
    alpha_interpretation: str
    krippendorff_alpha_interval: float | None = Field(
        default=None, description="ordinal: alpha at the interval level on option values"
    )
    krippendorff_alpha_nominal: float | None = Field(
        default=None, description="ordinal: alpha at the nominal level (scale order ignored)"
    )
    fleiss_kappa: float | None = Field(description="complete-case, nominal")
    fleiss_n_items: int
    fleiss_interpretation: str
    mean_pairwise_kappa: float | None = Field(description="mean Cohen's kappa over judge pairs")


class CalibrationResult(_Model):
    """Everything ``assay agreement`` computes; see docs/calibration.md."""

    schema_version: Literal["assay.calibration.v1"] = CALIBRATION_SCHEMA
    source: str
    cannot_assess_mode: ModeName
    na_mode: ModeName
    score_abstain_policy: Literal["skip", "zero", "worst"] = Field(
        default="skip", description="abstentions in the per-item scores derived from verdicts"
    )
    n_items: int = Field(description="items in the labels file")
    n_items_used: int = Field(description="items with a human label and no grading error")
    n_errored_items: int
    n_criteria: int
    n_binary: int
    n_ordinal: int
    n_nominal: int
    judges: list[str]
    consensus: str = Field(description="how the overall rater was formed")
    overall: AgreementBlock | None = Field(
        description="the overall rater vs human; None when no item carries a human label"
    )
    per_judge: list[AgreementBlock]
    inter_judge: list[InterJudge] | None
    mean_krippendorff_alpha: float | None = Field(
        default=None, description="macro mean of the per-criterion inter-judge alpha"
    )
    bootstrap: BootstrapResult | None
    warnings: list[str]
    judge_run: JudgeRun | None = None
    judge_comparisons: list[JudgeComparison] | None = Field(
        default=None, description="with --bootstrap and 2+ judges: every pair of judges"
    )

    # ------------------------------------------------------------------ outputs

    def summary(self, *, verbose: bool = False) -> str:
        """Human-readable text report (handling modes named, micro/macro labelled)."""
        from assay.calibration.summary import render_summary

        return render_summary(self, verbose=verbose)

    def to_json(self, *, indent: int | None = 2) -> str:
        """Strict JSON (no NaN) of the whole result."""
        return json.dumps(self.model_dump(mode="json"), indent=indent, allow_nan=False)

    def to_file(self, path: str | Path) -> Path:
        """Write :meth:`to_json` to ``path`` (parent folders created)."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(self.to_json() + "\n", encoding="utf-8")
        return target

    def to_dataframe(self) -> pandas.DataFrame:
        """One flat frame: an aggregate row, one row per criterion, per rater (pandas needed)."""
        from assay.calibration.frame import to_dataframe

        return to_dataframe(self)
