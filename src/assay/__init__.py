"""assay: an evaluation harness for LLM and RAG applications."""

from assay.dataset import Dataset, MetricSpec, Sample, load_dataset
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
from assay.metrics.base import Metric, MetricScore, catalogue, resolve, resolve_all
from assay.outputs import Output, Retrieved, load_outputs

__version__ = "0.1.0"

__all__ = [
    "AssayError",
    "Dataset",
    "DatasetError",
    "InputError",
    "Metric",
    "MetricError",
    "MetricScore",
    "MetricSpec",
    "Output",
    "OutputsError",
    "ProviderError",
    "Retrieved",
    "Sample",
    "SystemUnderTestError",
    "UsageError",
    "__version__",
    "catalogue",
    "load_dataset",
    "load_outputs",
    "resolve",
    "resolve_all",
]
