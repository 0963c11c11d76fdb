"""The public API: every exported name resolves, and ``import assay`` stays light."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import assay

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "quickstart"


def test_every_exported_name_resolves() -> None:
    missing = [name for name in assay.__all__ if getattr(assay, name, None) is None]
    assert missing == []


def test_import_assay_does_not_load_the_engine() -> None:
    code = (
        "import sys, assay; "
        "print(sorted(m for m in ('numpy', 'scipy', 'assay.engine.runner', 'openai') "
        "if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_library_flow_scores_the_example() -> None:
    dataset = assay.load_dataset(EXAMPLE / "dataset.yml")
    outputs = assay.load_outputs(EXAMPLE / "outputs.json")
    metrics = assay.resolve_all(["exact-match"])
    report = assay.evaluate(
        dataset.model_copy(
            update={"samples": [s for s in dataset.samples if "geography" in s.tags]}
        ),
        sut=assay.SavedOutputs(outputs, "outputs.json"),
        metrics=metrics,
    )
    assert isinstance(report, assay.Report)
    # capital-australia answers "Sydney"; the other three geography answers are exact.
    assert report.metric("exact-match").mean == 0.75
    assert "## Per-metric aggregates" in assay.render_markdown(report)


def test_cli_and_api_give_the_same_report_on_the_quickstart(tmp_path: Path) -> None:
    """assay.evaluate takes the CLI's paths and its numbers equal `assay run`'s."""
    import json

    out = tmp_path / "cli.json"
    args = ["run", "dataset.yml", "--outputs", "outputs.json", "-f", "json"]
    args += ["-o", str(out), "--no-store", "-q"]
    subprocess.run([sys.executable, "-m", "assay", *args], cwd=EXAMPLE, check=True)
    cli = json.loads(out.read_text(encoding="utf-8"))
    api = assay.evaluate(EXAMPLE / "dataset.yml", outputs=EXAMPLE / "outputs.json").model_dump(
        mode="json"
    )
    for report in (cli, api):
        report.pop("run")
        report.pop("gate", None)
        report["dataset"].pop("path")
    assert api == cli
    assert api["summary"]["macro_f1"] == cli["summary"]["macro_f1"] > 0.7


def test_an_outputs_mapping_must_answer_exactly_the_samples() -> None:
    """outputs={...} is checked like an outputs file: a missing or unknown id stops the run."""
    import json

    import pytest

    dataset = assay.load_dataset(EXAMPLE / "dataset.yml")
    answers = json.loads((EXAMPLE / "outputs.json").read_text(encoding="utf-8"))["outputs"]
    first = dataset.samples[0].id
    with pytest.raises(assay.AssayError, match=f"no saved output for 1 sample.*'{first}'"):
        assay.evaluate(dataset, outputs={k: v for k, v in answers.items() if k != first})
    with pytest.raises(assay.AssayError, match=r"1 id.* not in the dataset: 'capital-mars'"):
        assay.evaluate(dataset, outputs={**answers, "capital-mars": "Olympus"})
    assert assay.evaluate(dataset, outputs=answers).summary.macro_f1 > 0.7
