"""``assay tez``: score interrogation sessions, show and validate Tez bundles.

Exit codes as everywhere in assay: 0 ok; 1 the gate failed (``score --gate`` with an alert,
``validate`` finding problems); 2 a usage or input error, including hostile bundles.
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

tez_app = typer.Typer(
    name="tez",
    help="Score TIP interrogation sessions against a Tez bundle; show and validate bundles.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

EXIT_GATE = 1


class Method(str, Enum):
    automated_heuristic = "automated_heuristic"
    llm_as_judge = "llm_as_judge"
    nli_based = "nli_based"
    human_in_loop = "human_in_loop"
    hybrid = "hybrid"


class Extension(str, Enum):
    vendor = "com.ragu.eval-metrics"
    standard = "tezit-eval"


class Format(str, Enum):
    text = "text"
    json = "json"


def register(app: typer.Typer) -> None:
    app.add_typer(tez_app, name="tez")


BundleArg = Annotated[Path, typer.Argument(help="Bundle directory or .tez (zip) file.")]
FormatOpt = Annotated[
    Format, typer.Option("--format", envvar="ASSAY_TEZ_FORMAT", help="Output format.")
]


@tez_app.command("score")
def score(
    bundle: BundleArg,
    session: Annotated[
        Path,
        typer.Option(
            "--session",
            "-s",
            envvar="ASSAY_TEZ_SESSION",
            help="Session file (JSON, YAML or JSONL).",
        ),
    ],
    expectations: Annotated[
        Path | None,
        typer.Option(
            "--expectations",
            "-e",
            envvar="ASSAY_TEZ_EXPECTATIONS",
            help="Expected outcomes in test-queries.json shape.",
        ),
    ] = None,
    method: Annotated[
        Method, typer.Option("--method", envvar="ASSAY_TEZ_METHOD", help="Scoring method.")
    ] = Method.automated_heuristic,
    judge_model: Annotated[
        str | None,
        typer.Option(
            "--judge-model",
            envvar="ASSAY_JUDGE_MODEL",
            help="Judge model (llm_as_judge, hybrid); default ASSAY_JUDGE_MODEL.",
        ),
    ] = None,
    nli_model: Annotated[
        str | None,
        typer.Option(
            "--nli-model",
            envvar="ASSAY_TEZ_NLI_MODEL",
            help="Cross-encoder NLI model name or path (nli_based; needs assay[nli]).",
        ),
    ] = None,
    nli_threshold: Annotated[
        float,
        typer.Option(
            "--nli-threshold",
            envvar="ASSAY_TEZ_NLI_THRESHOLD",
            min=0.0,
            max=1.0,
            help="Entailment probability a passage needs to support a claim (nli_based).",
        ),
    ] = 0.5,
    verdicts: Annotated[
        Path | None,
        typer.Option(
            "--verdicts",
            envvar="ASSAY_TEZ_VERDICTS",
            help="Reviewers' per-claim verdicts, JSON or YAML (human_in_loop).",
        ),
    ] = None,
    write: Annotated[
        bool,
        typer.Option(
            "--write", envvar="ASSAY_TEZ_WRITE", help="Write the records into the bundle."
        ),
    ] = False,
    extension: Annotated[
        Extension,
        typer.Option("--extension", envvar="ASSAY_TEZ_EXTENSION", help="Extension id to write."),
    ] = Extension.vendor,
    replace: Annotated[
        bool,
        typer.Option(
            "--replace", envvar="ASSAY_TEZ_REPLACE", help="Discard records of another session."
        ),
    ] = False,
    tezit_eval_out: Annotated[
        Path | None,
        typer.Option(
            "--tezit-eval-out",
            envvar="ASSAY_TEZ_EVAL_OUT",
            help="Also write a standalone tezit-eval report here.",
        ),
    ] = None,
    previous: Annotated[
        Path | None,
        typer.Option(
            "--previous",
            envvar="ASSAY_TEZ_PREVIOUS",
            help="Earlier evaluation (tezit-eval or score JSON) for drop alerts.",
        ),
    ] = None,
    max_drop: Annotated[
        float,
        typer.Option(
            "--max-drop",
            envvar="ASSAY_TEZ_MAX_DROP",
            min=0.0,
            max=1.0,
            help="Relative drop that raises an alert.",
        ),
    ] = 0.10,
    gate: Annotated[
        bool, typer.Option("--gate", envvar="ASSAY_TEZ_GATE", help="Exit 1 when any alert fires.")
    ] = False,
    tau: Annotated[
        float,
        typer.Option(
            "--tau",
            envvar="ASSAY_TEZ_TAU",
            min=0.0,
            max=1.0,
            help="Word coverage a citation needs (heuristic).",
        ),
    ] = 0.5,
    fmt: FormatOpt = Format.text,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", envvar="ASSAY_TEZ_OUT", help="Write the report here instead of stdout."
        ),
    ] = None,
) -> None:
    """Score every turn of a session; optionally write eval records into the bundle."""
    from assay.tez.addendum import load_previous, previous_metrics
    from assay.tez.bundle import open_bundle
    from assay.tez.evaluate import MethodOptions, build_report, evaluate
    from assay.tez.extension import read_eval_state
    from assay.tez.schemas import ENTERPRISE_SCHEMA, check_document
    from assay.tez.session import load_expectations, load_session
    from assay.tez.writer import apply, plan_tezit, plan_vendor, tezit_report, write_json_atomic

    loaded = open_bundle(bundle)
    turns = load_session(session)
    expected = load_expectations(expectations) if expectations else None
    options = MethodOptions(
        judge_model=judge_model,
        nli_model=nli_model,
        nli_threshold=nli_threshold,
        reviews=verdicts,
    )
    evaluation = evaluate(loaded, turns, expected, method=method.value, tau=tau, options=options)
    before = load_previous(previous) if previous else None
    notes: list[str] = []
    if before is None:
        state = read_eval_state(loaded)
        if state.tezit_report is not None:
            before = previous_metrics(state.tezit_report)
            notes.append("drop alerts compare with the bundle's existing tezit-eval report")
    plan = None
    if write:
        if extension is Extension.vendor:
            plan = plan_vendor(
                loaded, turns.session_id, evaluation.scores, evaluation.evaluator, replace=replace
            )
        else:
            plan = plan_tezit(
                loaded, turns.session_id, evaluation.scores, model=evaluation.evaluator.model
            )
        notes += plan.warnings
    standalone = None
    if tezit_eval_out is not None:
        standalone, vacuous = tezit_report(
            turns.session_id, evaluation.scores, model=evaluation.evaluator.model
        )
        check_document(standalone.to_json(), ENTERPRISE_SCHEMA, target=str(tezit_eval_out))
        if vacuous:
            notes.append(
                "tezit-eval report: undefined metrics written as the vacuous 1.0: "
                + ", ".join(vacuous)
            )
    written: list[str] = []
    if plan is not None:
        written += [
            f"{loaded.source}:{p}" if loaded.kind == "zip" else str(loaded.source / p)
            for p in apply(loaded, plan)
        ]
    if standalone is not None and tezit_eval_out is not None:
        write_json_atomic(tezit_eval_out, standalone.to_json())
        written.append(str(tezit_eval_out))
    report = build_report(
        evaluation, previous=before, drop=max_drop, written=written, extra_warnings=notes
    )
    text = (
        json.dumps(report.model_dump(mode="json"), indent=2) + "\n"
        if fmt is Format.json
        else _score_text(report)
    )
    _emit(text, out)
    if gate and report.alerts:
        raise typer.Exit(EXIT_GATE)


@tez_app.command("show")
def show(bundle: BundleArg, fmt: FormatOpt = Format.text) -> None:
    """Summarise a bundle: manifest, context items, eval extensions, warnings."""
    from assay.tez.bundle import open_bundle
    from assay.tez.extension import read_eval_state

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
        "latest_eval": _latest_summary(state),
        "warnings": [*loaded.warnings, *state.warnings],
    }
    if fmt is Format.json:
        typer.echo(json.dumps(data, indent=2))
        return
    lines = [
        f"bundle {data['bundle_id']} ({data['kind']}, version {data['version']}, tezit "
        f"{data['tezit_version']})",
        f"synthesis: {data['synthesis'] or '(none)'}",
        f"context items: {len(data['items'])}",
    ]
    width = max((len(i["id"]) for i in data["items"]), default=2)
    for item in data["items"]:
        size = "-" if item["bytes"] is None else f"{item['bytes']} B"
        digest = (item["sha256"] or "-")[:12]
        lines.append(
            f"  {item['id'].ljust(width)}  {item['type'] or '?':<10} {size:>10}  sha256 {digest}"
        )
    lines.append(
        "eval extensions: "
        + (", ".join(f"{k} ({'+'.join(v)})" for k, v in data["eval_extensions"].items()) or "none")
    )
    if data["latest_eval"]:
        lines.append("latest eval: " + data["latest_eval"])
    lines += [f"warning: {w}" for w in data["warnings"]]
    typer.echo("\n".join(lines))


@tez_app.command("validate")
def validate(
    bundle: BundleArg,
    strict: Annotated[
        bool,
        typer.Option("--strict", envvar="ASSAY_TEZ_STRICT", help="Treat warnings as problems."),
    ] = False,
    fmt: FormatOpt = Format.text,
) -> None:
    """Check a bundle: manifest, synthesis citations, eval extension documents."""
    from assay.tez.bundle import open_bundle
    from assay.tez.citations import iter_refs
    from assay.tez.extension import read_eval_state
    from assay.tez.records import EVAL_EXTENSION_IDS

    loaded = open_bundle(bundle)
    state = read_eval_state(loaded)
    problems: list[str] = []
    refs = list(iter_refs(loaded, loaded.synthesis_text)) if loaded.synthesis_text else []
    bad = sorted(
        {
            ref.label: res.reason for ref, res in refs if not (res.exists and res.location_resolved)
        }.items()
    )
    problems += [
        f"{loaded.synthesis_file}: citation [[{label}]]: {reason}" for label, reason in bad
    ]
    problems += [
        f"context item '{i.id}': file '{i.file}' is missing"
        for i in loaded.items.values()
        if i.file is not None and i.size is None
    ]
    problems += state.warnings
    if all(ext in loaded.eval_extensions for ext in EVAL_EXTENSION_IDS):
        problems.append("bundle carries both com.ragu.eval-metrics and tezit-eval")
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
        for line in problems:
            typer.echo(f"problem: {line}")
        for line in warnings:
            typer.echo(f"warning: {line}")
        verdict = "FAILED" if failed else "ok"
        typer.echo(
            f"{bundle}: {verdict} ({len(loaded.items)} items, {len(refs)} synthesis citations, "
            f"{len(problems)} problems, {len(warnings)} warnings)"
        )
    if failed:
        raise typer.Exit(EXIT_GATE)


# --------------------------------------------------------------------------- rendering


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


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _latest_summary(state: Any) -> str | None:
    doc = state.tezit_report if state.tezit_report is not None else state.vendor_latest
    if doc is None:
        return None
    if "scores" in doc:
        s = doc["scores"]
        agg = doc.get("aggregate_session_scores") or {}
        return (
            f"com.ragu.eval-metrics session {doc['session_id']} query {doc['query_id']}: "
            f"groundedness {_fmt(s['groundedness'])}, relevance {_fmt(s['relevance'])}, "
            f"faithfulness {_fmt(s['faithfulness'])}"
            + (f"; {agg['total_queries']} queries so far" if agg else "")
        )
    m = doc["metrics"]
    return f"tezit-eval session {doc['session_id']} at {doc['evaluated_at']}: " + ", ".join(
        f"{k} {_fmt(v)}" for k, v in m.items()
    )


def _score_text(report: Any) -> str:
    lines = [
        f"bundle {report.bundle_id} | session {report.session_id} | {report.method} "
        f"({report.evaluator.model} {report.evaluator.model_version})"
    ]
    width = max([len(q.query_id) for q in report.queries] + [5])
    lines.append(f"{'query'.ljust(width)}  ground  relev  faith  claims  cites ok  abstained")
    for q in report.queries:
        s = q.scores
        abst = "yes" if q.abstained else "no"
        if q.abstention_correct is not None:
            abst += " (correct)" if q.abstention_correct else " (wrong)"
        lines.append(
            f"{q.query_id.ljust(width)}  "
            f"{s.groundedness:6.3f} {s.relevance:6.3f} {s.faithfulness:6.3f}"
            f"  {q.n_claims:6d}  {q.n_verified_citations:3d}/{q.n_citations:<4d}  {abst}"
        )
    for q in report.queries:
        for claim in q.claims:
            for c in claim.citations:
                if not (c.exists and c.location_resolved):
                    label = c.item_id if c.location is None else f"{c.item_id}:{c.location}"
                    lines.append(f"  {q.query_id}: citation [[{label}]]: {c.reason}")
    if report.queries:
        agg = report.queries[-1].aggregate_session_scores
        lines.append(
            f"session means over {agg.total_queries} queries: "
            f"groundedness {agg.avg_groundedness:.3f}, "
            f"relevance {agg.avg_relevance:.3f}, faithfulness {agg.avg_faithfulness:.3f}"
        )
    a = report.session
    fields = ("relevance", "faithfulness", "citation_accuracy", "completeness", "abstention_rate")
    shown = ", ".join(f"{m} {_fmt(getattr(a, m))}" for m in fields)
    lines.append(f"addendum: {shown}; false abstentions {report.false_abstentions}")
    if report.usage is not None:
        u = report.usage
        cost = "unpriced" if u.cost_usd is None else f"${u.cost_usd:.4f}"
        lines.append(
            f"judge usage: {u.calls} calls ({u.cached_calls} cached), "
            f"{u.prompt_tokens}+{u.completion_tokens} tokens, {cost}"
        )
    lines += [f"alert: {al.message}" for al in report.alerts]
    lines += [f"warning: {w}" for w in report.warnings]
    lines += [f"wrote: {p}" for p in report.written]
    return "\n".join(lines) + "\n"
