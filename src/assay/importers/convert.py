"""One entry point for every importer: the source's name and the file (or directory)."""

from __future__ import annotations

from pathlib import Path

from assay.data.fileio import is_dir
from assay.errors import UsageError
from assay.importers.autorubric import import_dataset, is_rubric_dataset
from assay.importers.autorubric_results import import_results, is_results
from assay.importers.common import Imported, read_foreign
from assay.importers.deepeval import import_goldens
from assay.importers.padosoft import import_cases
from assay.importers.promptfoo import import_tests

SOURCES = ("autorubric", "padosoft-calibration", "promptfoo", "deepeval")


def convert(source: str, path: Path, *, dataset: Path | None = None) -> Imported:
    """The file at ``path``, written by the tool ``source``, as an assay document.

    ``dataset`` is autorubric's dataset file, needed with its evaluation results (they hold
    verdicts by item index, the dataset the ground truth).
    """
    if source == "autorubric":
        return _autorubric(path, dataset)
    if dataset is not None:
        raise UsageError("--dataset is read only with autorubric results")
    if source == "padosoft-calibration":
        return import_cases(path)
    if source == "promptfoo":
        return import_tests(path)
    if source == "deepeval":
        return import_goldens(path)
    raise UsageError(f"unknown source {source!r}; sources are {', '.join(SOURCES)}")


def _autorubric(path: Path, dataset: Path | None) -> Imported:
    """A RubricDataset, or results (``items.jsonl`` / an experiment directory) with --dataset."""
    results = is_dir(path) or path.suffix.lower() == ".jsonl"
    if not results:
        data = read_foreign(path)
        results = is_results(data) or (isinstance(data, dict) and "item_results" in data)
        if not results and not is_rubric_dataset(data):
            raise UsageError(
                f"{path}: neither an autorubric dataset (items + rubric) nor its results "
                "(items.jsonl)"
            )
    if not results:
        if dataset is not None:
            raise UsageError("--dataset is read only with autorubric results")
        return import_dataset(path)
    if dataset is None:
        raise UsageError(
            "autorubric results need their dataset for the ground truth: pass --dataset FILE"
        )
    return import_results(path, dataset)
