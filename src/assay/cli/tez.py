"""``assay tez``: score interrogation sessions, show and validate Tez bundles.

Exit codes as everywhere in assay: 0 ok; 1 the gate failed (``score --gate`` with an alert,
``validate`` finding problems); 2 a usage or input error, including hostile bundles.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from assay.cli.tez_options import (
    BundleArg,
    ExpectationsOpt,
    Extension,
    ExtensionOpt,
    Format,
    FormatOpt,
    GateOpt,
    JudgeModelOpt,
    MaxDropOpt,
    Method,
    MethodOpt,
    NliModelOpt,
    NliThresholdOpt,
    OutOpt,
    PreviousOpt,
    ReplaceOpt,
    SessionOpt,
    StrictOpt,
    TauOpt,
    TezitEvalOutOpt,
    VerdictsOpt,
    WriteOpt,
)
from assay.compare.tez_sessions import compare_sessions, compare_text
from assay.errors import UsageError

if TYPE_CHECKING:
    from assay.tez.bundle import Bundle
    from assay.tez.citations import CitationRef, Resolution
    from assay.tez.evaluate import Evaluation
    from assay.tez.records import TezitEvalReport
    from assay.tez.writer import WritePlan

tez_app = typer.Typer(
    name="tez",
    help="Score TIP interrogation sessions against a Tez bundle; show and validate bundles.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

EXIT_GATE = 1


def register(app: typer.Typer) -> None:
    app.add_typer(tez_app, name="tez")


@tez_app.command("score")
def score(
    bundle: BundleArg,
    session: SessionOpt,
    expectations: ExpectationsOpt = None,
    method: MethodOpt = Method.automated_heuristic,
    judge_model: JudgeModelOpt = None,
    nli_model: NliModelOpt = None,
    nli_threshold: NliThresholdOpt = 0.5,
    verdicts: VerdictsOpt = None,
    write: WriteOpt = False,
    extension: ExtensionOpt = Extension.vendor,
    replace: ReplaceOpt = False,
    tezit_eval_out: TezitEvalOutOpt = None,
    previous: PreviousOpt = None,
    max_drop: MaxDropOpt = 0.10,
    gate: GateOpt = False,
    tau: TauOpt = 0.5,
    fmt: FormatOpt = Format.text,
    out: OutOpt = None,
) -> None:
    """Score every turn of a session; optionally write eval records into the bundle."""
    from assay.tez.bundle import open_bundle
    from assay.tez.evaluate import MethodOptions, build_report, score_session
    from assay.tez.session import load_expectations, load_session
    from assay.tez.text import score_text

    loaded = open_bundle(bundle)
    turns = load_session(session)
    expected = load_expectations(expectations) if expectations else None
    options = MethodOptions(
        judge_model=judge_model,
        nli_model=nli_model,
        nli_threshold=nli_threshold,
        reviews=verdicts,
    )
    evaluation = score_session(
        loaded, turns, expected, method=method.value, tau=tau, options=options
    )
    notes: list[str] = []
    before = _previous_scores(loaded, previous, notes)
    plan = _write_plan(loaded, evaluation, extension, replace=replace) if write else None
    if plan is not None:
        notes += plan.warnings
    standalone = (
        _standalone(evaluation, tezit_eval_out, notes) if tezit_eval_out is not None else None
    )
    written = _write(loaded, plan, standalone, tezit_eval_out)
    report = build_report(
        evaluation, previous=before, drop=max_drop, written=written, extra_warnings=notes
    )
    text = (
        json.dumps(report.model_dump(mode="json"), indent=2) + "\n"
        if fmt is Format.json
        else score_text(report)
    )
    _emit(text, out)
    if gate and report.alerts:
        raise typer.Exit(EXIT_GATE)


def _previous_scores(
    loaded: Bundle, previous: Path | None, notes: list[str]
) -> dict[str, float] | None:
    """The session metrics drop alerts compare with: ``--previous``, else the bundle's own
    tezit-eval report (noted), else none."""
    from assay.tez.addendum import load_previous, previous_metrics
    from assay.tez.extension import read_eval_state

    if previous:
        return load_previous(previous)
    state = read_eval_state(loaded)
    if state.tezit_report is None:
        return None
    notes.append("drop alerts compare with the bundle's existing tezit-eval report")
    return previous_metrics(state.tezit_report)


def _write_plan(
    loaded: Bundle, evaluation: Evaluation, extension: Extension, *, replace: bool
) -> WritePlan:
    """The validated records ``--write`` puts into the bundle, in the chosen extension."""
    from assay.tez.writer import plan_tezit, plan_vendor

    session_id = evaluation.session.session_id
    if extension is Extension.vendor:
        return plan_vendor(
            loaded, session_id, evaluation.scores, evaluation.evaluator, replace=replace
        )
    return plan_tezit(loaded, session_id, evaluation.scores, model=evaluation.evaluator.model)


def _standalone(evaluation: Evaluation, target: Path, notes: list[str]) -> TezitEvalReport:
    """The ``--tezit-eval-out`` report, checked against the enterprise schema before writing."""
    from assay.tez.documents import tezit_report
    from assay.tez.schemas import ENTERPRISE_SCHEMA, check_document

    standalone, vacuous = tezit_report(
        evaluation.session.session_id, evaluation.scores, model=evaluation.evaluator.model
    )
    check_document(standalone.to_json(), ENTERPRISE_SCHEMA, target=str(target))
    if vacuous:
        notes.append(
            "tezit-eval report: undefined metrics written as the vacuous 1.0: " + ", ".join(vacuous)
        )
    return standalone


def _write(
    loaded: Bundle,
    plan: WritePlan | None,
    standalone: TezitEvalReport | None,
    target: Path | None,
) -> list[str]:
    """Write the planned records and the standalone report; the paths written."""
    from assay.tez.writer import apply, write_json_atomic

    written: list[str] = []
    if plan is not None:
        written += [
            f"{loaded.source}:{p}" if loaded.kind == "zip" else str(loaded.source / p)
            for p in apply(loaded, plan)
        ]
    if standalone is not None and target is not None:
        write_json_atomic(target, standalone.to_json())
        written.append(str(target))
    return written


@tez_app.command("show")
def show(bundle: BundleArg, fmt: FormatOpt = Format.text) -> None:
    """Summarise a bundle: manifest, context items, eval extensions, warnings."""
    from assay.tez.bundle import open_bundle
    from assay.tez.extension import read_eval_state
    from assay.tez.text import bundle_text, latest_summary

    loaded = open_bundle(bundle)
    state = read_eval_state(loaded)
    data: dict[str, Any] = {
        "bundle_id": loaded.bundle_id,
        "kind": loaded.kind,
        "version": loaded.manifest.get("version"),
        "tezit_version": loaded.manifest.get("tezit_version"),
        "synthesis": loaded.synthesis_file,
        "items": [
            {
                "id": i.id,
                "type": i.type,
                "file": i.file,
                "bytes": i.size,
                "sha256": i.sha256,
                "text": i.text is not None,
            }
            for i in loaded.items.values()
        ],
        "eval_extensions": loaded.eval_extensions,
        "preferred_eval_extension": state.preferred,
        "latest_eval": latest_summary(state),
        "warnings": [*loaded.warnings, *state.warnings],
    }
    typer.echo(json.dumps(data, indent=2) if fmt is Format.json else bundle_text(data))


@tez_app.command("validate")
def validate(bundle: BundleArg, strict: StrictOpt = False, fmt: FormatOpt = Format.text) -> None:
    """Check a bundle: manifest, synthesis citations, eval extension documents."""
    from assay.tez.bundle import open_bundle
    from assay.tez.citations import iter_refs
    from assay.tez.text import validation_lines

    loaded = open_bundle(bundle)
    refs = list(iter_refs(loaded, loaded.synthesis_text)) if loaded.synthesis_text else []
    problems = _problems(loaded, refs)
    warnings = [
        w
        for w in loaded.warnings
        if "both com.ragu.eval-metrics" not in w and "is missing from" not in w
    ]
    failed = bool(problems) or (strict and bool(warnings))
    if fmt is Format.json:
        summary = {
            "bundle_id": loaded.bundle_id,
            "ok": not failed,
            "problems": problems,
            "warnings": warnings,
            "citations": len(refs),
            "distinct_citations": len({r.label for r, _ in refs}),
        }
        typer.echo(json.dumps(summary, indent=2))
    else:
        lines = validation_lines(
            bundle,
            problems=problems,
            warnings=warnings,
            items=len(loaded.items),
            citations=len(refs),
            failed=failed,
        )
        typer.echo("\n".join(lines))
    if failed:
        raise typer.Exit(EXIT_GATE)


def _problems(loaded: Bundle, refs: Sequence[tuple[CitationRef, Resolution]]) -> list[str]:
    """What fails validation: unresolved synthesis citations, missing item files, bad eval
    extension documents, and both eval extensions at once."""
    from assay.tez.extension import read_eval_state
    from assay.tez.records import EVAL_EXTENSION_IDS

    state = read_eval_state(loaded)
    bad = sorted(
        {
            ref.label: res.reason for ref, res in refs if not (res.exists and res.location_resolved)
        }.items()
    )
    problems = [f"{loaded.synthesis_file}: citation [[{label}]]: {reason}" for label, reason in bad]
    problems += [
        f"context item '{i.id}': file '{i.file}' is missing"
        for i in loaded.items.values()
        if i.file is not None and i.size is None
    ]
    problems += state.warnings
    if all(ext in loaded.eval_extensions for ext in EVAL_EXTENSION_IDS):
        problems.append("bundle carries both com.ragu.eval-metrics and tezit-eval")
    return problems


# --------------------------------------------------------------------------- output


def _emit(text: str, out: Path | None) -> None:
    if out is None:
        typer.echo(text, nl=False)
    else:
        from assay.tez.writer import write_json_atomic

        if text.lstrip().startswith("{"):
            from assay.tez.schemas import SCORE_REPORT_SCHEMA, check_document

            doc = json.loads(text)
            check_document(doc, SCORE_REPORT_SCHEMA, target=str(out))
            write_json_atomic(out, doc)
        else:
            out.write_text(text, encoding="utf-8")


# --------------------------------------------------------------------------- compare

SessionsOpt = Annotated[
    list[Path],
    typer.Option(
        "--session",
        "-s",
        help="A model's session file; repeat it. The first is the reference.",
    ),
]
CompareFormatOpt = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]


@tez_app.command("compare")
def compare(
    bundle: BundleArg,
    sessions: SessionsOpt,
    method: MethodOpt = Method.automated_heuristic,
    tau: TauOpt = 0.5,
    alpha: Annotated[float, typer.Option(help="Significance level (Holm-adjusted).")] = 0.05,
    resamples: Annotated[int, typer.Option(min=100, help="Bootstrap resamples.")] = 2000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    fmt: CompareFormatOpt = Format.text,
) -> None:
    """Compare models' sessions over the same bundle: paired per-query metric differences."""
    from assay.tez.bundle import open_bundle
    from assay.tez.evaluate import score_session
    from assay.tez.session import load_session

    if not 0.0 < alpha < 1.0:
        raise UsageError(f"--alpha must lie strictly between 0 and 1, got {alpha}")
    loaded = open_bundle(bundle)
    scored = []
    for path in sessions:
        evaluation = score_session(loaded, load_session(path), method=method.value, tau=tau)
        scored.append((evaluation.session.session_id, evaluation))
    report = compare_sessions(scored, alpha=alpha, resamples=resamples, seed=seed)
    if fmt is Format.json:
        typer.echo(json.dumps(report.model_dump(mode="json"), indent=2))
    else:
        typer.echo(compare_text(report), nl=False)
