"""The run configuration: built once from flags, checked before any file is read, and the
report header names what the metrics themselves use."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from assay.engine.config import RunConfig
from assay.metrics.base import provider_use
from assay.metrics.judge import LLMAsJudge
from assay.metrics.lexical import ExactMatch
from assay.metrics.semantic import CosineEmbedding
from assay.providers.settings import build


def test_unset_repeatable_flags_are_empty_lists() -> None:
    config = RunConfig(dataset=Path("d.yml"))
    assert config.tag == [] and config.metric == [] and config.dataset == Path("d.yml")


def test_run_passes_every_flag_to_its_config_field() -> None:
    """`assay run` passes each flag by name: a field with no parameter, or a parameter its
    RunConfig(...) call leaves out, would stay at its default whatever the user typed."""
    import ast
    import inspect

    from assay.cli import run as run_module

    parameters = set(inspect.signature(run_module.run).parameters) - {"ctx"}
    assert parameters == set(RunConfig.model_fields)
    tree = ast.parse(inspect.getsource(run_module.run))
    call = next(
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "RunConfig"
    )
    assert {keyword.arg for keyword in call.keywords} == parameters


def test_problems_name_each_bad_flag_format_first() -> None:
    config = RunConfig(dataset=Path("d.yml"), fmt="pdf", concurrency=0, retry_errors=True)
    problems = config.problems()
    assert problems[0].startswith("--format must be one of json, md, html, junit")
    assert "--retry-errors needs --resume RUN_ID" in problems
    assert "--concurrency must be at least 1; got 0" in problems
    assert RunConfig(dataset=Path("d.yml")).problems() == []


@pytest.mark.parametrize(
    ("flags", "problem"),
    [
        ({"rpm": 1e-300}, "--rpm must be at least 0.01 calls per minute"),
        ({"rpm": 0.0}, "--rpm must be at least 0.01"),
        ({"rpm": math.nan}, "--rpm must be at least 0.01"),
        ({"text_limit": -5}, "--text-limit must be 0 (no limit) or a positive number; got -5"),
    ],
)
def test_a_rate_that_would_wait_for_ever_or_a_negative_limit_is_refused(
    flags: dict[str, float], problem: str
) -> None:
    """--rpm 1e-300 waited ~10^300 minutes between calls (the run hung); -5 meant nothing."""
    problems = RunConfig.model_validate({"dataset": "d.yml", **flags}).problems()
    assert any(p.startswith(problem) for p in problems), problems
    fine = {"rpm": 0.01} if "rpm" in flags else {"text_limit": 0}
    assert RunConfig.model_validate({"dataset": "d.yml", **fine}).problems() == []


def test_provider_flags_become_settings_above_the_dataset_block() -> None:
    config = RunConfig(dataset=Path("d.yml"), judge_model="flag-judge", no_cache=True)
    settings = build(
        cli=config.provider_flags(),
        dataset={"judge_model": "dataset-judge", "base_url": "http://x/v1"},
    )
    assert settings.judge_model == "flag-judge"
    assert settings.base_url == "http://x/v1"
    assert settings.cache_mode == "off"


def test_header_names_the_model_a_metric_is_configured_with() -> None:
    settings = build(cli={"judge_model": "flag-judge"}, env={})
    own = LLMAsJudge(name="own", model="metric-judge")
    default = LLMAsJudge()
    assert provider_use([own], settings) == {"judge_model": "metric-judge"}
    assert provider_use([own, default], settings) == {"judge_model": "metric-judge, flag-judge"}


def test_header_names_nothing_a_run_does_not_call() -> None:
    settings = build(cli={"judge_model": "flag-judge"}, dataset={"embedding_provider": "hashing"})
    assert provider_use([ExactMatch()], settings) == {}
    assert provider_use([CosineEmbedding()], settings) == {
        "embedding_provider": "hashing (test only, not semantic)"
    }
