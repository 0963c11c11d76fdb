"""The HTTP system under test: JSON paths, headers from the environment, failures without bodies."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from assay.data.dataset import Sample
from assay.engine.http_sut import HttpTarget, lookup, parse_headers, parse_path
from assay.errors import RateLimited, SystemUnderTestError, UsageError
from assay.providers.limiter import Limiter
from assay.providers.urls import public_url
from engine.procs import run_assay
from engine.sut_server import SutServer, write_dataset


def sample(qid: str = "s0001") -> Sample:
    return Sample(id=qid, input={"qid": qid, "question": "q"}, expected_output=f"answer {qid}")


def answer(target: HttpTarget, item: Sample) -> Any:
    async def go() -> Any:
        try:
            return await target.answer(item)
        finally:
            await target.aclose()

    return asyncio.run(go())


# --------------------------------------------------------------------------- pure helpers


def test_paths() -> None:
    assert parse_path("output", flag="f") == ("output",)
    assert parse_path("choices.0.message.content", flag="f") == ("choices", 0, "message", "content")
    assert parse_path("data.items[2].text", flag="f") == ("data", "items", 2, "text")
    assert parse_path("$.a.b", flag="f") == ("a", "b")
    assert parse_path("$", flag="f") == ()
    with pytest.raises(UsageError, match="empty step"):
        parse_path("a..b", flag="--sut-output-path")
    document = {"choices": [{"message": {"content": "hi"}}], "n": None}
    assert lookup(document, ("choices", 0, "message", "content")) == "hi"
    assert lookup(document, ()) is document
    missing = lookup(document, ("choices", 3))
    assert missing is lookup(document, ("nope",))
    assert lookup(document, ("n",)) is None


def test_headers_from_json_or_pairs() -> None:
    assert parse_headers('{"Authorization": "Bearer abc", "X-Team": "qa"}') == {
        "Authorization": "Bearer abc",
        "X-Team": "qa",
    }
    assert parse_headers("Authorization: Bearer a:b; X-Team: qa") == {
        "Authorization": "Bearer a:b",
        "X-Team": "qa",
    }
    assert parse_headers(None) == {} and parse_headers("  ") == {}
    for bad in (
        "Authorization Bearer topsecret",
        '{"Auth": 5}',
        '["x"]',
        '{"bad name": "topsecret"}',
        "{oops",
    ):
        with pytest.raises(UsageError) as info:
            parse_headers(bad)
        assert "topsecret" not in str(info.value)


@pytest.mark.parametrize(
    "value", ["caf\u00e9\u20ac-topsecret", "esc\x1btopsecret", "del\x7ftopsecret"]
)
def test_a_header_value_httpx_cannot_send_is_refused_before_the_run(
    tmp_path: Path, value: str
) -> None:
    """Once every sample failed at send time (UnicodeEncodeError); now one line, exit 2."""
    dataset = tmp_path / "d.json"
    write_dataset(dataset, 2)
    for raw in (f"X-Name: {value}", json.dumps({"X-Name": value})):
        done = run_assay(
            ["run", str(dataset), "--sut-url", "http://127.0.0.1:9/", "--no-store"],
            cwd=tmp_path,
            env={"ASSAY_SUT_HEADERS": raw},
        )
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1, done.stderr
        assert "ASSAY_SUT_HEADERS" in lines[0] and "'X-Name'" in lines[0]
        assert "topsecret" not in done.stderr + done.stdout


@pytest.mark.parametrize("name", ["Content-Length", "transfer-encoding", "CONTENT-length"])
def test_a_framing_header_is_refused_before_the_run(tmp_path: Path, name: str) -> None:
    """Once sent as given next to httpx's own: every sample errored on a corrupt request."""
    dataset = tmp_path / "d.json"
    write_dataset(dataset, 2)
    value = "5" if "length" in name.lower() else "chunked"
    done = run_assay(
        ["run", str(dataset), "--sut-url", "http://127.0.0.1:9/", "--no-store"],
        cwd=tmp_path,
        env={"ASSAY_SUT_HEADERS": f"X-Team: qa; {name}: {value}"},
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "ASSAY_SUT_HEADERS" in lines[0] and f"'{name}'" in lines[0]


def test_a_header_name_with_a_trailing_newline_or_a_nul_value_is_refused() -> None:
    with pytest.raises(UsageError, match="invalid header name"):
        parse_headers('{"X-Name\\n": "v"}')
    with pytest.raises(UsageError, match="printable ASCII"):
        parse_headers('{"X-Name": "nul\\u0000"}')


def test_public_url_drops_credentials_and_query() -> None:
    assert (
        public_url("https://user:pw@api.example.com:8443/v1/answer?key=s3cret#x")
        == "https://api.example.com:8443/v1/answer"
    )
    with pytest.raises(UsageError):
        HttpTarget("ftp://example.com/")


# --------------------------------------------------------------------------- against a server


def test_reads_answer_and_retrieved_ids_from_configured_paths() -> None:
    with SutServer() as server:
        target = HttpTarget(server.url, output_path="output", retrieved_path="retrieved")
        output = answer(target, sample("s0007"))
    assert output.text == "answer s0007"
    assert [r.id for r in output.retrieved] == ["doc-s0007", "doc-other"]


def test_nested_paths_and_shape_errors() -> None:
    with SutServer() as server:
        deep = HttpTarget(server.url, output_path="choices[0].message.content")
        with pytest.raises(SystemUnderTestError, match=r"has no 'choices\.0\.message\.content'"):
            answer(deep, sample())
        listy = HttpTarget(server.url, output_path="retrieved")
        with pytest.raises(SystemUnderTestError, match="is a list, not a string"):
            answer(listy, sample())
        bad_retrieved = HttpTarget(server.url, retrieved_path="output")
        with pytest.raises(SystemUnderTestError, match="'output' must be a list"):
            answer(bad_retrieved, sample())


def test_headers_are_sent_and_never_shown(tmp_path: Path) -> None:
    dataset = tmp_path / "dataset.json"
    write_dataset(dataset, 3)
    with SutServer() as server:
        done = run_assay(
            [
                "run",
                str(dataset),
                "--sut-url",
                server.url + "?token=query-secret",
                "--store",
                str(tmp_path / "s.db"),
                "-f",
                "json",
                "-o",
                str(tmp_path / "r.json"),
            ],
            cwd=tmp_path,
            env={"ASSAY_SUT_HEADERS": "Authorization: Bearer header-secret; X-Team: qa"},
        )
        assert done.returncode == 0, done.stderr
        assert all(h.get("Authorization") == "Bearer header-secret" for h in server.headers_seen)
        assert all(h.get("X-Team") == "qa" for h in server.headers_seen)
    report_text = (tmp_path / "r.json").read_text()
    for secret in ("header-secret", "query-secret"):
        assert secret not in report_text
        assert secret not in done.stderr + done.stdout
    assert json.loads(report_text)["run"]["system_under_test"] == {
        "kind": "http",
        "target": server.url,
    }


def test_non_2xx_is_a_failure_with_the_status_only() -> None:
    with (
        SutServer(fail_first=frozenset({"s0001"})) as server,
        pytest.raises(SystemUnderTestError) as info,
    ):
        answer(HttpTarget(server.url), sample("s0001"))
    assert "HTTP 500" in str(info.value)
    assert "secret-body-text" not in str(info.value)


def test_429_raises_rate_limited_with_retry_after() -> None:
    with SutServer(max_in_flight=0, retry_after="3") as server, pytest.raises(RateLimited) as info:
        answer(HttpTarget(server.url), sample())
    assert info.value.retry_after == 3.0 and info.value.status == 429
    assert "secret-body-text" not in str(info.value)


def test_timeout_is_a_failure() -> None:
    with (
        SutServer(latency_s=1.0) as server,
        pytest.raises(SystemUnderTestError, match=r"timed out after 0\.1s"),
    ):
        answer(HttpTarget(server.url, timeout_s=0.1), sample())


def test_refused_connection_is_a_failure() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(SystemUnderTestError, match="connection failed"):
        answer(HttpTarget(f"http://127.0.0.1:{port}/x", timeout_s=5), sample())


def test_reply_that_is_not_json_is_a_failure() -> None:
    with SutServer() as server:
        target = HttpTarget(server.url)
        server.answer = lambda qid, call: "ok"  # still JSON; swap the body builder below

        original = server.reply

        def broken(
            request: dict[str, Any], headers: dict[str, str]
        ) -> tuple[int, dict[str, str], bytes]:
            original(request, headers)
            return 200, {}, b"<html>secret-body-text</html>"

        server.reply = broken  # type: ignore[method-assign]
        with pytest.raises(SystemUnderTestError, match="not JSON") as info:
            answer(target, sample())
    assert "secret-body-text" not in str(info.value)


def test_from_environment_reads_flags_then_env() -> None:
    env = {
        "ASSAY_SUT_HEADERS": '{"X-Key": "v"}',
        "ASSAY_SUT_OUTPUT_PATH": "data.text",
        "ASSAY_SUT_RETRIEVED_PATH": "data.ids",
        "ASSAY_SUT_TIMEOUT": "2.5",
    }
    target = HttpTarget.from_environment("http://127.0.0.1:9/x", environ=env)
    assert target.output_path == ("data", "text")
    assert target.retrieved_path == ("data", "ids")
    assert target.timeout_s == 2.5
    assert "v" not in repr(target)
    flagged = HttpTarget.from_environment(
        "http://127.0.0.1:9/x", output_path="answer", timeout_s=1, environ=env, limiter=Limiter(3)
    )
    assert (
        flagged.output_path == ("answer",)
        and flagged.timeout_s == 1.0
        and flagged.limiter.max_concurrency == 3
    )
    with pytest.raises(UsageError, match="ASSAY_SUT_TIMEOUT"):
        HttpTarget.from_environment("http://127.0.0.1:9/x", environ={"ASSAY_SUT_TIMEOUT": "soon"})


def test_cli_flags_reach_the_target(tmp_path: Path) -> None:
    dataset = tmp_path / "dataset.json"
    write_dataset(dataset, 4)
    with SutServer(latency_s=0.5) as server:
        done = run_assay(
            [
                "run",
                str(dataset),
                "--sut-url",
                server.url,
                "--sut-timeout",
                "0.1",
                "--no-store",
                "-f",
                "json",
                "-o",
                str(tmp_path / "r.json"),
                "-q",
            ],
            cwd=tmp_path,
        )
    assert done.returncode == 1  # every sample timed out: captured failures fail the gate
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["summary"]["sut_errors"] == 4
    assert all("timed out after 0.1s" in f["message"] for f in report["failures"])
    bad = run_assay(
        ["run", str(dataset), "--sut-url", "http://127.0.0.1:9/", "--rpm", "0", "--no-store"],
        cwd=tmp_path,
    )
    assert bad.returncode == 2 and "--rpm" in bad.stderr


@pytest.mark.parametrize(
    "url",
    [
        "admin:hunter2@rag.internal/answer?token=T0KEN",  # no scheme: once echoed with its secrets
        "http://[::1/answer?token=T0KEN",  # once the catch-all 'unexpected ValueError'
        "http://admin:hunter2@127.0.0.1:99999/answer?token=T0KEN",  # port out of range, the same
    ],
)
@pytest.mark.parametrize("flag", ["--sut-url", "--base-url"])
def test_a_bad_url_is_one_line_naming_the_flag_without_its_secrets(
    tmp_path: Path, url: str, flag: str
) -> None:
    dataset = tmp_path / "d.json"
    write_dataset(dataset, 1)
    args = ["--sut-url", url] if flag == "--sut-url" else ["--sut-url", "http://127.0.0.1:9/"]
    if flag == "--base-url":
        args += ["--base-url", url]
    done = run_assay(["run", str(dataset), *args, "--no-store"], cwd=tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    named = "--sut-url" if flag == "--sut-url" else "'base_url' from the command line"
    assert "unexpected" not in lines[0] and named in lines[0]
    assert "hunter2" not in done.stderr and "T0KEN" not in done.stderr
