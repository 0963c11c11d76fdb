"""Judge-vs-human agreement per criterion, after the abstention handling mode is applied.

Handling modes (CANNOT_ASSESS for binary criteria, NA options for multi-choice ones):

* ``exclude``: a pair where either side abstained is dropped (coverage says how many);
* ``as_unmet``: an abstention is read as UNMET (binary) or as the worst real option
  (multi-choice, weight-sign aware) on both sides;
* ``as_category``: the abstention is its own category (3-class binary; an extra "NA" column).
  An NA has no position on an ordinal scale, so weighted kappa, adjacent accuracy and the
  value statistics of an ordinal criterion use only the pairs where both sides are on the
  scale (``n_scale_pairs``), while accuracy and kappa keep the NA column.

Errored items, failed judgments and unlabelled cells never form a pair under any mode.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from assay.calibration import stats
from assay.calibration.bands import kappa_band
from assay.calibration.model import FAILED, MISSING, Criterion, Mode
from assay.calibration.result import (
    AbstentionAgreement,
    Aggregate,
    BinaryMicro,
    ConfusionMatrix,
    Coverage,
    CriterionAgreement,
    OptionScores,
)


@dataclass(frozen=True)
class Scale:
    """How one criterion's raw codes map to analysis categories under a mode."""

    table: np.ndarray  # raw code -> category (-1 = dropped)
    labels: tuple[str, ...]
    values: np.ndarray  # category -> option value (NaN for the NA category)
    n_scale: int  # categories 0..n_scale-1 are ordered scale positions

    @property
    def k(self) -> int:
        return len(self.labels)

    def map(self, codes: np.ndarray) -> np.ndarray:
        codes = np.asarray(codes)
        return np.where(codes >= 0, self.table[np.clip(codes, 0, None)], -1)


def scale_for(criterion: Criterion, mode: Mode) -> Scale:
    """The category mapping of ``criterion`` under ``mode``."""
    raw_values = criterion.code_values
    real = list(criterion.scale_codes)
    abstain = list(criterion.abstain_codes)
    table = np.full(len(criterion.labels), -1, dtype=np.int64)
    for position, code in enumerate(real):
        table[code] = position
    labels = [criterion.labels[c] for c in real]
    values = [raw_values[c] for c in real]
    if criterion.kind_ == "binary" and mode == "as_unmet":
        table[abstain] = 1  # CANNOT_ASSESS reads as UNMET, as the mode's name says
    elif mode == "as_unmet" and abstain:
        table[abstain] = real.index(criterion.worst_code)
    elif mode == "as_category" and abstain:
        table[abstain] = len(real)
        labels.append(criterion.labels[abstain[0]] if len(abstain) == 1 else "NA")
        values.append(np.nan)
    return Scale(
        table=table,
        labels=tuple(labels),
        values=np.array(values, dtype=np.float64),
        n_scale=len(real),
    )


@dataclass(frozen=True)
class Pairs:
    """The usable (human, judge) category pairs of one criterion, aligned to items."""

    criterion: Criterion
    scale: Scale
    true: np.ndarray  # per item category, -1 where no pair
    pred: np.ndarray
    coverage: Coverage

    @property
    def keep(self) -> np.ndarray:
        return self.true >= 0

    @property
    def n(self) -> int:
        return int(self.keep.sum())


def make_pairs(
    criterion: Criterion,
    human: np.ndarray,
    judge: np.ndarray,
    errored: np.ndarray,
    mode: Mode,
) -> Pairs:
    """Pair one criterion's human and judge codes under ``mode`` and count the coverage."""
    scale = scale_for(criterion, mode)
    t = scale.map(human)
    p = scale.map(judge)
    keep = (t >= 0) & (p >= 0) & ~errored
    coverage = _coverage(criterion, human, judge, errored, keep)
    return Pairs(
        criterion=criterion,
        scale=scale,
        true=np.where(keep, t, -1),
        pred=np.where(keep, p, -1),
        coverage=coverage,
    )


