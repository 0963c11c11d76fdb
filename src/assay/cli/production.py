"""``assay ingest``, ``assay collect``, ``assay monitor`` and ``assay promote``: production
traces in, scored online, drift alerts, failures promoted into a dataset (docs/production.md).

Exit codes as everywhere in assay: 0 ok; 1 ``monitor`` raised a drift alert (one-shot mode);
2 a usage or input error (one line naming the file or flag).
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from assay.cli.console import EXIT_GATE_FAILED, printable
from assay.errors import UsageError

if TYPE_CHECKING:
    from assay.data.dataset import MetricSpec
    from assay.production.intake import Intake, IntakeCounts
    from assay.production.monitor import MonitorOptions, MonitorResult
    from assay.production.store import TraceStore


def register(app: typer.Typer) -> None:
    app.command("ingest")(ingest)
    app.command("collect")(collect)
    app.command("monitor")(monitor)
    app.command("promote")(promote)


TracesOpt = Annotated[
    Path | None,
    typer.Option(
        "--traces",
        envvar="ASSAY_TRACE_STORE",
        help="Trace store file (default: production.sqlite in the project's .assay/).",
    ),
]
RateOpt = Annotated[
    float,
    typer.Option(
        "--sample-rate",
        envvar="ASSAY_SAMPLE_RATE",
        help="Share of traces kept, decided by a hash of the trace id (0..1).",
    ),
]
RetentionOpt = Annotated[
    float,
    typer.Option(
        "--retention-days", envvar="ASSAY_RETENTION_DAYS", help="Drop traces older than this."
    ),
]
MappingOpt = Annotated[
    Path | None,
    typer.Option(
        "--mapping", envvar="ASSAY_TRACE_MAPPING", help="YAML/JSON file naming custom attributes."
    ),
]
CanaryOpt = Annotated[
    list[str] | None,
    typer.Option("--canary", help="A canary to redact wherever it shows (repeatable)."),
]
RedactOpt = Annotated[
    list[str] | None,
    typer.Option("--redact", help="An extra RE2 pattern to redact (repeatable)."),
]
SinceOpt = Annotated[
    str | None,
    typer.Option(
        "--since",
        envvar="ASSAY_SINCE",
        help="Traces started at or after: ISO time, or an age (30m, 6h, 7d).",
    ),
]
UntilOpt = Annotated[
    str | None,
    typer.Option(
        "--until", envvar="ASSAY_UNTIL", help="Traces started before: ISO time or an age."
    ),
]


def _intake(
    rate: float, mapping: Path | None, canaries: list[str] | None, patterns: list[str] | None
) -> Intake:
    from assay.production.intake import Intake
    from assay.production.mapping import read_mapping
    from assay.production.redact import Redactor
    from assay.production.sampling import check_rate

    canary_env = [c for c in os.environ.get("ASSAY_CANARIES", "").split(",") if c.strip()]
    redactor = Redactor(canaries=[*(canaries or []), *canary_env], patterns=patterns or [])
    return Intake(redactor, read_mapping(mapping), check_rate(rate))


def _store(path: Path | None, retention_days: float = 30.0) -> TraceStore:
    from assay.production.store import TraceStore

    if not retention_days > 0:
        raise UsageError(f"--retention-days must be above 0; got {retention_days}")
    return TraceStore(path, retention_s=retention_days * 86400)


def _counts_line(counts: IntakeCounts) -> str:
    redacted = ", ".join(f"{k} {n}" for k, n in sorted(counts.redactions.items())) or "none"
    return (
        f"{counts.spans} spans read, {counts.kept} kept ({len(counts.traces)} traces); "
        f"redacted: {redacted}"
    )


def ingest(
    files: Annotated[list[Path], typer.Argument(help="OTLP trace exports (JSON lines, protobuf).")],
    traces: TracesOpt = None,
    sample_rate: RateOpt = 1.0,
    retention_days: RetentionOpt = 30.0,
    mapping: MappingOpt = None,
    canary: CanaryOpt = None,
    redact: RedactOpt = None,
) -> None:
    """Read OTLP trace export files into the trace store: sampled, redacted, kept for a time."""
    from assay.production.intake import ingest_files

    intake = _intake(sample_rate, mapping, canary, redact)
    store = _store(traces, retention_days)
    try:
        counts = ingest_files(files, intake, store)
    finally:
        store.close()
    typer.echo(f"ingest: {_counts_line(counts)} -> {store.path}")


PortOpt = Annotated[int, typer.Option("--port", envvar="ASSAY_COLLECT_PORT", help="Port.")]
HostOpt = Annotated[
    str, typer.Option("--host", envvar="ASSAY_COLLECT_HOST", help="Address to bind.")
]
TokenOpt = Annotated[
    str | None,
    typer.Option("--token", envvar="ASSAY_VIEW_TOKEN", help="Bearer token clients must send."),
]
DurationOpt = Annotated[
    float | None,
    typer.Option(
        "--duration", envvar="ASSAY_COLLECT_DURATION", help="Stop after this many seconds."
    ),
]
QueueOpt = Annotated[
    int,
    typer.Option(
        "--queue-size", envvar="ASSAY_COLLECT_QUEUE", help="Decoded requests waiting to be written."
    ),
]


def collect(
    port: PortOpt = 4318,
    host: HostOpt = "127.0.0.1",
    token: TokenOpt = None,
    duration: DurationOpt = None,
    queue_size: QueueOpt = 64,
    traces: TracesOpt = None,
    sample_rate: RateOpt = 1.0,
    retention_days: RetentionOpt = 30.0,
    mapping: MappingOpt = None,
    canary: CanaryOpt = None,
    redact: RedactOpt = None,
) -> None:
    """Receive OTLP/HTTP traces (POST /v1/traces) from an application's exporter."""
    from assay.production.collector import Collector, CollectorLimits

    if queue_size < 1 or not 0 < port < 65536:
        raise UsageError("--queue-size must be 1 or more and --port in 1..65535")
    intake = _intake(sample_rate, mapping, canary, redact)
    _store(traces, retention_days).close()  # a store that cannot open fails before listening
    collector = Collector(
        intake,
        lambda: _store(traces, retention_days),
        host=host,
        port=port,
        token=token,
        limits=CollectorLimits(queue_size=queue_size),
    )
    collector.start()
    typer.echo(f"collect: listening on http://{host}:{collector.port}/v1/traces", err=True)
    previous = signal.signal(signal.SIGTERM, _interrupt)  # a service manager's stop: as Ctrl-C
    try:
        time.sleep(duration) if duration is not None else threading_wait()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        collector.stop()
    for error in collector.errors[:5]:
        typer.echo(f"collect: {printable(error)}", err=True)
    typer.echo(f"collect: {_counts_line(collector.counts)}")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def threading_wait() -> None:
    """Wait for Ctrl-C."""
    while True:
        time.sleep(3600)


