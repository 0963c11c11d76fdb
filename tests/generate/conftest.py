"""Fixtures of the generate tests: a clean environment and the CLI in this process."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.cli import main
from assay.providers import registry
from openai_server import OpenAIServer, scripted_reply

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "examples" / "generate" / "docs"
CHAT = ROOT / "examples" / "chat"


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith(("ASSAY_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("ASSAY_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ASSAY_PROVIDER_MAX_RETRIES", "0")
    registry.reset()
    yield
    registry.reset()


@pytest.fixture
def scripted(openai_server: OpenAIServer) -> OpenAIServer:
    """The loopback server answering as the scripted generator / user / judge."""
    openai_server.chat_reply = scripted_reply
    return openai_server


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``assay ARGS`` in this process: (exit code, stdout, stderr)."""
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = 0 if exc.code is None else int(exc.code)
    captured = capsys.readouterr()
    return code, captured.out, captured.err
