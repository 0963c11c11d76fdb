"""assay: an evaluation harness for LLM and RAG applications.

Only the error classes import eagerly; everything else (datasets and pydantic, metrics, the
engine, report, gate, calibration) loads on first use, so ``import assay`` and
``assay --help`` stay fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from assay.errors import (
    AssayError,
    DatasetError,
    InputError,
    MetricError,
    OutputsError,
    ProviderError,
    SystemUnderTestError,
    UsageError,
)

__version__ = "0.1.0"

_LAZY = {
    "Dataset": "assay.data.dataset",
    "MetricSpec": "assay.data.dataset",
    "Sample": "assay.data.dataset",
    "load_dataset": "assay.data.loading",
    "Metric": "assay.metrics.base",
    "MetricScore": "assay.metrics.base",
    "catalogue": "assay.metrics.registry",
    "resolve": "assay.metrics.registry",
    "resolve_all": "assay.metrics.registry",
    "Output": "assay.data.outputs",
    "Retrieved": "assay.data.outputs",
    "RankedDocs": "assay.data.outputs",
    "load_outputs": "assay.data.loading",
    "evaluate": "assay.api",
    "RunOptions": "assay.engine.evaluation",
    "Report": "assay.report.model",
    "render_markdown": "assay.report.markdown",
    "render_html": "assay.report.html",
    "render_junit": "assay.report.junit",
    "SavedOutputs": "assay.engine.sut",
    "PythonTarget": "assay.engine.sut",
    "HttpTarget": "assay.engine.http_sut",
    "RunStore": "assay.store.runs",
    "report_from_store": "assay.engine.rebuild",
    "GateRules": "assay.compare.gate_rules",
    "load_rules": "assay.compare.gate_rules",
    "evaluate_gate": "assay.compare.gate",
    "compare_reports": "assay.compare.comparison",
    "compute_agreement": "assay.calibration",
}
_RENAMED = {"evaluate_gate": "check_gate"}

if TYPE_CHECKING:
    from assay.api import evaluate
    from assay.calibration import compute_agreement
    from assay.compare.comparison import compare_reports
    from assay.compare.gate import check_gate as evaluate_gate
    from assay.compare.gate_rules import GateRules, load_rules
    from assay.data.dataset import Dataset, MetricSpec, Sample
    from assay.data.loading import load_dataset, load_outputs
    from assay.data.outputs import Output, RankedDocs, Retrieved
    from assay.engine.evaluation import RunOptions
    from assay.engine.http_sut import HttpTarget
    from assay.engine.rebuild import report_from_store
    from assay.engine.sut import PythonTarget, SavedOutputs
    from assay.metrics.base import Metric, MetricScore
    from assay.metrics.registry import catalogue, resolve, resolve_all
    from assay.report.html import render_html
    from assay.report.junit import render_junit
    from assay.report.markdown import render_markdown
    from assay.report.model import Report
    from assay.store.runs import RunStore


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'assay' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), _RENAMED.get(name, name))
    globals()[name] = value
    return value


__all__ = [
    "AssayError",
    "Dataset",
    "DatasetError",
    "GateRules",
    "HttpTarget",
    "InputError",
    "Metric",
    "MetricError",
    "MetricScore",
    "MetricSpec",
    "Output",
    "OutputsError",
    "ProviderError",
    "PythonTarget",
    "RankedDocs",
    "Report",
    "Retrieved",
    "RunOptions",
    "RunStore",
    "Sample",
    "SavedOutputs",
    "SystemUnderTestError",
    "UsageError",
    "__version__",
    "catalogue",
    "compare_reports",
    "compute_agreement",
    "evaluate",
    "evaluate_gate",
    "load_dataset",
    "load_outputs",
    "load_rules",
    "render_html",
    "render_junit",
    "render_markdown",
    "report_from_store",
    "resolve",
    "resolve_all",
]
