"""Criteria, verdict codes and the columnar label set that every agreement statistic reads.

A labels document (JSON / JSONL / YAML / CSV, see :mod:`assay.calibration.loaders`) names its
criteria and, per item, the human ground truth and each judge's verdict for every criterion.
It is validated once and turned into a :class:`LabelSet`: integer code arrays (criteria x
items, judges x criteria x items) so the statistics and the bootstrap work on numpy arrays,
not on Python objects.

Codes: binary criteria use ``MET=0, UNMET=1, CANNOT_ASSESS=2``; multi-choice criteria use the
option's index in the authored option list (NA options included). ``MISSING=-1`` marks a cell
nobody labelled and ``FAILED=-2`` a judgment whose call failed (never counted as a verdict).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Final, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

LABELS_SCHEMA: Final = "assay.labels.v1"

MISSING = -1
FAILED = -2
MET, UNMET, CANNOT_ASSESS = 0, 1, 2
BINARY_LABELS: tuple[str, str, str] = ("MET", "UNMET", "CANNOT_ASSESS")

CriterionKind = Literal["binary", "ordinal", "nominal"]
Mode = Literal["exclude", "as_unmet", "as_category"]
MODES: tuple[str, ...] = ("exclude", "as_unmet", "as_category")


class Verdict(str, Enum):
    """A binary criterion's verdict; CANNOT_ASSESS is an abstention, not a failure."""

    MET = "MET"
    UNMET = "UNMET"
    CANNOT_ASSESS = "CANNOT_ASSESS"


class Criterion(BaseModel):
    """A rubric criterion: binary (no options) or ordinal / nominal multi-choice."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str = Field(min_length=1)
    requirement: str = ""
    weight: float = Field(default=1.0, description="negative = penalty criterion (MET subtracts)")
    kind: CriterionKind | None = Field(
        default=None,
        alias="type",
        description="binary | ordinal | nominal; default binary without options, ordinal with",
    )
    scale_type: Literal["ordinal", "nominal"] | None = Field(
        default=None, description="autorubric spelling of kind for multi-choice criteria"
    )
    options: tuple[Option, ...] | None = None

    @field_validator("weight")
    @classmethod
    def _finite_weight(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("weight must be a finite number")
        return value

    @model_validator(mode="after")
    def _resolve_kind(self) -> Criterion:
        """Settle the kind (``type``, ``scale_type`` or the options) and check the options."""
        kind = self.kind
        if kind is None:
            kind = "binary" if self.options is None else (self.scale_type or "ordinal")
        elif self.scale_type is not None and self.scale_type != kind:
            raise ValueError(f"type {kind!r} contradicts scale_type {self.scale_type!r}")
        if kind == "binary":
            if self.options is not None:
                raise ValueError(
                    "a binary criterion has no options (give type: ordinal or nominal)"
                )
        else:
            options = self.options or ()
            check_options(kind, options)
            if kind == "ordinal" and any(o.value is None for o in options if not o.na):
                object.__setattr__(self, "options", evenly_spaced(options))
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "scale_type", None if kind == "binary" else kind)
        return self

    # ------------------------------------------------------------------ derived views

    @property
    def kind_(self) -> CriterionKind:
        """The resolved kind (never None after validation)."""
        assert self.kind is not None
        return self.kind

    @property
    def labels(self) -> tuple[str, ...]:
        """Every code's label: MET/UNMET/CANNOT_ASSESS, or the authored option labels."""
        if self.options is None:
            return BINARY_LABELS
        return tuple(o.label for o in self.options)

    @property
    def abstain_codes(self) -> tuple[int, ...]:
        """Codes that mean "abstained": CANNOT_ASSESS, or every NA option."""
        if self.options is None:
            return (CANNOT_ASSESS,)
        return tuple(i for i, o in enumerate(self.options) if o.na)

    @property
    def scale_codes(self) -> tuple[int, ...]:
        """Codes of real (non-abstaining) categories, in scale order."""
        if self.options is None:
            return (MET, UNMET)
        return tuple(i for i, o in enumerate(self.options) if not o.na)

    @property
    def code_values(self) -> np.ndarray:
        """Score value of each code (NaN for abstentions and options without a value)."""
        if self.options is None:
            return np.array([1.0, 0.0, np.nan])
        return np.array(
            [np.nan if (o.na or o.value is None) else float(o.value) for o in self.options]
        )

    @property
    def worst_code(self) -> int:
        """The score-minimising real category (weight-sign aware; ties -> lowest index).

        Used by the ``as_unmet`` mode: an abstention is read as the worst real answer, which
        is UNMET for a positive binary criterion and MET for a penalty criterion.
        """
        if self.options is None:
            return UNMET if self.weight >= 0 else MET
        values = self.code_values
        real = list(self.scale_codes)
        if all(np.isnan(values[i]) for i in real):
            return real[0]
        if self.weight >= 0:
            return min(real, key=lambda i: (values[i], i))
        return min(real, key=lambda i: (-values[i], i))

    def code_of(self, raw: object) -> int:
        """Turn one raw label into a code; raises ValueError with the accepted labels."""
        if self.options is None:
            if isinstance(raw, bool):
                return MET if raw else UNMET
            if isinstance(raw, str):
                key = raw.strip().upper().replace(" ", "_").replace("-", "_")
                if key in ("MET", "UNMET", "CANNOT_ASSESS"):
                    return BINARY_LABELS.index(key)
            raise ValueError(f"{_shown(raw)} is not a verdict; use MET, UNMET or CANNOT_ASSESS")
        if isinstance(raw, bool):
            raise ValueError(f"{raw!r} is not an option of this criterion")
        if isinstance(raw, int):  # compared, never converted: 2**1100 or 5,000 digits stay total
            text = str(raw) if abs(raw) < 10**30 else "<huge integer>"
        elif isinstance(raw, float):
            text = str(int(raw)) if raw.is_integer() and abs(raw) < 1e30 else str(raw)
        elif isinstance(raw, str):
            text = raw.strip()
        else:
            raise ValueError(f"expected an option label; got {type(raw).__name__}")
        lowered = text.lower()
        for index, option in enumerate(self.options):
            if option.label.lower() == lowered:
                return index
        choices = ", ".join(repr(o.label) for o in self.options)
        raise ValueError(f"{_shown(raw)} is not an option; options are {choices}")