_AGE = re.compile(r"^(\d+(?:\.\d+)?)([smhd])$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_when(text: str | None, flag: str, now: float) -> int | None:
    """Unix nanoseconds from an ISO time or an age such as ``6h``; None when not given."""
    if text is None:
        return None
    age = _AGE.match(text.strip())
    if age:
        return int((now - float(age.group(1)) * _UNIT[age.group(2)]) * 1e9)
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(f"{flag}: {text!r} is neither an ISO time nor an age like 6h") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1e9)


MetricOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--metric",
        "-m",
        envvar="ASSAY_MONITOR_METRIC",
        help="A metric to score (repeatable; default faithfulness "
        "and answer-relevancy, both offline).",
    ),
]


def _render(result: MonitorResult) -> str:
    lines = [
        f"monitor: scored {result.scored} trace(s)"
        + (f" as run {result.run_id}" if result.run_id else "")
        + f"; {result.incomplete} without an answer yet"
    ]
    if result.answers_redacted:
        found = ", ".join(f"{k} {n}" for k, n in result.answers_redacted.items())
        lines.append(f"answers redacted at intake: {found}")
    for d in result.drift:
        rate = "n/a" if d.current_pass_rate is None else f"{d.current_pass_rate:.3f}"
        stable = "none" if d.stable_pass_rate is None else f"{d.stable_pass_rate:.3f}"
        lines.append(
            f"{d.metric}: {d.status.upper()} pass rate {rate} over {d.current_scored} scored "
            f"({d.errored} errored); last stable window {stable} over {d.stable_scored}"
        )
        lines += [f"  {reason}" for reason in d.reasons]
        if d.status == "alert" and d.rows:
            shown = ", ".join(f"{r.trace_id} ({r.score:.2f})" for r in d.rows[:5])
            more = f" and {len(d.rows) - 5} more in --format json" if len(d.rows) > 5 else ""
            lines.append(f"  failed rows, lowest first: {shown}{more}")
        if d.trend:
            lines.append("  trend: " + " ".join(f"{t:.2f}" for t in d.trend))
    return "\n".join(lines)


