"""``assay run --dry-run`` against the loopback OpenAI server: per metric the calls, the cache
hits and the estimated tokens and cost, and not one request sent (the server counts them).

The estimate is checked against what the real run then sends: the same number of requests,
and the documented token estimate (4 characters a token + 4 a message) of exactly those
requests' messages."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from assay.cli import main
from openai_server import CHAT, EMBEDDINGS, OpenAIServer

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
RUN = [
    "run",
    str(QUICKSTART / "dataset.yml"),
    "--outputs",
    str(QUICKSTART / "outputs.json"),
    "-m",
    "llm-as-judge",
    "-m",
    "exact-match",
    "-m",
    "cosine-embedding",
    "--judge-model",
    "gpt-4o-mini",
    "--no-store",
]


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, openai_server: OpenAIServer) -> None:
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith(("ASSAY_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.url)
    monkeypatch.setenv("ASSAY_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "cache"))


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    captured = capsys.readouterr()
    return int(info.value.code or 0), captured.out, captured.err


def test_dry_run_counts_calls_and_cache_hits_and_sends_nothing(
    capsys: pytest.CaptureFixture[str], openai_server: OpenAIServer
) -> None:
    code, _, err = run(capsys, *RUN, "--limit", "3", "-f", "json")  # a real run fills the cache
    assert code == 0, err
    assert openai_server.calls[CHAT] == 3
    openai_server.requests.clear()
    openai_server.calls.clear()

    code, out, err = run(capsys, *RUN, "--dry-run", "-f", "json")
    assert code == 0, err
    assert openai_server.total_calls() == 0  # not one request
    plan = json.loads(out)
    judge, exact, embed = plan["metrics"]
    executions = plan["executions"]
    assert (judge["metric"], judge["calls"], judge["cached"]) == ("llm-as-judge", executions, 3)
    assert judge["to send"] == executions - 3
    assert (exact["calls"], exact["cost"]) == (0, 0.0)
    assert embed["metric"] == "cosine-embedding" and embed["to send"] >= 1

    code, _, err = run(capsys, *RUN, "-f", "json")  # the real run sends what was predicted
    assert openai_server.calls[CHAT] == judge["to send"]
    assert openai_server.calls[EMBEDDINGS] == embed["to send"]  # batched as in the real run
    bodies = [body for path, body, _ in openai_server.requests if path == CHAT]
    predicted = sum(
        math.ceil(sum(len(m["content"]) for m in body["messages"]) / 4) + 4 * len(body["messages"])
        for body in bodies
    )
    assert judge["prompt tokens"] == predicted
    assert judge["reply tokens"] == 100 * len(bodies)
    price_in, price_out = 0.15, 0.60  # gpt-4o-mini in the packaged table, $ per million
    expected = (predicted * price_in + 100 * len(bodies) * price_out) / 1e6
    assert judge["cost"] == pytest.approx(expected)
    texts = [
        t for path, body, _ in openai_server.requests if path == EMBEDDINGS for t in body["input"]
    ]
    assert embed["prompt tokens"] == sum(math.ceil(len(text) / 4) for text in texts)
    assert embed["cost"] == pytest.approx(embed["prompt tokens"] * 0.02 / 1e6)
    assert plan["total"]["cost"] == pytest.approx(expected + embed["cost"])


def test_dry_run_text_and_no_key_needed(
    capsys: pytest.CaptureFixture[str], openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ASSAY_API_KEY")
    monkeypatch.delenv("OPENAI_BASE_URL")  # nothing to reach and nothing sent
    code, out, err = run(capsys, *RUN, "--dry-run", "--judge-model", "acme-unpriced")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("dry run of quickstart.support-assistant:")
    assert lines[1].split() == [
        "metric", "calls", "cached", "to", "send", "prompt", "tokens", "reply", "tokens", "cost"
    ]  # fmt: skip
    assert lines[2].split()[0] == "llm-as-judge" and lines[2].split()[-1] == "unpriced"
    assert openai_server.total_calls() == 0