def _coverage(
    criterion: Criterion,
    human: np.ndarray,
    judge: np.ndarray,
    errored: np.ndarray,
    keep: np.ndarray,
) -> Coverage:
    """What became of the labelled items: paired (``keep``), errored, failed, missing or
    abstained."""
    labelled = human >= 0
    graded = labelled & ~errored
    abstain = np.isin(judge, criterion.abstain_codes)
    human_abstain = np.isin(human, criterion.abstain_codes)
    n_total = int(labelled.sum())
    n_covered = int(keep.sum())
    n_errored = int((labelled & errored).sum())
    n_failed = int((graded & (judge == FAILED)).sum())
    n_missing = int((graded & (judge == MISSING)).sum())
    n_judge_abstain = int((graded & abstain).sum())
    n_human_abstain = int((graded & human_abstain).sum())
    return Coverage(
        n_total=n_total,
        n_covered=n_covered,
        n_errored=n_errored,
        n_failed=n_failed,
        n_missing=n_missing,
        n_judge_abstain=n_judge_abstain,
        n_human_abstain=n_human_abstain,
        coverage=stats.ratio(n_covered, n_total),
        judge_abstain_rate=stats.ratio(n_judge_abstain, n_total),
        human_abstain_rate=stats.ratio(n_human_abstain, n_total),
        error_rate=stats.ratio(n_errored + n_failed, n_total),
    )


def sum_coverage(parts: Sequence[Coverage]) -> Coverage:
    """Pool coverage counts over criteria (rates recomputed on the pooled denominator)."""
    fields = (
        "n_total",
        "n_covered",
        "n_errored",
        "n_failed",
        "n_missing",
        "n_judge_abstain",
        "n_human_abstain",
    )
    total = {f: sum(getattr(p, f) for p in parts) for f in fields}
    n = total["n_total"]
    return Coverage(
        **total,
        coverage=stats.ratio(total["n_covered"], n),
        judge_abstain_rate=stats.ratio(total["n_judge_abstain"], n),
        human_abstain_rate=stats.ratio(total["n_human_abstain"], n),
        error_rate=stats.ratio(total["n_errored"] + total["n_failed"], n),
    )


def _accuracy(t: np.ndarray, p: np.ndarray) -> float | None:
    from sklearn.metrics import accuracy_score

    return float(accuracy_score(t, p)) if len(t) else None


def _matrix(t: np.ndarray, p: np.ndarray, labels: Sequence[str]) -> ConfusionMatrix:
    counts = stats.confusion(t, p, len(labels))
    return ConfusionMatrix(labels=list(labels), matrix=counts.astype(int).tolist())


def criterion_agreement(pairs: Pairs) -> CriterionAgreement:
    """Every judge-vs-human statistic of one criterion."""
    criterion, scale = pairs.criterion, pairs.scale
    keep = pairs.keep
    t, p = pairs.true[keep], pairs.pred[keep]
    n = len(t)
    kappa = stats.cohen_kappa(t, p, labels=range(scale.k))
    fields: dict[str, object] = {
        "name": criterion.name,
        "kind": criterion.kind_,
        "weight": criterion.weight,
        "n_samples": n,
        "has_data": n > 0,
        "is_degenerate": n > 0 and kappa is None,
        "accuracy": _accuracy(t, p),
        "kappa": kappa,
        "kappa_interpretation": kappa_band(kappa),
        "confusion_matrix": _matrix(t, p, scale.labels) if n else None,
        "coverage": pairs.coverage,
    }
    macro = stats.macro_scores(t, p)
    fields.update(macro_precision=macro[0], macro_recall=macro[1], macro_f1=macro[2])
    if criterion.kind_ != "binary":
        fields["per_option"] = _per_option(t, p, scale) if n else None
    if criterion.kind_ == "binary":
        fields.update(_binary_fields(t, p))
    elif criterion.kind_ == "ordinal":
        fields.update(_ordinal_fields(t, p, scale))
    return CriterionAgreement(**fields)


