"""What decides a judge metric's verdicts: its model, prompt template and options.

Two runs whose judge identities differ were scored by different judges; ``--compare`` says so
and keeps the judge's change out of the system's flips and regressions.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from assay.judging.client import template_version
from assay.judging.prompts import RUBRIC, RUBRIC_CRITERION
from assay.metrics.base import Metric
from assay.metrics.rubric import RubricJudge
from assay.providers.settings import ProviderSettings
from assay.report.judge_model import JudgeIdentity

__all__ = ["identity", "is_judge", "judge_model_of"]

# settings: the provider settings a judge metric calls with; the model is hashed on its own.
_NOT_OPTIONS = frozenset({"name", "model", "prompt_template", "settings"})


def is_judge(metric: Metric, settings: ProviderSettings) -> bool:
    """Whether ``metric`` calls an LLM judge (it says so through its ``used`` method)."""
    used = getattr(metric, "used", None)
    return used is not None and used(settings).get("method") == "llm-judge"


def judge_model_of(metric: Metric, settings: ProviderSettings) -> str:
    """The judge model(s) the metric calls: its own option, else the settings' default."""
    return str(metric.used(settings)["model"])  # type: ignore[attr-defined]


def _prompt_tag(metric: Metric) -> str:
    """The prompt template's version tag: the metric's own template, the rubric's, or its class."""
    template = getattr(metric, "template", None)
    if isinstance(template, str):
        return template_version(metric.name, template)
    if isinstance(metric, RubricJudge):
        per = bool(metric.per_criterion)
        return template_version(
            f"{metric.name}-criterion" if per else metric.name, RUBRIC_CRITERION if per else RUBRIC
        )
    cls = type(metric)
    return f"{cls.__module__}.{cls.__qualname__}"


def _options_hash(metric: Metric) -> str:
    """A hash of the metric's other public options (a rubric, an aggregation, reask...)."""
    options: dict[str, Any] = {}
    if dataclasses.is_dataclass(metric):
        for item in dataclasses.fields(metric):
            if item.init and not item.name.startswith("_") and item.name not in _NOT_OPTIONS:
                options[item.name] = getattr(metric, item.name)
    text = json.dumps(options, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def identity(metric: Metric, settings: ProviderSettings) -> JudgeIdentity:
    """The judge identity of a judge metric under the run's provider settings."""
    model = judge_model_of(metric, settings)
    prompt = _prompt_tag(metric)
    options = _options_hash(metric)
    key = hashlib.sha256(f"{model}\n{prompt}\n{options}".encode()).hexdigest()[:16]
    return JudgeIdentity(model=model, prompt=prompt, options=options, key=key)
