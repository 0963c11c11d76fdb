"""The lane's dataset: the seed attacks shipped in the package, or a team's own red-team file.

Every sample of an adversarial dataset carries ``metadata.adversarial`` with a known
``category``, its ``label``, a ``severity`` and the ``compliance_frameworks`` it maps to; the
checks here make a wrong value a one-line input error that names file, sample and field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from assay.adversarial.categories import FRAMEWORKS, SEVERITIES, Category, category
from assay.data.dataset import Dataset, dataset_from_data, parse_document
from assay.data.loading import load_dataset
from assay.errors import DatasetError, UsageError

SEEDS_NAME = "seeds.yml"
SEEDS_SOURCE = "assay/adversarial/seeds.yml"


def seed_dataset() -> Dataset:
    """The seed attacks that ship with assay (``assay.adversarial.v1``)."""
    text = resources.files("assay.adversarial").joinpath(SEEDS_NAME).read_text(encoding="utf-8")
    data = parse_document(text, Path(SEEDS_NAME))
    return check_adversarial(dataset_from_data(data, source=SEEDS_SOURCE), SEEDS_SOURCE)


def lane_dataset(path: Path | None, categories: Sequence[Category]) -> Dataset:
    """The seeds (or the dataset at ``path``) narrowed to ``categories``."""
    if path is None:
        dataset, source = seed_dataset(), SEEDS_SOURCE
    else:
        dataset, source = check_adversarial(load_dataset(path), str(path)), str(path)
    wanted = {c.value for c in categories}
    samples = [s for s in dataset.samples if s.metadata["adversarial"]["category"] in wanted]
    if not samples:
        names = ", ".join(sorted(wanted))
        raise UsageError(f"{source}: no sample in the selected categories ({names})")
    return dataset.model_copy(update={"samples": samples})


def check_adversarial(dataset: Dataset, source: str) -> Dataset:
    """Validate every sample's ``metadata.adversarial`` block; return the dataset unchanged."""
    for sample in dataset.samples:
        _check_block(sample.metadata.get("adversarial"), source, sample.id)
    return dataset


def _check_block(raw: object, source: str, sample: str) -> None:
    def bad(field: str, message: str) -> DatasetError:
        return DatasetError(
            message, file=source, sample=sample, field=f"metadata.adversarial{field}"
        )

    if not isinstance(raw, Mapping):
        raise bad("", "an adversarial sample needs a mapping with category, label, severity")
    value = raw.get("category")
    if not isinstance(value, str):
        raise bad(".category", "required string is missing")
    try:
        known = category(value)
    except UsageError as exc:
        raise bad(".category", str(exc)) from None
    label = raw.get("label", known.label)
    if not isinstance(label, str) or not label.strip():
        raise bad(".label", "must be a non-empty string")
    severity = raw.get("severity", known.severity)
    if severity not in SEVERITIES:
        raise bad(".severity", f"must be one of {', '.join(SEVERITIES)}; got {severity!r}")
    frameworks = raw.get("compliance_frameworks", list(known.frameworks))
    if not isinstance(frameworks, list) or not all(f in FRAMEWORKS for f in frameworks):
        raise bad(
            ".compliance_frameworks",
            f"must be a list drawn from {', '.join(FRAMEWORKS)}; got {frameworks!r}",
        )
    if len(set(frameworks)) != len(frameworks):
        raise bad(".compliance_frameworks", "names a framework twice")


def adversarial_block(metadata: Mapping[str, Any]) -> dict[str, Any] | None:
    """A sample's checked ``metadata.adversarial`` with defaults filled from its category."""
    raw = metadata.get("adversarial")
    if not isinstance(raw, Mapping) or not isinstance(raw.get("category"), str):
        return None
    try:
        known = category(raw["category"])
    except UsageError:
        return None
    return {
        "category": known.value,
        "label": raw.get("label", known.label),
        "severity": raw.get("severity", known.severity),
        "compliance_frameworks": list(raw.get("compliance_frameworks", known.frameworks)),
    }
