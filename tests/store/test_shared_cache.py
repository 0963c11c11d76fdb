"""The provider cache beside a PostgreSQL store: a second machine's rerun makes zero calls."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from assay.cli import main
from assay.providers import registry
from openai_server import EMBEDDINGS, OpenAIServer

SAMPLES = [
    {"id": "s0", "input": {"q": "cat"}, "expected_output": "A cat sat on the mat."},
    {"id": "s1", "input": {"q": "capital"}, "expected_output": "Paris is the capital."},
]


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch):
    for name in list(os.environ):
        if name.startswith(("ASSAY_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    registry.reset()
    yield
    registry.reset()


def _machine(folder: Path) -> None:
    """A checkout of the same project on another machine: its own folder, no .assay/."""
    folder.mkdir()
    (folder / ".git").mkdir()  # the project's root: .assay/ would be made here
    doc = {"name": "shared", "metrics": ["cosine-embedding"], "samples": SAMPLES}
    (folder / "d.yml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    outputs = {"s0": "A cat sat on a mat.", "s1": "Paris."}
    (folder / "o.json").write_text(json.dumps({"outputs": outputs}), encoding="utf-8")


def _run(folder: Path, url: str, server: OpenAIServer, capsys: pytest.CaptureFixture[str]) -> dict:
    os.chdir(folder)
    registry.reset()
    args = ["run", "d.yml", "--outputs", "o.json", "--base-url", server.url]
    args += ["--store", url] if url else []  # else assay.toml names the store
    with pytest.raises(SystemExit) as info:
        main([*args, "--format", "json", "--quiet"])
    assert info.value.code in (None, 0)
    return dict(json.loads(capsys.readouterr().out))


@pytest.mark.parametrize("configured", ["flag", "assay.toml"])
def test_a_second_machine_reruns_for_free(
    configured: str,
    pg_url: str,
    openai_server: OpenAIServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    first, second = tmp_path / "laptop", tmp_path / "ci"
    for folder in (first, second):
        _machine(folder)
        if configured == "assay.toml":
            (folder / "assay.toml").write_text(f'store = "{pg_url}"\n', encoding="utf-8")
    store = pg_url if configured == "flag" else ""
    report = _run(first, store, openai_server, capsys)
    calls = openai_server.calls[EMBEDDINGS]
    assert calls >= 1
    again = _run(second, store, openai_server, capsys)
    assert openai_server.calls[EMBEDDINGS] == calls  # zero calls from the second machine
    assert again["usage"]["cached_calls"] == again["usage"]["calls"] > 0
    assert [m["mean"] for m in again["metrics"]] == [m["mean"] for m in report["metrics"]]
    for folder in (first, second):  # nothing cached on either machine's disk
        assert not (folder / ".assay" / "provider-cache.sqlite3").exists()
