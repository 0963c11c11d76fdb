"""``assay ingest``, ``monitor``, ``promote`` and ``collect`` from the command line: files in,
sampling, and one-line errors (exit 2) for bad input."""

from __future__ import annotations

import gzip
import json
import os
import signal
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from assay.cli import main
from assay.production.sampling import keep
from assay.production.store import TraceStore

from .otlp_builders import json_request, rag_trace, request


@pytest.fixture(autouse=True)
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("ASSAY_"):
            monkeypatch.delenv(name)
    (tmp_path / ".assay").mkdir()
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    captured = capsys.readouterr()
    return int(info.value.code or 0), captured.out, captured.err


def export_file(path: Path, traces: range) -> None:
    """A collector file export in proto format: length-prefixed requests, 10 traces each."""
    messages = [
        request(
            [s for t in traces[i : i + 10] for s in rag_trace(t, f"q {t}?", f"a {t}.", "c")]
        ).SerializeToString()
        for i in range(0, len(traces), 10)
    ]
    path.write_bytes(b"".join(struct.pack(">I", len(m)) + m for m in messages))


def test_ingest_samples_by_trace_id_hash(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    export_file(project / "spans.pb", range(1, 201))
    code, out, err = run(capsys, "ingest", "spans.pb", "--sample-rate", "0.25")
    assert code == 0, err
    expected = {f"{t:032x}" for t in range(1, 201) if keep(f"{t:032x}", 0.25)}
    assert f"800 spans read, {4 * len(expected)} kept ({len(expected)} traces)" in out
    store = TraceStore(project / ".assay" / "production.sqlite")
    assert {t for t, _ in store.trace_ids()} == expected
    store.close()


def test_ingest_json_lines_gzip_and_a_mapping(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = "\n".join(
        json_request(
            [
                {
                    "trace": t,
                    "span": 1,
                    "name": "n",
                    "start": t,
                    "attributes": {"app.answer": f"x{t}"},
                }
            ]
        )
        for t in (1, 2)
    )
    (project / "spans.jsonl.gz").write_bytes(gzip.compress(lines.encode()))
    (project / "map.yml").write_text("output: app.answer\n")
    code, out, _ = run(capsys, "ingest", "spans.jsonl.gz", "--mapping", "map.yml")
    assert code == 0 and "2 spans read, 2 kept (2 traces)" in out
    store = TraceStore(project / ".assay" / "production.sqlite")
    assert store.record(f"{2:032x}").output == "x2"
    store.close()


@pytest.mark.parametrize(
    ("args", "content", "message"),
    [
        (
            ["ingest", "bad.jsonl"],
            b'{"resourceSpans": [{"scopeSpans": 5}]}\n',
            "bad.jsonl:1: not an OTLP/JSON",
        ),
        (["ingest", "bad.pb"], b"\x0a\x05\x01", "bad.pb: not an OTLP protobuf"),
        (["ingest", "missing.pb"], None, "missing.pb: cannot read file"),
        (["ingest", "ok.pb", "--sample-rate", "2"], b"", "--sample-rate must be between 0 and 1"),
        (["ingest", "ok.pb", "--redact", "(x"], b"", "not valid RE2"),
        (["monitor", "--window", "5", "--min-samples", "9"], None, "--min-samples between 1"),
        (["monitor", "--since", "yesterday"], None, "--since: 'yesterday' is neither"),
        (["promote", "--out", "p.yml", "--trace", "ab" * 16], None, "is not in the trace store"),
        (["collect", "--host", "0.0.0.0"], None, "not loopback"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    project: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    content: bytes | None,
    message: str,
) -> None:
    if content is not None:
        (project / args[1]).write_bytes(content)
    code, _, err = run(capsys, *args)
    assert code == 2
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_monitor_with_nothing_stored_is_too_few(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "monitor", "--format", "json")
    assert code == 0
    result = json.loads(out)
    assert result["scored"] == 0 and {d["status"] for d in result["drift"]} == {"too-few"}


def test_monitor_metrics_file_carries_options(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A threshold from --metrics-file decides pass and fail, as a dataset's would."""
    spans = [
        s
        for t in range(1, 31)
        for s in rag_trace(
            t,
            "Is roaming included in the plan?",
            "Parking is free on Tuesdays.",
            "Roaming is included in every plan.",
        )
    ]
    (project / "spans.pb").write_bytes(request(spans).SerializeToString())
    assert run(capsys, "ingest", "spans.pb")[0] == 0
    (project / "strict.yml").write_text("metrics:\n- name: faithfulness\n  threshold: 0.5\n")
    (project / "lenient.yml").write_text("metrics:\n- name: faithfulness\n  threshold: 0.0\n")
    code, out, err = run(
        capsys, "monitor", "--settle", "0", "--metrics-file", "strict.yml", "--format", "json"
    )
    assert code == 1, err
    [verdict] = json.loads(out)["drift"]
    assert verdict["current_pass_rate"] == 0.0
    code, out, _ = run(
        capsys, "monitor", "--settle", "0", "--metrics-file", "lenient.yml", "--format", "json"
    )
    result = json.loads(out)
    assert code == 0 and result["scored"] == 0  # nothing rescored: the new threshold applies
    assert result["drift"][0]["current_pass_rate"] == 1.0


def test_a_bad_metrics_file_is_exit_2(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "m.yml").write_text("metrics: 3\n")
    code, _, err = run(capsys, "monitor", "--metrics-file", "m.yml")
    assert code == 2 and "needs a 'metrics:' list" in err
    (project / "m.yml").write_text("metrics:\n- name: pii-leak\n  kinds: [nonsense]\n")
    code, _, err = run(capsys, "monitor", "--metrics-file", "m.yml", "--settle", "0")
    assert code == 2 and "unknown kind" in err  # refused before anything is scored


def test_a_session_is_promoted_as_one_conversation(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three turns of session s-1 (the third fails) and a lone failing trace: one conversation
    of three turns and one plain sample; validate accepts both and lists what to fill in."""
    spans = []
    for trace, (question, answer) in enumerate(
        [
            ("Is roaming included in the plan?", "Roaming is included in every plan."),
            ("Which countries does roaming cover?", "Roaming is included in every plan."),
            ("And what about data limits?", "Parking is free on Tuesdays."),
        ],
        start=1,
    ):
        for s in rag_trace(trace, question, answer, "Roaming is included in every plan."):
            if not s.parent_span_id:  # the root span carries the session
                s.attributes[0].value.string_value = "s-1"
            spans.append(s)
    spans += rag_trace(
        9, "Is roaming included?", "Parking is free on Tuesdays.", "Roaming is included."
    )
    (project / "spans.pb").write_bytes(request(spans).SerializeToString())
    assert run(capsys, "ingest", "spans.pb")[0] == 0
    run(capsys, "monitor", "--settle", "0", "-m", "faithfulness", "--min-samples", "1")
    code, out, _ = run(capsys, "promote", "--out", "p.yml")
    assert code == 0 and "2 row(s) added" in out
    rows = yaml.safe_load((project / "p.yml").read_text())["samples"]
    conversation = next(r for r in rows if "turns" in r)
    assert [t["user"] for t in conversation["turns"]] == [
        "Is roaming included in the plan?",
        "Which countries does roaming cover?",
        "And what about data limits?",
    ]
    provenance = conversation["metadata"]["assay"]["production"]
    assert provenance["trace_ids"] == [f"{t:032x}" for t in (1, 2, 3)]
    assert provenance["session"] == "s-1" and provenance["failed_metrics"] == ["faithfulness"]
    code, out, err = run(capsys, "validate", "p.yml")
    assert code == 0 and "ok (4 samples" in out  # three turns and one sample
    assert "4 promoted row(s) still need an expected_output" in err


def test_monitor_follow_scores_new_traces_until_stopped(project: Path) -> None:
    """--follow scores what arrives between passes; SIGTERM ends it with exit 0."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    first = request(rag_trace(1, "q one?", "a one.", "c")).SerializeToString()
    (project / "one.pb").write_bytes(first)
    subprocess.run(
        [sys.executable, "-m", "assay", "ingest", "one.pb"],
        env=env,
        check=True,
        capture_output=True,
    )
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "assay",
            "monitor",
            "--follow",
            "--interval",
            "0.2",
            "--settle",
            "0",
            "-m",
            "faithfulness",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    try:
        assert "scored 1 trace(s)" in process.stdout.readline()
        second = request(rag_trace(2, "q two?", "a two.", "c")).SerializeToString()
        (project / "two.pb").write_bytes(second)
        subprocess.run(
            [sys.executable, "-m", "assay", "ingest", "two.pb"],
            env=env,
            check=True,
            capture_output=True,
        )
        line = process.stdout.readline()
        while "scored 1 trace(s)" not in line:  # passes in between score nothing
            assert line, process.stderr.read()
            line = process.stdout.readline()
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)
        assert process.returncode == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
