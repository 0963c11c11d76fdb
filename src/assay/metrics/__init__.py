"""Metric families; see :mod:`assay.metrics.base` for the contract and registry."""

from assay.metrics.base import Metric, MetricScore, catalogue, register, resolve, resolve_all

__all__ = ["Metric", "MetricScore", "catalogue", "register", "resolve", "resolve_all"]
