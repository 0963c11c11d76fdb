"""Shared pytest fixtures. Others may append fixtures below; keep each one self-contained."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from openai_server import OpenAIServer


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A real OpenAI-protocol HTTP server on 127.0.0.1, scriptable per test (openai_server.py)."""
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def provider_settings(openai_server: OpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Provider settings pointed at the loopback server, with a fresh cache dir; also what a
    metric built without settings gets (``from_environment``, patched for the test)."""
    from assay.providers import registry, settings

    for variable in (
        "OPENAI_API_KEY",
        "ASSAY_API_KEY",
        "OPENAI_BASE_URL",
        "ASSAY_BASE_URL",
        "ASSAY_JUDGE_MODEL",
        "ASSAY_EMBEDDING_MODEL",
        "ASSAY_EMBEDDING_PROVIDER",
        "ASSAY_CACHE_DIR",
        "ASSAY_CACHE_MODE",
        "ASSAY_NO_CACHE",
    ):
        monkeypatch.delenv(variable, raising=False)
    registry.reset()
    built = settings.ProviderSettings(
        base_url=openai_server.url,
        api_key="sk-test-not-a-real-key",
        judge_model="judge-test",
        embedding_model="embed-test",
        cache_dir=tmp_path / "cache",
        retry_base_s=0.01,
        max_retries=2,
        timeout_s=5.0,
    )
    monkeypatch.setattr(settings, "from_environment", lambda: built)
    yield built
    registry.reset()
