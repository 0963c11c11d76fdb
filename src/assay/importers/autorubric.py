"""autorubric's ``RubricDataset`` JSON as an assay dataset for ``assay calibrate --metric rubric``.

autorubric (delip/autorubric) writes ``{name?, prompt?, rubric, reference_submission?, items:
[{submission, description, ground_truth?, rubric?, reference_submission?, prompt?}]}``. Each
item becomes sample ``<index>`` (autorubric names items by position, as its results do): the
prompt as ``input.prompt``, the reference submission as ``expected_output``, the submission as
``metadata.answer`` and the ground truth as ``metadata.labels`` (criterion name -> label). The
rubric becomes the dataset's ``rubric:`` (an item's own rubric its ``metadata.rubric``), with
autorubric's defaults written out: weight 10, ordinal multi-choice, names ``C1``, ``C2``...
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from assay.calibration.model import Criterion
from assay.errors import ForeignFileError
from assay.importers.common import Imported, notes, parse_model, read_foreign, unknown_keys

AUTORUBRIC_WEIGHT = 10.0
"""autorubric's default criterion weight (assay's is 1), written out so scores stay equal."""


class RubricOption(BaseModel):
    """An autorubric ``CriterionOption``."""

    model_config = ConfigDict(extra="allow")

    label: str
    value: float | None = None
    na: bool = False


class RubricCriterion(BaseModel):
    """An autorubric ``Criterion``: binary without options, multi-choice with them."""

    model_config = ConfigDict(extra="allow")

    requirement: str
    weight: float = AUTORUBRIC_WEIGHT
    name: str | None = None
    options: list[RubricOption] | None = None
    scale_type: Literal["ordinal", "nominal"] = "ordinal"
    aggregation: str | None = None


class DataItem(BaseModel):
    """An autorubric ``DataItem``."""

    model_config = ConfigDict(extra="allow")

    submission: str
    description: str = ""
    ground_truth: list[Any] | None = None
    rubric: Any = None
    reference_submission: str | None = None
    prompt: str | None = None


class RubricDataset(BaseModel):
    """An autorubric ``RubricDataset`` file (``rubric`` is required, ``null`` allowed)."""

    model_config = ConfigDict(extra="allow")

    name: str | None = None
    prompt: str | None = None
    rubric: Any = Field(description="the dataset rubric; null when every item has its own")
    reference_submission: str | None = None
    items: list[Any] = Field(min_length=1)


def is_rubric_dataset(data: object) -> bool:
    """Whether ``data`` looks like a RubricDataset (not an evaluation result)."""
    return isinstance(data, dict) and "items" in data and "rubric" in data


def import_dataset(path: Path) -> Imported:
    """The RubricDataset at ``path`` as an ``assay.dataset.v1`` document."""
    source = str(path)
    dataset = parse_model(RubricDataset, read_foreign(path), source)
    unmapped = unknown_keys(dataset, "dataset")
    shared = None
    if dataset.rubric is not None:
        shared, notes_ = rubric_criteria(dataset.rubric, source, None)
        unmapped += notes_
    samples = []
    for index, raw in enumerate(dataset.items):
        item = parse_model(DataItem, raw, source, index)
        sample, notes_ = _sample(item, index, dataset, shared, source)
        samples.append(sample)
        unmapped += notes_
    document: dict[str, Any] = {
        "schema_version": "assay.dataset.v1",
        "name": dataset.name or path.stem,
    }
    if shared is not None:
        document["rubric"] = [written_criterion(c) for c in shared]
    document["samples"] = samples
    return Imported("dataset", document, notes(unmapped))


def _sample(
    item: DataItem,
    index: int,
    dataset: RubricDataset,
    shared: list[Criterion] | None,
    source: str,
) -> tuple[dict[str, Any], list[str]]:
    """One item as a sample, and the notes on what it could not carry."""
    unmapped = unknown_keys(item, f"item {index}")
    criteria = shared
    metadata: dict[str, Any] = {"answer": item.submission}
    if item.description:
        metadata["description"] = item.description
    if item.rubric is not None:
        criteria, notes_ = rubric_criteria(item.rubric, source, index)
        metadata["rubric"] = [written_criterion(c) for c in criteria]
        unmapped += notes_
    if criteria is None:
        raise ForeignFileError(
            "the item has no rubric and the dataset has none", file=source, sample=index
        )
    if item.ground_truth is not None:
        metadata["labels"] = ground_truth(item.ground_truth, criteria, source, index)
    prompt = item.prompt if item.prompt is not None else dataset.prompt
    reference = item.reference_submission
    if reference is None:
        reference = dataset.reference_submission
    sample = {
        "id": str(index),
        "input": {"prompt": prompt} if prompt is not None else {},
        "expected_output": reference,
        "metadata": metadata,
    }
    return sample, unmapped


def rubric_criteria(
    raw: object, source: str, item: int | None
) -> tuple[list[Criterion], list[str]]:
    """An autorubric rubric (any of its accepted shapes) as assay criteria, and notes."""
    entries, unmapped = _rubric_entries(raw, source, item)
    where = "rubric" if item is None else f"item {item} rubric"
    criteria: list[Criterion] = []
    seen: set[str] = set()
    for position, entry in enumerate(entries):
        parsed = parse_model(RubricCriterion, entry, source, item)
        name = _criterion_name(parsed.name, position, seen)
        unmapped += unknown_keys(parsed, f"{where} criterion '{name}'")
        if parsed.aggregation is not None:
            unmapped.append(
                f"{where} criterion '{name}': field 'aggregation' is not mapped "
                "(assay aggregates a rubric's criteria alike)"
            )
        criteria.append(_criterion(parsed, name, source, item))
    return criteria, unmapped


def _rubric_entries(raw: object, source: str, item: int | None) -> tuple[list[Any], list[str]]:
    """The criterion entries of a rubric written as a list, sections, or a mapping."""
    unmapped: list[str] = []
    if isinstance(raw, dict):
        if isinstance(raw.get("guidelines"), str):
            unmapped.append(
                "rubric: field 'guidelines' is not mapped (no place in an assay rubric)"
            )
        for key in ("criteria", "sections", "rubric"):
            if key in raw:
                return _rubric_entries(raw[key], source, item)[0], unmapped
    if isinstance(raw, list) and raw:
        flat: list[Any] = []
        for entry in raw:
            is_section = isinstance(entry, dict) and "criteria" in entry
            flat.extend(entry["criteria"] if is_section else [entry])
        if flat:
            return flat, unmapped
    raise ForeignFileError("no criteria found", file=source, sample=item, field="rubric")


def _criterion_name(name: str | None, position: int, seen: set[str]) -> str:
    """The criterion's name, autorubric's ``C<n>`` when it has none, unique in its rubric."""
    base = (name or "").strip() or f"C{position + 1}"
    unique, number = base, 2
    while unique.lower() in seen:
        unique, number = f"{base} ({number})", number + 1
    seen.add(unique.lower())
    return unique


def _criterion(parsed: RubricCriterion, name: str, source: str, item: int | None) -> Criterion:
    """An assay criterion with the same name, requirement, weight, kind and options."""
    data: dict[str, Any] = {
        "name": name,
        "requirement": parsed.requirement,
        "weight": parsed.weight,
    }
    if parsed.options is not None:
        data["type"] = parsed.scale_type
        data["options"] = [
            {"label": o.label, "value": o.value, "na": o.na}
            if o.na
            else {"label": o.label, "value": o.value}
            for o in parsed.options
        ]
    return parse_model(Criterion, data, source, item)


def written_criterion(criterion: Criterion) -> dict[str, Any]:
    """A criterion as written in an assay rubric (``type`` spelled out for multi-choice)."""
    data: dict[str, Any] = {
        "name": criterion.name,
        "requirement": criterion.requirement,
        "weight": criterion.weight,
    }
    if criterion.options is not None:
        data["type"] = criterion.kind_
        data["options"] = [o.model_dump(exclude_defaults=True) for o in criterion.options]
    return data


def ground_truth(
    raw: list[Any], criteria: list[Criterion], source: str, item: int
) -> dict[str, str]:
    """An item's ground-truth list as ``{criterion: label}``; one label per criterion."""
    if len(raw) != len(criteria):
        raise ForeignFileError(
            f"{len(raw)} labels for {len(criteria)} criteria",
            file=source,
            sample=item,
            field="ground_truth",
        )
    return {
        criterion.name: label_of(criterion, value, source, item, f"ground_truth[{position}]")
        for position, (criterion, value) in enumerate(zip(criteria, raw))
    }


def label_of(criterion: Criterion, raw: object, source: str, item: int, field: str) -> str:
    """A verdict (binary) or option label (by label or index) checked against the criterion."""
    options = criterion.options
    if options is not None and isinstance(raw, int) and not isinstance(raw, bool):
        if not 0 <= raw < len(options):
            raise ForeignFileError(
                f"option index {raw} is out of range (0..{len(options) - 1})",
                file=source,
                sample=item,
                field=field,
            )
        return options[raw].label
    try:
        return criterion.labels[criterion.code_of(raw)]
    except ValueError as exc:
        raise ForeignFileError(str(exc), file=source, sample=item, field=field) from None