def _binary_fields(t: np.ndarray, p: np.ndarray) -> dict[str, object]:
    """MET-as-positive precision, recall, F1, phi, error rates and supports."""
    met_t, met_p = (t == 0).astype(int), (p == 0).astype(int)
    precision, recall, f1 = stats.met_scores(met_t, met_p)
    tp = int(np.sum(met_t & met_p))
    fp = int(np.sum((1 - met_t) & met_p))
    fn = int(np.sum(met_t & (1 - met_p)))
    tn = int(np.sum((1 - met_t) & (1 - met_p)))
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "phi": stats.phi(met_t, met_p),
        "fpr": stats.ratio(fp, fp + tn),
        "fnr": stats.ratio(fn, fn + tp),
        "support_human": int(met_t.sum()),
        "support_judge": int(met_p.sum()),
    }


def _ordinal_fields(t: np.ndarray, p: np.ndarray, scale: Scale) -> dict[str, object]:
    """Weighted kappas, adjacent accuracy and value-level errors/correlations on the scale
    (pairs where either side is an NA category are left out)."""
    on_scale = (t < scale.n_scale) & (p < scale.n_scale)
    ts, ps = t[on_scale], p[on_scale]
    weighted = stats.cohen_kappa(ts, ps, labels=range(scale.n_scale), weights="quadratic")
    linear = stats.cohen_kappa(ts, ps, labels=range(scale.n_scale), weights="linear")
    vt, vp = scale.values[ts], scale.values[ps]
    return {
        "weighted_kappa": weighted,
        "weighted_kappa_interpretation": kappa_band(weighted),
        "weighted_kappa_linear": linear,
        "adjacent_accuracy": float(np.mean(np.abs(ts - ps) <= 1)) if len(ts) else None,
        "n_scale_pairs": len(ts),
        "rmse": stats.rmse(vt, vp),
        "mae": stats.mae(vt, vp),
        "spearman": stats.correlation(vp, vt, "spearman"),
        "kendall": stats.correlation(vp, vt, "kendall"),
        "pearson": stats.correlation(vp, vt, "pearson"),
    }


def _per_option(t: np.ndarray, p: np.ndarray, scale: Scale) -> list[OptionScores]:
    scores = stats.per_label_scores(t, p, scale.k)
    return [
        OptionScores(
            label=label,
            precision=precision,
            recall=recall,
            f1=f1,
            support_human=int(np.sum(t == code)),
            support_judge=int(np.sum(p == code)),
        )
        for code, (label, (precision, recall, f1)) in enumerate(zip(scale.labels, scores))
    ]


def pooled_kappa(pairs: Sequence[Pairs]) -> float | None:
    """Cohen's kappa over every criterion's pairs; a category is (criterion, category)."""
    offsets = np.cumsum([0] + [p.scale.k for p in pairs])
    t = np.concatenate([p.true[p.keep] + offsets[i] for i, p in enumerate(pairs)])
    p_ = np.concatenate([p.pred[p.keep] + offsets[i] for i, p in enumerate(pairs)])
    return stats.cohen_kappa(t, p_, labels=range(int(offsets[-1])))


def binary_micro(pairs: Sequence[Pairs]) -> BinaryMicro | None:
    """Pool the decisions of every binary criterion (one mode, so one label set)."""
    binary = [p for p in pairs if p.criterion.kind_ == "binary"]
    if not binary:
        return None
    labels = binary[0].scale.labels
    t = np.concatenate([p.true[p.keep] for p in binary])
    p_ = np.concatenate([p.pred[p.keep] for p in binary])
    met_t, met_p = (t == 0).astype(int), (p_ == 0).astype(int)
    precision, recall, f1 = stats.met_scores(met_t, met_p)
    kappa = stats.cohen_kappa(t, p_, labels=range(len(labels)))
    return BinaryMicro(
        n_criteria=len(binary),
        n_samples=len(t),
        accuracy=_accuracy(t, p_),
        precision=precision,
        recall=recall,
        f1=f1,
        kappa=kappa,
        kappa_interpretation=kappa_band(kappa),
        phi=stats.phi(met_t, met_p),
        confusion_matrix=_matrix(t, p_, labels),
    )


