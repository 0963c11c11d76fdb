"""autorubric's evaluation results with its dataset as an assay labels file (``assay agreement``).

autorubric's ``evaluate()`` writes an experiment directory whose ``items.jsonl`` holds one
``ItemResult.to_dict()`` per line: ``{item_idx, error, report: {score, error, report_type:
single|ensemble, criterion_reports, judge_scores}}``. A single judge's criterion report carries
``verdict`` or ``multi_choice_verdict``; an ensemble's carries ``final_verdict`` /
``final_multi_choice_verdict`` and every judge's ``votes`` / ``multi_choice_votes``. The
dataset supplies the rubric, the ground truth (human labels) and the submissions (``text``).

A judge that abstained on a multi-choice criterion (an NA vote, or the index autorubric gives
the NA option it appends) is read as that criterion's NA option; a criterion without one gets
autorubric's ``Cannot assess / not applicable`` appended last, as autorubric does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from assay.calibration.model import Criterion, Option
from assay.data.fileio import is_dir
from assay.errors import ForeignFileError
from assay.importers.autorubric import import_dataset, written_criterion
from assay.importers.common import Imported, notes, parse_model, read_foreign, require_list

SINGLE_JUDGE = "default"
"""The judge id autorubric gives a single-judge grader."""
NA_LABEL = "Cannot assess / not applicable"
_NA = "\x00na"  # placeholder for "the criterion's NA option" until every cell is read


class Vote(BaseModel):
    """One judge's binary vote in an ensemble."""

    model_config = ConfigDict(extra="ignore")

    judge_id: str
    verdict: str | None = None
    error: str | None = None


class ChoiceVote(BaseModel):
    """One judge's multi-choice vote in an ensemble (or a single judge's verdict)."""

    model_config = ConfigDict(extra="ignore")

    judge_id: str = SINGLE_JUDGE
    selected_index: int | None = None
    selected_label: str | None = None
    na: bool = False
    error: str | None = None


class CriterionResult(BaseModel):
    """A criterion report of either report type."""

    model_config = ConfigDict(extra="ignore")

    verdict: str | None = None
    multi_choice_verdict: ChoiceVote | None = None
    error: str | None = None
    final_verdict: str | None = None
    final_multi_choice_verdict: ChoiceVote | None = None
    votes: list[Vote] = Field(default_factory=list)
    multi_choice_votes: list[ChoiceVote] = Field(default_factory=list)


class Report(BaseModel):
    """An item's ``report`` as ``ItemResult.to_dict`` writes it."""

    model_config = ConfigDict(extra="ignore")

    score: float | None = None
    error: str | None = None
    report_type: Literal["single", "ensemble"] = "single"
    criterion_reports: list[CriterionResult] | None = None
    judge_scores: dict[str, float | None] = Field(default_factory=dict)


class ItemResult(BaseModel):
    """One line of ``items.jsonl``."""

    model_config = ConfigDict(extra="ignore")

    item_idx: int
    error: str | None = None
    report: Report | None = None


def is_results(data: object) -> bool:
    """Whether ``data`` (a parsed file) looks like autorubric item results."""
    return (
        isinstance(data, list)
        and bool(data)
        and isinstance(data[0], dict)
        and ("item_idx" in data[0])
    )


def results_path(path: Path) -> Path:
    """``items.jsonl`` inside an experiment directory, else ``path`` itself."""
    return path / "items.jsonl" if is_dir(path) else path


def import_results(path: Path, dataset: Path) -> Imported:
    """Results at ``path`` (``items.jsonl`` or its experiment directory) as a labels document."""
    path = results_path(path)
    source = str(path)
    data = read_foreign(path)
    if isinstance(data, dict) and "item_results" in data:
        data = data["item_results"]
    rows = require_list(data, source, "item results (autorubric's items.jsonl)")
    results = [parse_model(ItemResult, row, source, n) for n, row in enumerate(rows)]
    base = import_dataset(dataset)
    rubric = base.document.get("rubric")
    if rubric is None:
        raise ForeignFileError(
            "the dataset has no dataset-level rubric; a labels file needs one rubric for all items",
            file=str(dataset),
            field="rubric",
        )
    criteria = [Criterion.model_validate(c) for c in rubric]
    samples = {s["id"]: s for s in base.document["samples"]}
    builder = _Builder(criteria, source)
    unmapped = list(base.unmapped)
    for result in results:
        sample = samples.get(str(result.item_idx))
        if sample is None:
            unmapped.append(f"item_idx {result.item_idx}: not in the dataset, left out")
            continue
        builder.add(result, sample)
    missing = len(samples) - len(builder.items)
    if missing:
        unmapped.append(f"{missing} dataset item(s) have no result and are left out")
    if not builder.items:
        raise ForeignFileError("no result matches an item of the dataset", file=source)
    return Imported("labels", builder.document(dataset), notes(unmapped))