def _shown(raw: object) -> str:
    """A short rendering of a label for an error message (never the whole of a huge value)."""
    if isinstance(raw, int) and not isinstance(raw, bool) and abs(raw) >= 10**30:
        return "a huge integer"
    text = repr(raw)
    return text if len(text) <= 60 else text[:57] + "..."


class JudgeSpec(BaseModel):
    """A judge named in the document; ``weight`` feeds the weighted aggregation."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    weight: float = Field(default=1.0, gt=0)


class ItemRecord(BaseModel):
    """One labelled item as written in a labels document."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    id: str
    human: dict[str, Any] | None = Field(default=None, alias="ground_truth")
    judges: dict[str, dict[str, Any]] = Field(default_factory=dict)
    consensus: dict[str, Any] | None = None
    human_score: float | None = None
    judge_scores: dict[str, float | None] = Field(default_factory=dict)
    score: float | None = Field(default=None, description="the ensemble's (consensus) score")
    error: str | None = Field(default=None, description="grading this item failed")
    text: str | None = Field(default=None, description="the judged answer (for length-bias checks)")

    @field_validator("id", mode="before")
    @classmethod
    def _id_string(cls, value: object) -> Any:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        return value

    @model_validator(mode="before")
    @classmethod
    def _single_judge_shorthand(cls, data: object) -> Any:
        if isinstance(data, dict) and "judge" in data:
            data = dict(data)
            single = data.pop("judge")
            if "judges" in data:
                raise ValueError("give either 'judge' or 'judges', not both")
            data["judges"] = {"judge": single}
        return data