def aggregate(pairs: Sequence[Pairs], criteria: Sequence[CriterionAgreement]) -> Aggregate:
    """Micro (pooled decisions) and macro (mean over criteria) aggregates, labelled."""
    n_samples = sum(c.n_samples for c in criteria)
    correct = sum(int(np.sum(p.true[p.keep] == p.pred[p.keep])) for p in pairs)
    kappas = [c.kappa for c in criteria if c.kappa is not None]
    ordinal = [c.weighted_kappa for c in criteria if c.kind == "ordinal"]
    linear = [c.weighted_kappa_linear for c in criteria if c.kind == "ordinal"]
    return Aggregate(
        n_samples=n_samples,
        accuracy_micro=stats.ratio(correct, n_samples),
        accuracy_macro=stats.mean_or_none([c.accuracy for c in criteria]),
        mean_kappa_macro=stats.mean_or_none(kappas),
        n_kappa_criteria=len(kappas),
        mean_weighted_kappa_macro=stats.mean_or_none(ordinal),
        mean_weighted_kappa_linear_macro=stats.mean_or_none(linear),
        kappa_micro=pooled_kappa(pairs) if pairs else None,
        macro_f1_macro=stats.mean_or_none([c.macro_f1 for c in criteria]),
        binary_micro=binary_micro(pairs),
        coverage=sum_coverage([p.coverage for p in pairs]),
    )


def abstention_agreement(
    criteria: Sequence[Criterion],
    human: np.ndarray,
    judge: np.ndarray,
    errored: np.ndarray,
) -> list[AbstentionAgreement]:
    """Agreement on *whether* to abstain (CANNOT_ASSESS for binary, NA for multi-choice)."""
    out: list[AbstentionAgreement] = []
    for kind in ("cannot_assess", "na"):
        chosen = [
            c
            for c, crit in enumerate(criteria)
            if (crit.kind_ == "binary") == (kind == "cannot_assess") and crit.abstain_codes
        ]
        if not chosen:
            continue
        out.append(
            _abstention_row(kind, [criteria[c] for c in chosen], chosen, human, judge, errored)
        )
    return out


def _abstention_row(
    kind: str,
    chosen: Sequence[Criterion],
    rows: Sequence[int],
    human: np.ndarray,
    judge: np.ndarray,
    errored: np.ndarray,
) -> AbstentionAgreement:
    """Abstained / answered flags pooled over the ``chosen`` criteria (at ``rows``), and the
    kappa between judge and human on them."""
    h_flags: list[np.ndarray] = []
    j_flags: list[np.ndarray] = []
    for criterion, c in zip(chosen, rows):
        both = (human[c] >= 0) & (judge[c] >= 0) & ~errored
        codes = criterion.abstain_codes
        h_flags.append(np.isin(human[c][both], codes))
        j_flags.append(np.isin(judge[c][both], codes))
    h = np.concatenate(h_flags).astype(int)
    j = np.concatenate(j_flags).astype(int)
    kappa = stats.cohen_kappa(h, j, labels=[0, 1])
    return AbstentionAgreement(
        kind=kind,
        n_criteria=len(chosen),
        n_pairs=len(h),
        human_abstain=int(h.sum()),
        judge_abstain=int(j.sum()),
        both_abstain=int(np.sum(h & j)),
        judge_only=int(np.sum(j & (1 - h))),
        human_only=int(np.sum(h & (1 - j))),
        kappa=kappa,
        kappa_interpretation=kappa_band(kappa),
    )