class _Builder:
    """Collects items, then resolves NA placeholders once every cell is known."""

    def __init__(self, criteria: list[Criterion], source: str) -> None:
        self.criteria = criteria
        self.source = source
        self.items: list[dict[str, Any]] = []
        self.needs_na = [False] * len(criteria)
        self.judges: dict[str, None] = {}

    def add(self, result: ItemResult, sample: dict[str, Any]) -> None:
        """One item: the human labels, each judge's verdicts, the consensus and the scores."""
        item: dict[str, Any] = {"id": sample["id"]}
        labels = sample["metadata"].get("labels")
        if labels:
            item["human"] = labels
        report = result.report
        error = result.error or (report.error if report is not None else None)
        if error is not None:
            item["error"] = error
        if report is not None and report.criterion_reports is not None:
            self._verdicts(item, report, result.item_idx)
        item["text"] = sample["metadata"]["answer"]
        self.items.append(item)

    def _verdicts(self, item: dict[str, Any], report: Report, index: int) -> None:
        reports = report.criterion_reports or []
        if len(reports) != len(self.criteria):
            raise ForeignFileError(
                f"{len(reports)} criterion reports for {len(self.criteria)} criteria",
                file=self.source,
                sample=index,
                field="report.criterion_reports",
            )
        judges: dict[str, dict[str, Any]] = {}
        consensus: dict[str, Any] = {}
        for c, (criterion, cr) in enumerate(zip(self.criteria, reports)):
            for judge, cell in self._cells(c, criterion, cr, report.report_type):
                judges.setdefault(judge, {})[criterion.name] = cell
                self.judges[judge] = None
            if report.report_type == "ensemble":
                consensus[criterion.name] = self._final(c, criterion, cr)
        item["judges"] = judges
        if report.report_type == "ensemble":
            item["consensus"] = consensus
            item["judge_scores"] = dict(report.judge_scores)
            item["score"] = report.score
        elif report.score is not None:
            item["judge_scores"] = {SINGLE_JUDGE: report.score}

    def _cells(
        self, c: int, criterion: Criterion, cr: CriterionResult, kind: str
    ) -> list[tuple[str, Any]]:
        """Each judge's cell for criterion ``c``: a label, the NA placeholder or an error."""
        if kind == "single":
            if cr.error is not None:
                return [(SINGLE_JUDGE, {"error": cr.error})]
            if criterion.options is None:
                return [(SINGLE_JUDGE, cr.verdict)]
            return [(SINGLE_JUDGE, self._choice(c, cr.multi_choice_verdict))]
        if criterion.options is None:
            return [(v.judge_id, {"error": v.error} if v.error else v.verdict) for v in cr.votes]
        return [
            (v.judge_id, {"error": v.error} if v.error else self._choice(c, v))
            for v in cr.multi_choice_votes
        ]

    def _final(self, c: int, criterion: Criterion, cr: CriterionResult) -> Any:
        if cr.error is not None:
            return None
        if criterion.options is None:
            return cr.final_verdict
        return self._choice(c, cr.final_multi_choice_verdict)

    def _choice(self, c: int, vote: ChoiceVote | None) -> str | None:
        """A multi-choice verdict as its option label; an abstention as the NA placeholder."""
        if vote is None:
            return None
        options = self.criteria[c].options or ()
        labels = {o.label.lower(): o.label for o in options}
        if vote.selected_label is not None and vote.selected_label.strip().lower() in labels:
            return labels[vote.selected_label.strip().lower()]
        index = vote.selected_index
        if index is not None and 0 <= index < len(options):
            return options[index].label
        if vote.na or index is None or index == len(options):
            self.needs_na[c] = True
            return _NA
        raise ForeignFileError(
            f"option index {index} is out of range for criterion '{self.criteria[c].name}'",
            file=self.source,
            field="selected_index",
        )

    def document(self, dataset: Path) -> dict[str, Any]:
        """The labels document, NA placeholders replaced by each criterion's NA label."""
        criteria = [self._with_na(n, c) for n, c in enumerate(self.criteria)]
        na_of = {
            c.name: next((o.label for o in c.options or () if o.na), NA_LABEL) for c in criteria
        }
        for item in self.items:
            for block in [item.get("consensus") or {}, *(item.get("judges") or {}).values()]:
                for name, cell in block.items():
                    if cell == _NA:
                        block[name] = na_of[name]
        return {
            "schema_version": "assay.labels.v1",
            "name": dataset.stem,
            "criteria": [written_criterion(c) for c in criteria],
            "judges": list(self.judges),
            "items": self.items,
        }

    def _with_na(self, position: int, criterion: Criterion) -> Criterion:
        """The criterion with autorubric's NA option appended when a judge abstained on it."""
        options = criterion.options
        if options is None or not self.needs_na[position] or any(o.na for o in options):
            return criterion
        added = (*options, Option(label=NA_LABEL, value=0.0, na=True))
        return criterion.model_copy(update={"options": added})
