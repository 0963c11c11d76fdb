"""``assay ingest`` of 100,000 spans: spans per second and peak RSS, against decoding alone.

Generates an OTLP export file (the collector's file exporter, proto format: length-prefixed
``ExportTraceServiceRequest`` messages of 512 spans) of RAG traces (a root, a retrieval span, a
chat span with GenAI messages and usage, a tool span; one trace in twenty carries an e-mail
address and an API key), then times in fresh child processes, interleaved by round:

- ``ingest``: ``assay ingest FILE`` (decode, map, sample, redact, store in SQLite);
- ``decode``: the reference, the same file decoded with opentelemetry-proto and every span's
  attributes read into Python values (what any OTLP consumer in Python has to do).

For each it prints the best round's wall and CPU time, spans per second (on CPU time, steadier
on a shared machine) and the child's peak RSS, then the ratio ingest / decode: the cost of
everything assay adds per span, independent of the machine's speed.

    python benchmarks/bench_ingest.py [--spans 100000] [--rounds 3] [--sample-rate 1.0]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import compile_package

ROOT = Path(__file__).resolve().parents[1]
DECODE = """
import struct, sys
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from assay.production.otlp import spans_of
data = open(sys.argv[1], "rb").read()
offset = count = 0
while offset < len(data):
    (size,) = struct.unpack_from(">I", data, offset)
    request = ExportTraceServiceRequest()
    request.ParseFromString(data[offset + 4 : offset + 4 + size])
    count += len(spans_of(request))
    offset += 4 + size
print(count)
"""


def _trace_spans(rng: random.Random, trace: int) -> list[object]:
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

    def attrs(values: dict[str, object]) -> list[KeyValue]:
        return [
            KeyValue(
                key=k,
                value=AnyValue(int_value=v) if isinstance(v, int) else AnyValue(string_value=v),
            )
            for k, v in values.items()
        ]

    doc = f"Plan {trace % 97} includes {rng.randrange(1, 50)} gigabytes of data each month."
    leak = " Reach me at jo.bloggs@example.com, key sk-live-a8f7d6s5a4s3d2f1g0h9j8k7" * (
        trace % 20 == 0
    )
    question = f"How much data does plan {trace % 97} include?{leak}"
    messages = json.dumps([{"role": "user", "parts": [{"type": "text", "content": question}]}])
    answer = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": doc}]}])
    shapes = [
        ("request", {"session.id": f"s{trace % 500}"}),
        (
            "retrieve",
            {
                "openinference.span.kind": "RETRIEVER",
                "retrieval.documents.0.document.id": f"doc-{trace % 97}",
                "retrieval.documents.0.document.content": doc,
            },
        ),
        (
            "chat",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "m-1",
                "gen_ai.input.messages": messages,
                "gen_ai.output.messages": answer,
                "gen_ai.usage.input_tokens": 50,
                "gen_ai.usage.output_tokens": 20,
            },
        ),
        (
            "execute_tool",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "lookup",
                "gen_ai.tool.call.arguments": json.dumps({"plan": trace % 97}),
            },
        ),
    ]
    base = 1_700_000_000_000_000_000 + trace * 1_000_000
    return [
        Span(
            trace_id=trace.to_bytes(16, "big"),
            span_id=(trace * 4 + n + 1).to_bytes(8, "big"),
            parent_span_id=b"" if n == 0 else (trace * 4 + 1).to_bytes(8, "big"),
            name=name,
            start_time_unix_nano=base + n,
            end_time_unix_nano=base + n + 500,
            attributes=attrs(values),
        )
        for n, (name, values) in enumerate(shapes)
    ]


def generate(path: Path, spans: int, seed: int = 7) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    rng = random.Random(seed)
    all_spans = [s for t in range(1, spans // 4 + 1) for s in _trace_spans(rng, t)]
    with path.open("wb") as handle:
        for start in range(0, len(all_spans), 512):
            request = ExportTraceServiceRequest()
            scope = request.resource_spans.add().scope_spans.add()
            scope.spans.extend(all_spans[start : start + 512])  # type: ignore[arg-type]
            body = request.SerializeToString()
            handle.write(struct.pack(">I", len(body)) + body)


def run_child(args: list[str], cwd: Path) -> tuple[float, float, float, str]:
    """Wall s, CPU s and peak RSS (MB) of one child process; its stdout."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "ASSAY_HOME": str(cwd / ".assay")}
    started = time.perf_counter()
    process = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    out = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"child failed: {' '.join(args)}")
    cpu = usage.ru_utime + usage.ru_stime
    peak_mb = usage.ru_maxrss / 1024  # kilobytes on Linux
    return wall, cpu, peak_mb, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sample-rate", type=float, default=1.0)
    parser.add_argument("--generate", type=Path, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.generate is not None:  # in a child: the spans never sit in the timing parent,
        generate(options.generate, options.spans)  # whose pages a forked child's RSS counts
        return
    print(compile_package())
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        export = work / "spans.pb"
        subprocess.run(
            [sys.executable, __file__, "--generate", str(export), "--spans", str(options.spans)],
            check=True,
        )
        print(f"{options.spans} spans, {export.stat().st_size / 1e6:.1f} MB export file")
        best: dict[str, tuple[float, float, float]] = {}
        for _ in range(options.rounds):
            for name, args in _candidates(export, options.sample_rate).items():
                store = work / ".assay" / "production.sqlite"
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{store}{suffix}").unlink(missing_ok=True)
                wall, cpu, peak, _ = run_child(args, work)
                if name not in best or cpu < best[name][1]:
                    best[name] = (wall, cpu, peak)
        _report(best, options.spans)


def _candidates(export: Path, rate: float) -> dict[str, list[str]]:
    return {
        "ingest": [
            sys.executable,
            "-m",
            "assay",
            "ingest",
            str(export),
            "--sample-rate",
            str(rate),
        ],
        "decode": [sys.executable, "-c", DECODE, str(export)],
    }


def _report(best: dict[str, tuple[float, float, float]], spans: int) -> None:
    for name, (wall, cpu, peak) in best.items():
        print(
            f"{name:7s} wall {wall:6.2f} s  cpu {cpu:6.2f} s  {spans / cpu:9.0f} spans/s (cpu)  "
            f"peak RSS {peak:6.1f} MB"
        )
    print(f"ingest / decode CPU: {best['ingest'][1] / best['decode'][1]:.2f}x")


if __name__ == "__main__":
    main()
