"""Metric families; :mod:`assay.metrics.base` holds the contract, :mod:`assay.metrics.registry`
resolves names, :mod:`assay.metrics.catalogue` lists the built-ins."""

from assay.metrics.base import Metric, MetricScore
from assay.metrics.registry import catalogue, resolve, resolve_all

__all__ = ["Metric", "MetricScore", "catalogue", "resolve", "resolve_all"]