def _monitor_option(flag: str, help: str) -> Any:
    """A monitor option whose environment variable is ASSAY_MONITOR_<FLAG>."""
    env = "ASSAY_MONITOR_" + flag.removeprefix("--").replace("-", "_").upper()
    return typer.Option(flag, envvar=env, help=help)


MetricsFileOpt = Annotated[
    Path | None,
    _monitor_option(
        "--metrics-file",
        "YAML/JSON with 'metrics:' (names or specs with options, as in a dataset) "
        "and an optional 'rubric:'.",
    ),
]
WindowOpt = Annotated[int, _monitor_option("--window", "Scores per drift window.")]
MinSamplesOpt = Annotated[
    int, _monitor_option("--min-samples", "Scores a window needs to be judged.")
]
ThresholdOpt = Annotated[
    float, _monitor_option("--threshold", "Alert when a window's pass rate is below this.")
]
MaxDropOpt = Annotated[
    float, _monitor_option("--max-drop", "Alert when the pass rate falls more than this.")
]
SettleOpt = Annotated[
    float, _monitor_option("--settle", "Score a trace only after it has been quiet (s).")
]
FollowOpt = Annotated[bool, _monitor_option("--follow", "Keep scoring as traces arrive.")]
IntervalOpt = Annotated[float, _monitor_option("--interval", "Seconds between passes.")]
FormatOpt = Annotated[
    str, _monitor_option("--format", "text or json (the assay.monitor.v1 document).")
]
RunStoreOpt = Annotated[
    Path | None, typer.Option("--store", envvar="ASSAY_STORE", help="Run store file.")
]


def monitor(
    metric: MetricOpt = None,
    metrics_file: MetricsFileOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    window: WindowOpt = 50,
    min_samples: MinSamplesOpt = 20,
    threshold: ThresholdOpt = 0.8,
    max_drop: MaxDropOpt = 0.1,
    settle: SettleOpt = 5.0,
    follow: FollowOpt = False,
    interval: IntervalOpt = 10.0,
    output_format: FormatOpt = "text",
    traces: TracesOpt = None,
    store: RunStoreOpt = None,
) -> None:
    """Score sampled production traces as assay runs and raise drift alerts per metric."""
    from assay.production.drift import DriftRule
    from assay.production.monitor import DEFAULT_METRICS, MonitorOptions

    if output_format not in ("text", "json") or not interval > 0 or not settle >= 0:
        raise UsageError("--format must be text or json, --interval above 0, --settle 0 or more")
    now = time.time()
    specs, rubric = read_metrics_file(metrics_file) if metrics_file else ([], None)
    chosen: list[str | MetricSpec] = [*specs, *(metric or [])] or list(DEFAULT_METRICS)
    options = MonitorOptions(
        metrics=chosen,
        rubric=rubric,
        since_ns=parse_when(since, "--since", now) or 0,
        until_ns=parse_when(until, "--until", now),
        settle_s=settle,
        rule=DriftRule(window, min_samples, threshold, max_drop),
    )
    alert = _monitor_passes(options, traces, store, output_format, follow, interval)
    if alert and not follow:
        raise typer.Exit(EXIT_GATE_FAILED)


