"""The multi-system report: one report per system and a paired comparison per pair."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from assay.compare.comparison import compare_reports
from assay.errors import UsageError
from assay.report.comparison_model import Comparison
from assay.report.model import DatasetInfo, Report

SYSTEMS_SCHEMA: Final = "assay.systems.v1"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SystemReport(_Model):
    """One system's name and its complete report (``assay.report.v1``)."""

    name: str
    report: Report


class PairComparison(_Model):
    """``current`` against ``reference``, paired on the samples both answered."""

    reference: str
    current: str
    comparison: Comparison


class SystemsReport(_Model):
    """Every system's report and every pairwise comparison, in the order systems were given."""

    schema_version: Literal["assay.systems.v1"] = SYSTEMS_SCHEMA
    dataset: DatasetInfo
    systems: list[SystemReport] = Field(min_length=2)
    comparisons: list[PairComparison]

    def system(self, name: str) -> Report:
        for item in self.systems:
            if item.name == name:
                return item.report
        raise KeyError(name)


def check_name(name: str, flag: str) -> str:
    """A system name as given in ``--sut NAME=...``: short, no spaces, no '='."""
    if not _NAME.match(name):
        raise UsageError(
            f"{flag}: system name {name!r} must be 1-64 letters, digits, '.', '_' or '-'"
        )
    return name


def build(
    named: Sequence[tuple[str, Report]], *, alpha: float = 0.05, seed: int = 0
) -> SystemsReport:
    """Side-by-side report; each later system is compared with each earlier one."""
    names = [name for name, _ in named]
    if len(set(names)) != len(names):
        raise UsageError(f"system names must be unique; got {', '.join(names)}")
    comparisons = [
        PairComparison(
            reference=ref_name,
            current=cur_name,
            comparison=compare_reports(cur, ref, alpha=alpha, seed=seed),
        )
        for (ref_name, ref), (cur_name, cur) in itertools.combinations(named, 2)
    ]
    return SystemsReport(
        dataset=named[0][1].dataset,
        systems=[SystemReport(name=name, report=report) for name, report in named],
        comparisons=comparisons,
    )