class LabelsDocument(BaseModel):
    """The whole labels file (``schema_version: assay.labels.v1``)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal["assay.labels.v1"] = LABELS_SCHEMA
    name: str | None = None
    criteria: list[Criterion] = Field(min_length=1)
    judges: list[JudgeSpec] | None = None
    items: list[ItemRecord] = Field(min_length=1)

    @field_validator("judges", mode="before")
    @classmethod
    def _judge_names(cls, value: object) -> Any:
        if isinstance(value, list):
            return [{"id": j} if isinstance(j, str) else j for j in value]
        return value


@dataclass(frozen=True)
class LabelSet:
    """Columnar labels: the only input of :func:`assay.calibration.compute_agreement`.

    ``human`` is (criteria, items); ``votes`` is (judges, criteria, items); ``consensus`` is an
    optional (criteria, items) array of the ensemble's own final verdicts. Score arrays hold
    NaN where no score was supplied (it is then derived from the verdicts).
    """

    criteria: tuple[Criterion, ...]
    item_ids: tuple[str, ...]
    judges: tuple[str, ...]
    human: np.ndarray
    votes: np.ndarray
    consensus: np.ndarray | None = None
    item_errored: np.ndarray | None = None
    human_scores: np.ndarray | None = None
    judge_scores: np.ndarray | None = None
    consensus_scores: np.ndarray | None = None
    judge_weights: tuple[float, ...] | None = None
    lengths: np.ndarray | None = None
    source: str = "<labels>"
    notes: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        n_c, n_i, n_j = len(self.criteria), len(self.item_ids), len(self.judges)
        if self.human.shape != (n_c, n_i):
            raise ValueError(f"human must have shape {(n_c, n_i)}; got {self.human.shape}")
        if self.votes.shape != (n_j, n_c, n_i):
            raise ValueError(f"votes must have shape {(n_j, n_c, n_i)}; got {self.votes.shape}")
        if self.consensus is not None and self.consensus.shape != (n_c, n_i):
            raise ValueError("consensus must have the shape of human")
        if self.item_errored is None:
            object.__setattr__(self, "item_errored", np.zeros(n_i, dtype=bool))
        for name, shape in (
            ("human_scores", (n_i,)),
            ("consensus_scores", (n_i,)),
            ("judge_scores", (n_j, n_i)),
        ):
            value = getattr(self, name)
            if value is None:
                object.__setattr__(self, name, np.full(shape, np.nan))
            elif value.shape != shape:
                raise ValueError(f"{name} must have shape {shape}; got {value.shape}")
        if self.judge_weights is None:
            object.__setattr__(self, "judge_weights", tuple(1.0 for _ in self.judges))

    @property
    def n_items(self) -> int:
        return len(self.item_ids)

    @classmethod
    def from_labels(
        cls,
        criteria: Sequence[Criterion],
        human: Sequence[Sequence[Any]],
        judges: dict[str, Sequence[Sequence[Any]]],
        *,
        item_ids: Sequence[str] | None = None,
    ) -> LabelSet:
        """Build from per-item label rows (``human[i][c]``, ``judges[j][i][c]``); None = missing.

        A convenience for tests and notebooks; raises ValueError naming item and criterion.
        """
        n_items = len(human)
        ids = tuple(item_ids) if item_ids is not None else tuple(str(i) for i in range(n_items))
        crit = tuple(criteria)
        human_codes = np.full((len(crit), n_items), MISSING, dtype=np.int16)
        votes = np.full((len(judges), len(crit), n_items), MISSING, dtype=np.int16)

        def put(target: np.ndarray, rows: Sequence[Sequence[Any]], who: str) -> None:
            if len(rows) != n_items:
                raise ValueError(f"{who}: expected {n_items} rows, got {len(rows)}")
            for i, row in enumerate(rows):
                for c, raw in enumerate(row):
                    if raw is None:
                        continue
                    try:
                        target[c, i] = crit[c].code_of(raw)
                    except ValueError as exc:
                        raise ValueError(
                            f"{who}, item {ids[i]}, criterion {crit[c].name}: {exc}"
                        ) from None

        put(human_codes, human, "human")
        for j, rows in enumerate(judges.values()):
            put(votes[j], rows, f"judge {list(judges)[j]}")
        return cls(
            criteria=crit, item_ids=ids, judges=tuple(judges), human=human_codes, votes=votes
        )


class Option(BaseModel):
    """One choice of a multi-choice criterion; ``na`` marks a "not applicable" abstention."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str = Field(min_length=1)
    value: float | None = Field(
        default=None,
        description=(
            "score of the option in [0, 1]; ordinal options default to evenly spaced values"
        ),
    )
    na: bool = False

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: object) -> Any:
        """``"good"`` or ``3`` alone is an option with that label; numeric labels become text."""
        if isinstance(data, str) or (isinstance(data, (int, float)) and not isinstance(data, bool)):
            data = {"label": data}
        if (
            isinstance(data, dict)
            and isinstance(data.get("label"), (int, float))
            and not isinstance(data.get("label"), bool)
        ):
            number = data["label"]
            data = {
                **data,
                "label": str(int(number)) if float(number).is_integer() else str(number),
            }
        return data

    @field_validator("label")
    @classmethod
    def _strip(cls, value: str) -> str:
        stripped = value.strip()
        if not stripped:
            raise ValueError("option label must not be blank")
        return stripped

    @model_validator(mode="after")
    def _check_value(self) -> Option:
        finite = self.value is None or math.isfinite(self.value)
        if self.value is not None and not self.na and (not finite or not 0.0 <= self.value <= 1.0):
            raise ValueError(f"option value must be in [0, 1]; got {self.value}")
        return self


def check_options(kind: str, options: tuple[Option, ...]) -> None:
    """A multi-choice criterion needs two real options and case-insensitively unique labels."""
    real = [o for o in options if not o.na]
    if len(real) < 2:
        raise ValueError(f"a {kind} criterion needs at least 2 non-NA options")
    labels = [o.label.lower() for o in options]
    if len(set(labels)) != len(labels):
        raise ValueError("option labels must be unique (case-insensitive)")


def evenly_spaced(options: tuple[Option, ...]) -> tuple[Option, ...]:
    """Ordinal options without values get 0..1 evenly spaced in order (NA options keep none);
    giving values to only some of them is an error."""
    real = [o for o in options if not o.na]
    if any(o.value is not None for o in real):
        raise ValueError("give a value for every ordinal option or for none")
    step = 1.0 / (len(real) - 1)
    filled: list[Option] = []
    position = 0
    for option in options:
        if option.na:
            filled.append(option)
        else:
            filled.append(option.model_copy(update={"value": position * step}))
            position += 1
    return tuple(filled)