def read_metrics_file(path: Path) -> tuple[list[str | MetricSpec], Any]:
    """The metric specs (and rubric) of a ``--metrics-file``, checked as a dataset's are."""
    from pydantic import TypeAdapter, ValidationError

    from assay.data.dataset import MetricSpec
    from assay.data.documents import parse_document, read_text
    from assay.errors import DatasetError

    document = parse_document(read_text(path, DatasetError), path, DatasetError)
    if not isinstance(document, dict) or not isinstance(document.get("metrics"), list):
        raise UsageError(f"{path}: needs a 'metrics:' list")
    try:
        specs = TypeAdapter(list[str | MetricSpec]).validate_python(document["metrics"])
    except ValidationError as exc:
        place = ".".join(str(p) for p in exc.errors()[0]["loc"][:1])
        raise UsageError(f"{path}: field 'metrics[{place}]': {exc.errors()[0]['msg']}") from None
    names = [s if isinstance(s, str) else s.name for s in specs]
    if len(set(names)) != len(names):
        raise UsageError(f"{path}: a metric is named twice in 'metrics'")
    return specs, document.get("rubric")


def _monitor_passes(
    options: MonitorOptions,
    traces: Path | None,
    store: Path | None,
    output_format: str,
    follow: bool,
    interval: float,
) -> bool:
    """One pass, or passes every ``interval`` seconds until Ctrl-C; whether any alerted."""
    from assay.production.monitor import monitor_once
    from assay.store.runs import RunStore

    trace_store, run_store = _store(traces), RunStore(store)
    alerted = False
    previous = signal.signal(signal.SIGTERM, _interrupt)  # a service manager's stop: as Ctrl-C
    try:
        while True:
            result, _ = monitor_once(trace_store, run_store, options)
            alerted = alerted or bool(result.alerting)
            text = result.model_dump_json(indent=2) if output_format == "json" else _render(result)
            typer.echo(text)
            sys.stdout.flush()  # a pass's verdicts are seen as it ends, not at exit
            if not follow:
                return alerted
            time.sleep(interval)
    except KeyboardInterrupt:
        return alerted
    finally:
        signal.signal(signal.SIGTERM, previous)
        trace_store.close()
        run_store.close()


def promote(
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", envvar="ASSAY_PROMOTE_OUT", help="Dataset file to write or extend."
        ),
    ],
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric",
            "-m",
            envvar="ASSAY_PROMOTE_METRIC",
            help="Promote traces failing this metric (default all).",
        ),
    ] = None,
    trace: Annotated[
        list[str] | None,
        typer.Option(
            "--trace",
            envvar="ASSAY_PROMOTE_TRACE",
            help="A trace id a person flagged (repeatable).",
        ),
    ] = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    name: Annotated[
        str, typer.Option("--name", envvar="ASSAY_PROMOTE_NAME", help="Dataset name.")
    ] = "production.failures",
    traces: TracesOpt = None,
) -> None:
    """Write failing or flagged production traces into a dataset, expected outputs left blank."""
    from assay.production.promote import PromoteOptions
    from assay.production.promote import promote as promote_rows

    now = time.time()
    options = PromoteOptions(
        metrics=metric or (),
        trace_ids=trace or (),
        since_ns=parse_when(since, "--since", now) or 0,
        until_ns=parse_when(until, "--until", now),
        name=name,
    )
    store = _store(traces)
    try:
        added, total = promote_rows(store, out, options)
    finally:
        store.close()
    typer.echo(f"promote: {added} row(s) added, {total} in {out}")
