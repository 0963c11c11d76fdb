"""Writing a run's reports: rendering, the comparison and gate verdict, the exit code.

:func:`finish_run` takes a finished single-system run from its report to the exit code; the
several-systems path (:mod:`assay.cli.systems`) and ``assay report`` share :func:`render`,
:func:`write_out` and :func:`gate_verdict`.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final, cast

import typer

from assay.cli.console import EXIT_GATE_FAILED, EXIT_OK, fail, printable, warn
from assay.engine.config import RunConfig
from assay.store.runs import RunStore

# The modules of the run's end (gate, comparison, rebuild, renderers) are imported where they
# are used, not here: preload() loads them in a thread once the run is under way, so the
# first request of a judge run does not wait for them. Their types are for mypy only.
if TYPE_CHECKING:
    from asyncio import AbstractEventLoop
    from collections.abc import Sequence

    from assay.adversarial.lane import LaneHooks
    from assay.compare.gate import GateResult
    from assay.compare.gate_rules import GateRules
    from assay.engine.rebuild import RowSource
    from assay.report.comparison_model import Comparison
    from assay.report.model import Report, Row

FORMATS = ("json", "md", "html", "junit", "csv", "padosoft-json")
"""The report formats (``--format``, ``--also FORMAT=PATH``)."""
_RENDERERS = {
    "json": "assay.report.json_stream",
    "md": "assay.report.markdown",
    "html": "assay.report.html",
    "junit": "assay.report.junit",
    "csv": "assay.report.csv_rows",
}
_AFTER_THE_RUN = (
    "assay.adversarial.lane",
    "assay.adversarial.compliance",  # with_compliance imports it for every run
    "assay.compare.gate",
    "assay.engine.rebuild",
    "assay.data.fileio",
)
_STDLIB_AFTER_THE_RUN = ("statistics",)  # NormalDist, for every report's Wilson intervals
_NUMPY = ("numpy",)
"""numpy, for the statistics (the percentiles are read off the sorted scores, so ``numpy.ma``,
which ``np.percentile`` imported through ``np.unique``, is no longer needed by a report)."""
_PAUSE_S: Final = 0.0003
"""How long the preload waits, the GIL free, before each module it imports while the run's
event loop runs (numpy is ~110 modules: ~0.03 s more for the thread)."""


class _Yielding:
    """A meta path finder that finds nothing: it makes the preload thread pause before each
    module it imports while ``loop`` runs.

    Without the pauses the thread holds the GIL for most of its ~0.3 s of imports, and every
    reply that arrives meanwhile waits for the interpreter's switch interval (5 ms) before the
    loop can read it and send the next request; a judge run at 32 requests in flight lost
    ~0.04-0.1 s that way. With them the loop finds the GIL free between modules. Once the loop
    has stopped (the run is over and the main thread may be waiting on these imports), or in
    any other thread, it does nothing.
    """

    def __init__(self, loop: AbstractEventLoop) -> None:
        self._loop = loop
        self._thread = threading.get_ident()

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: object = None
    ) -> None:
        if threading.get_ident() == self._thread and self._loop.is_running():
            time.sleep(_PAUSE_S)


def _running_loop() -> AbstractEventLoop | None:
    """The event loop running in this thread, or None."""
    import asyncio  # ~10 ms, and only a run that preloads needs it

    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def preload(formats: Iterable[str]) -> threading.Thread:
    """Import what the end of a run needs in a daemon thread; return the thread.

    That is numpy for the statistics (~0.1-0.2 s of CPU), the Wilson interval's
    normal quantile, the compliance summary, the gate, the run store's rows and the renderers
    of ``formats``; then the report models' validators are built (``defer_build``: a judge
    run's first request does not wait for them). While the run's event loop runs, the thread
    pauses before each module (:class:`_Yielding`).
    ``assay run`` starts it at the run's first result: a run that waits on judge or system
    replies leaves the interpreter idle most of the time, so this work no longer follows the
    last reply. Nothing changes where they are used: an import under way is waited for
    (Python's import lock), and one that failed here fails there again, with its error. None
    of these modules imports another of them in a cycle, so the two threads cannot wait on
    each other.
    """
    renderers = [_RENDERERS[f] for f in dict.fromkeys(formats) if f in _RENDERERS]
    names = (*_NUMPY, *_STDLIB_AFTER_THE_RUN, *_AFTER_THE_RUN, *renderers)
    loop = _running_loop()

    def load() -> None:
        if loop is None:
            _load(names)
            return
        # A new list each time, never one edited in place: an import in the main thread may be
        # walking the old one, and a removal from it could make that walk skip a finder.
        finder = _Yielding(loop)
        sys.meta_path = [finder, *sys.meta_path]
        try:
            _load(names)
        finally:
            sys.meta_path = [f for f in sys.meta_path if f is not finder]

    thread = threading.Thread(target=load, name="assay-preload", daemon=True)
    thread.start()
    return thread


def _load(names: Iterable[str]) -> None:
    """Import ``names``, then build the deferred report models; failures are left for the
    places that use them (an import that failed here fails there again, with its error)."""
    import importlib

    for name in names:
        try:
            importlib.import_module(name)
        except Exception:
            continue
    try:
        from assay.report.model import build_deferred

        build_deferred()
    except Exception:
        return


def write_out(text: str | Iterable[bytes], out: Path | None) -> None:
    if out is None:
        if isinstance(text, str):
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            sys.stdout.flush()
            for piece in text:
                sys.stdout.buffer.write(piece)
            sys.stdout.buffer.flush()
        return
    from assay.data.fileio import write_atomic

    write_atomic(out, text)


def render(
    report_obj: Report,
    fmt: str,
    comparison: Comparison | None = None,
    rows: RowSource | None = None,
) -> str | Iterable[bytes]:
    """Render a report in one of the supported formats (JSON streamed as UTF-8 chunks).

    ``rows`` streams the rows from the run store when the report does not hold them.
    """
    if fmt == "json":
        from assay.report.json_stream import iter_json

        return iter_json(report_obj, rows(encoded=True) if rows is not None else None)
    if fmt == "padosoft-json":
        from assay.report.padosoft import render_padosoft

        return render_padosoft(report_obj)
    if fmt == "md":
        from assay.report.markdown import render_markdown

        return render_markdown(report_obj)
    if fmt == "html":
        from assay.report.html import render_html

        return render_html(report_obj, comparison)
    if fmt == "junit":
        from assay.report.junit import iter_junit, render_junit

        if rows is None:
            return render_junit(report_obj)
        models = cast("Iterable[Row]", rows())  # not ``encoded``: Row models
        return iter_junit(report_obj, models, repetitions=report_obj.run.repetitions)
    if fmt == "csv":
        from assay.report.csv_rows import iter_csv

        return iter_csv(report_obj, cast("Iterable[Row]", rows()) if rows is not None else None)
    fail(f"--format must be one of {', '.join(FORMATS)}; got {fmt!r}")


def parse_also(items: list[str]) -> list[tuple[str, Path]]:
    parsed = []
    for item in items:
        kind, sep, path = item.partition("=")
        if not sep or kind not in FORMATS or not path:
            fail(
                f"--also must look like FORMAT=PATH with FORMAT in {', '.join(FORMATS)}; got "
                f"{item!r}"
            )
        parsed.append((kind, Path(path)))
    return parsed


def finish_run(
    report_obj: Report,
    rules: GateRules,
    *,
    config: RunConfig,
    store: RunStore | None,
    gate_store: RunStore | None,
    metric_names: list[str],
    extra_reports: list[tuple[str, Path]],
    lane: LaneHooks | None = None,
) -> None:
    """Comparison, gate, rendering and the exit code of a finished run (its budget block
    already in ``report_obj``)."""
    rows: RowSource | None = None
    if store is not None:
        from assay.engine.rebuild import stored_rows

        rows = stored_rows(store, report_obj.run.run_id, metric_names, redact=report_obj.redacted)
    comparison = None
    if config.compare is not None:
        comparison = _compare(
            report_obj,
            config.compare,
            store_path=config.store_path,
            rows=rows,
            allow_judge_change=config.allow_judge_change,
        )
    report_obj, gate_result = _gated(report_obj, rules, comparison, gate_store)
    lane_failures: list[str] = []
    if lane is not None:
        report_obj, lane_failures = lane.gate(report_obj)

    write_out(render(report_obj, config.fmt, comparison, rows), config.out)
    for extra_fmt, extra_path in extra_reports:
        write_out(render(report_obj, extra_fmt, comparison, rows), extra_path)
    _print_summary(
        report_obj, gate_result, quiet=config.quiet, lane=lane, lane_failures=lane_failures
    )
    if report_obj.run.halted or lane_failures:
        raise typer.Exit(EXIT_GATE_FAILED)
    raise typer.Exit(EXIT_OK if gate_result.passed else EXIT_GATE_FAILED)


def _gated(
    report_obj: Report, rules: GateRules, comparison: Comparison | None, gate_store: RunStore | None
) -> tuple[Report, GateResult]:
    """The report with its gate verdict (kept in ``gate_store`` too) and the comparison's
    summary and warnings; and the verdict."""
    gate_result = gate_verdict(report_obj, rules, comparison)
    update: dict[str, object] = {"gate": gate_result.model_dump(mode="json")}
    if gate_store is not None:  # `assay view` shows each run's verdict
        gate_store.record_gate(report_obj.run.run_id, gate_result.model_dump(mode="json"))
        # The run's last write: the store's log is copied into its file while the reports
        # render (they only read), not in the close after them.
        gate_store.checkpoint_behind()
    if comparison is not None:
        update["comparison"] = comparison.summary()
        # What the paired tests cannot see (too few samples, a drop under the MDD) is said on
        # stderr and kept in the report, so a green comparison is never mistaken for evidence.
        said = [*comparison.warnings, *_live_noise(report_obj)]
        update["warnings"] = [*report_obj.warnings, *said]
        for message in said:
            warn(f"compare: {message}")
    return report_obj.model_copy(update=update), gate_result


LIVE_KINDS = ("python", "http")  # systems that answer anew on each run (not saved outputs)


def _live_noise(report_obj: Report) -> list[str]:
    """A live system run once and compared: a flip may be the system's own noise."""
    if report_obj.run.repetitions > 1 or report_obj.run.system_under_test.kind not in LIVE_KINDS:
        return []
    return [
        "one repetition of a live system: a row that flipped may be noise (an unchanged system "
        "re-run can flip rows); run --repetitions 3 or more so each row's state is the majority "
        "of its repetitions (the flip rule then applies only with --max-flips)"
    ]


def _compare(
    report_obj: Report,
    target: str,
    *,
    store_path: str | Path | None,
    rows: RowSource | None,
    allow_judge_change: bool = False,
) -> Comparison | None:
    """The comparison with ``--compare``'s report; each side's rows are walked once, streamed
    from the run store (``rows``) and the reference's file or store, not held."""
    from assay.compare.baseline import resolve_reference
    from assay.compare.comparison import compare_reports

    reference = resolve_reference(target, report_obj, store_path=store_path)
    if reference is None:
        warn(
            f"--compare {target}: no reference report found; comparison skipped (the gate is not "
            "affected)"
        )
        return None
    return compare_reports(
        report_obj,
        reference.report,
        current_rows=None if rows is None else cast("Iterable[bytes]", rows(encoded=True)),
        reference_rows=reference.rows(),
        allow_judge_change=allow_judge_change,
    )


def gate_rules(dataset_gate: Mapping[str, object] | None, cli: Mapping[str, object]) -> GateRules:
    """The run's gate rules: assay.toml [gate] < the dataset's gate: block < flags."""
    from assay.compare.gate_rules import load_rules
    from assay.store.project import find_config

    # The nearest assay.toml, as for `executor` and [ray]: a run from a sub-folder keeps the
    # project's gate.
    return load_rules(cli=cli, dataset_gate=dataset_gate, config_path=find_config())


def gate_verdict(report_obj: Report, rules: GateRules, comparison: Comparison | None) -> GateResult:
    """The gate's verdict on a report under ``rules`` (:func:`gate_rules`)."""
    from assay.compare.gate import check_gate as evaluate_gate

    return evaluate_gate(report_obj, rules, comparison)


def _print_summary(
    report_obj: Report,
    gate_result: GateResult,
    *,
    quiet: bool,
    lane: LaneHooks | None = None,
    lane_failures: Sequence[str] = (),
) -> None:
    """The run's line, the lane's notes and one verdict on stderr (the adversarial lane's
    --fail-on counts in it); --quiet keeps only why a gate failed."""
    from assay.report.numbers import fmt

    # finished() records the lane's run (history) whatever is printed
    passed = gate_result.passed and not lane_failures
    notes = [] if lane is None else lane.finished(report_obj, passed)
    if quiet:
        if not gate_result.passed or lane_failures:
            _print_causes(report_obj)
            _print_gate(gate_result, lane_failures)
        return
    s = report_obj.summary
    # The dataset's name and its tags (in cohort rules) are the dataset's text: a backspace or
    # a line break in them must not rewrite what the terminal shows.
    typer.echo(
        printable(
            f"assay: {report_obj.dataset.name}: {s.total_executions} executions, macro-F1 "
            f"{fmt(s.macro_f1)}, {s.failed_rows or 0} failed, {s.errored_rows or 0} errored, "
            f"run {report_obj.run.run_id}"
        ),
        err=True,
    )
    _print_causes(report_obj)
    for line in notes:
        typer.echo(f"assay: adversarial: {line}", err=True)
    _print_gate(gate_result, lane_failures)


def _print_causes(report_obj: Report) -> None:
    """Each distinct reason rows errored, with its count: a setup error reads as one line."""
    from assay.report.verdict import error_causes

    for line in error_causes(report_obj):
        typer.echo(printable(f"assay: {line}"), err=True)


def _print_gate(gate_result: GateResult, lane_failures: Sequence[str] = ()) -> None:
    """Each broken rule, then one word for the run: FAILED when a rule or --fail-on failed it."""
    for failure in gate_result.failures:
        typer.echo(printable(f"assay: gate: {failure.message}"), err=True)
    for line in lane_failures:
        typer.echo(printable(f"assay: gate: adversarial: {line}"), err=True)
    passed = gate_result.passed and not lane_failures
    typer.echo(f"assay: gate {'passed' if passed else 'FAILED'}", err=True)
