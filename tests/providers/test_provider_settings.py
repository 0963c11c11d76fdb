"""Provider settings: precedence of flags > dataset > environment > defaults, keys, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.errors import MetricConfigError, UsageError
from assay.providers import settings
from assay.providers.pricing import packaged_prices

ENV = {
    "OPENAI_API_KEY": "sk-from-openai-env",
    "OPENAI_BASE_URL": "http://env-openai.example:8000/v1",
    "ASSAY_JUDGE_MODEL": "env-judge",
    "ASSAY_EMBEDDING_MODEL": "env-embed",
    "ASSAY_EMBEDDING_PROVIDER": "hashing",
    "ASSAY_CACHE_DIR": "/tmp/env-cache",
}


def test_defaults_without_environment() -> None:
    built = settings.build(env={})
    assert built.judge_model == "gpt-4o-mini"
    assert built.embedding_provider == "openai"
    assert built.resolved_embedding_model == "text-embedding-3-small"
    assert built.api_key is None
    assert built.cache_dir == Path(".assay")
    assert built.cache_mode == "use"


def test_environment_fills_every_field() -> None:
    built = settings.build(env=ENV)
    assert built.api_key is not None and built.api_key.get_secret_value() == "sk-from-openai-env"
    assert built.base_url == "http://env-openai.example:8000/v1"
    assert built.judge_model == "env-judge"
    assert built.embedding_model == "env-embed"
    assert built.embedding_provider == "hashing"
    assert built.cache_dir == Path("/tmp/env-cache")


def test_assay_variables_win_over_openai_ones() -> None:
    built = settings.build(
        env={**ENV, "ASSAY_API_KEY": "sk-assay", "ASSAY_BASE_URL": "http://assay.example/v1"}
    )
    assert built.api_key is not None and built.api_key.get_secret_value() == "sk-assay"
    assert built.base_url == "http://assay.example/v1"


def test_dataset_beats_environment_and_flags_beat_dataset() -> None:
    dataset = {
        "judge_model": "dataset-judge",
        "embedding_model": "dataset-embed",
        "max_concurrency": 3,
    }
    cli = {"judge_model": "cli-judge", "provider_concurrency": 5, "embedding_provider": None}
    built = settings.build(cli=cli, dataset=dataset, env=ENV)
    assert built.judge_model == "cli-judge"
    assert built.embedding_model == "dataset-embed"
    assert built.max_concurrency == 5
    assert built.embedding_provider == "hashing"  # None flags do not override


def test_cache_flags() -> None:
    assert settings.build(cli={"no_cache": True}, env={}).cache_mode == "off"
    assert settings.build(cli={"refresh_cache": True}, env={}).cache_mode == "refresh"
    assert (
        settings.build(cli={"no_cache": False, "refresh_cache": False}, env={}).cache_mode == "use"
    )
    assert settings.build(cli={"cache_mode": "refresh"}, env={}).cache_mode == "refresh"
    assert settings.build(env={"ASSAY_NO_CACHE": "1"}).cache_mode == "off"
    with pytest.raises(UsageError, match="cannot be used together"):
        settings.build(cli={"no_cache": True, "refresh_cache": True}, env={})


def test_a_dataset_may_not_carry_an_api_key() -> None:
    with pytest.raises(UsageError, match="API keys come from the environment"):
        settings.build(dataset={"api_key": "sk-committed"}, env={})


def test_bad_values_name_the_field_and_its_source() -> None:
    with pytest.raises(
        UsageError, match=r"'embedding_provider' from the dataset 'providers' block"
    ):
        settings.build(dataset={"embedding_provider": "magic"}, env={})
    with pytest.raises(UsageError, match=r"'max_concurrency' from the command line"):
        settings.build(cli={"provider_concurrency": 0}, env={})
    with pytest.raises(UsageError, match=r"'timeout_s' from the environment"):
        settings.build(env={"ASSAY_PROVIDER_TIMEOUT": "soon"})
    with pytest.raises(UsageError, match="unknown setting"):
        settings.build(dataset={"judge_modle": "typo"}, env={})
    with pytest.raises(UsageError, match="http:// or https://"):
        settings.build(cli={"base_url": "ftp://x"}, env={})
    with pytest.raises(UsageError, match="must be a mapping"):
        settings.build(dataset=["not", "a", "mapping"], env={})  # type: ignore[arg-type]


def test_the_key_never_shows_when_settings_are_printed() -> None:
    built = settings.build(env={"OPENAI_API_KEY": "sk-very-secret-123"})
    for text in (repr(built), str(built), built.model_dump_json(), str(built.model_dump())):
        assert "sk-very-secret-123" not in text


def test_prices_extend_the_defaults() -> None:
    dataset = {"prices": {"my-model": {"input_per_million": 1.0, "output_per_million": 2.0}}}
    cli_prices = {"prices": {"gpt-4o": {"input_per_million": 9.0, "output_per_million": 9.0}}}
    built = settings.build(cli=cli_prices, dataset=dataset, env={})
    assert built.prices["my-model"].output_per_million == 2.0
    assert built.prices["gpt-4o"].input_per_million == 9.0
    assert built.prices["gpt-4o-mini"] == packaged_prices()["gpt-4o-mini"]
    with pytest.raises(UsageError, match="prices"):
        settings.build(
            dataset={"prices": {"m": {"input_per_million": -1, "output_per_million": 0}}}, env={}
        )


def test_a_run_hands_its_settings_to_the_metrics_others_read_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No settings are in force anywhere: the run's go to the metrics it resolves; a metric
    built without any reads the environment when it is built."""
    from assay.metrics.judge import LLMAsJudge
    from assay.metrics.registry import resolve

    monkeypatch.setenv("ASSAY_JUDGE_MODEL", "env-judge")
    built = settings.build(
        cli={"judge_model": "cli-judge"}, dataset={"embedding_provider": "hashing"}
    )
    assert built.judge_model == "cli-judge"
    assert built.embedding_label.startswith("hashing (test only")
    resolved = resolve("llm-as-judge", built)
    assert isinstance(resolved, LLMAsJudge) and resolved.settings is built
    assert LLMAsJudge().settings.judge_model == "env-judge"
    assert resolve("exact-match", built).name == "exact-match"  # takes no settings
    with pytest.raises(MetricConfigError, match="'settings' is not an option"):
        resolve({"name": "llm-as-judge", "settings": {"judge_model": "x"}}, built)


def test_embedding_labels() -> None:
    assert settings.build(
        dataset={"embedding_provider": "local"}, env={}
    ).embedding_label.startswith("local (all-MiniLM-L6-v2")
    assert "text-embedding-3-small" in settings.build(env={}).embedding_label


def test_the_shipped_providers_schema_is_current_and_validates_blocks() -> None:

    import jsonschema

    from assay.cli.schema_files import load

    schema = load("providers.v1.json")
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    good = {
        "judge_model": "gpt-4.1-mini",
        "embedding_provider": "local",
        "base_url": "http://vllm:8000/v1",
        "max_concurrency": 4,
        "cache_mode": "refresh",
        "prices": {"m": {"input_per_million": 1, "output_per_million": 2}},
    }
    assert not list(validator.iter_errors(good))
    settings.build(dataset=good, env={})  # the model accepts what the schema accepts
    for bad in (
        {"api_key": "sk-x"},
        {"embedding_provider": "magic"},
        {"max_concurrency": 0},
        {"prices": {"m": {"input_per_million": 1}}},
    ):
        assert list(validator.iter_errors(bad)), bad
