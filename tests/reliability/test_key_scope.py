"""Issue 33, defect 3: the environment's API key goes only where the user sent it.

On a7b0681 a dataset's ``providers.base_url`` won over ``OPENAI_BASE_URL`` and the environment's
key went with it: a pull request editing a YAML file could collect CI's key.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from assay.cli import main
from assay.errors import UsageError
from assay.providers import registry
from assay.providers.settings import build
from openai_server import OpenAIServer

KEY = "sk-ci-secret-0123456789"


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith(("ASSAY_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    registry.reset()
    yield
    registry.reset()


def _dataset(path: Path, providers: dict[str, str]) -> None:
    document = {
        "schema_version": "assay.dataset.v1",
        "name": "keys",
        "metrics": ["llm-as-judge"],
        "providers": providers,
        "samples": [{"id": "q0", "input": {"question": "Q?"}, "expected_output": "A"}],
    }
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    (path.parent / "o.json").write_text(json.dumps({"outputs": {"q0": "A"}}), encoding="utf-8")


def _run(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    args = ["run", "d.yml", "--outputs", "o.json", "--no-store", "--quiet", *extra]
    with pytest.raises(SystemExit) as info:
        main([*args, "--cache-dir", "cache", "--format", "json"])
    captured = capsys.readouterr()
    return int(info.value.code or 0), captured.err


def test_a_dataset_endpoint_with_the_environment_key_exits_2_before_any_call(
    openai_server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _dataset(tmp_path / "d.yml", {"base_url": openai_server.url})
    code, err = _run(capsys)
    assert code == 2 and openai_server.total_calls() == 0
    assert "127.0.0.1" in err and "--allow-dataset-endpoints" in err and KEY not in err


def test_the_flag_or_a_named_key_variable_lets_the_dataset_endpoint_be_called(
    openai_server: OpenAIServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _dataset(tmp_path / "d.yml", {"base_url": openai_server.url})
    code, _ = _run(capsys, "--allow-dataset-endpoints")
    assert code == 0 and openai_server.total_calls() == 1
    registry.reset()
    monkeypatch.setenv("ASSAY_API_KEY_LOCAL", "sk-for-the-local-server")
    _dataset(
        tmp_path / "d.yml", {"base_url": openai_server.url, "api_key_env": "ASSAY_API_KEY_LOCAL"}
    )
    code, _ = _run(capsys, "--no-cache")
    assert code == 0 and openai_server.total_calls() == 2
    assert openai_server.requests[-1][2]["authorization"] == "Bearer sk-for-the-local-server"


def test_the_same_endpoint_as_the_environment_or_the_command_line_is_fine() -> None:
    env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": "http://vllm:8000/v1"}
    same = build(dataset={"base_url": "http://VLLM:8000/v1/"}, env=env)
    assert same.api_key is not None and same.api_key.get_secret_value() == KEY
    flagged = build(cli={"base_url": "http://a:1/v1"}, dataset={"base_url": "http://b/v1"}, env=env)
    assert flagged.base_url == "http://a:1/v1"  # the flag decides; the dataset's URL is unused
    assert build(dataset={"base_url": "http://b/v1"}, env={}).api_key is None  # no key, no risk


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "GITHUB_TOKEN", "ASSAY_API_KEY_", 3])
def test_a_dataset_cannot_pick_another_secret_of_the_environment(name: object) -> None:
    env = {"OPENAI_API_KEY": KEY, "GITHUB_TOKEN": "ghp_x"}
    with pytest.raises(UsageError, match="api_key_env"):
        build(dataset={"base_url": "http://evil.example/v1", "api_key_env": name}, env=env)


def test_a_named_key_variable_that_is_not_set_is_refused() -> None:
    with pytest.raises(UsageError, match="ASSAY_API_KEY_X, which is not set"):
        build(dataset={"api_key_env": "ASSAY_API_KEY_X"}, env={"OPENAI_API_KEY": KEY})
