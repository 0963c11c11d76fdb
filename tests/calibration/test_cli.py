"""``assay agreement``: output formats, gates and exit codes.

Exit codes: 0 ok, 1 the gate failed, 2 an input error.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from assay.cli import main
from assay.cli.schema_files import load

DATA = Path(__file__).parent / "data"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(["agreement", *args])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_text_report_exit_0(capsys):
    code, out, err = run(capsys, str(DATA / "ensemble.yml"))
    assert code == 0, err
    assert "Handling modes: CANNOT_ASSESS=exclude, NA=exclude" in out
    assert "Accuracy (micro" in out and "(macro" in out


def test_json_to_file_is_schema_valid(capsys, tmp_path):
    target = tmp_path / "out" / "agreement.json"
    code, out, _ = run(
        capsys,
        str(DATA / "ensemble.yml"),
        "--format",
        "json",
        "--out",
        str(target),
        "--mode",
        "as_unmet",
        "--bootstrap",
        "30",
        "--seed",
        "4",
    )
    assert code == 0 and out == ""
    document = json.loads(target.read_text(encoding="utf-8"))
    schema = load("calibration.v1.json")
    jsonschema.validate(document, schema)
    assert document["cannot_assess_mode"] == "as_unmet" and document["na_mode"] == "as_unmet"
    assert document["bootstrap"]["n_resamples"] == 30 and document["bootstrap"]["seed"] == 4


def test_na_mode_overrides_mode(capsys):
    code, out, _ = run(
        capsys,
        str(DATA / "ensemble.yml"),
        "--format",
        "json",
        "--mode",
        "as_category",
        "--na-mode",
        "exclude",
    )
    assert code == 0
    document = json.loads(out)
    assert (document["cannot_assess_mode"], document["na_mode"]) == ("as_category", "exclude")


def test_gates(capsys):
    code, _, err = run(
        capsys, str(DATA / "ensemble.yml"), "--min-kappa", "0.5", "--min-agreement", "0.8"
    )
    assert code == 0, err
    code, _, err = run(capsys, str(DATA / "ensemble.yml"), "--min-kappa", "0.95")
    assert code == 1
    assert "gate failed: mean kappa (macro)" in err and "< --min-kappa 0.95" in err
    code, _, err = run(capsys, str(DATA / "ensemble.yml"), "--min-agreement", "0.99")
    assert code == 1 and "accuracy (micro)" in err


def test_undefined_kappa_cannot_pass_a_gate(capsys, tmp_path):
    path = tmp_path / "same.csv"
    path.write_text("item_id,criterion,human,judge\n1,c,MET,MET\n2,c,MET,MET\n3,c,MET,MET\n")
    code, _, err = run(capsys, str(path), "--min-kappa", "0.1")
    assert code == 1 and "undefined (n/a)" in err
    code, _, err = run(capsys, str(path), "--min-agreement", "0.9")
    assert code == 0, err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--mode", "as_worst"], "cannot_assess_mode must be one of"),
        (["--format", "xml"], "--format must be text, json or autorubric"),
        (["--bootstrap", "-1"], "--bootstrap must be from 0 to 100000; got -1"),
        (["--bootstrap", "100000001"], "--bootstrap must be from 0 to 100000; got 100000001"),
        (["--min-agreement", "1.5"], "--min-agreement must be in [0, 1]"),
    ],
)
def test_usage_errors_exit_2(capsys, args, message):
    code, _, err = run(capsys, str(DATA / "ensemble.yml"), *args)
    assert code == 2
    assert message in err
    assert "Traceback" not in err


def test_bad_labels_file_exit_2_with_one_line(capsys, tmp_path):
    path = tmp_path / "bad.yml"
    path.write_text(
        "criteria: [{name: c}]\nitems:\n  - id: q1\n    human: {c: MAYBE}\n    judge: {c: MET}\n"
    )
    code, _, err = run(capsys, str(path))
    assert code == 2
    assert err.strip().count("\n") == 0
    assert "bad.yml: sample 'q1': field 'human.c'" in err


def test_console_script_in_a_subprocess(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "assay", "agreement", str(DATA / "wide.csv"), "--format", "json"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["judges"] == ["judge-a", "judge-b"]


@pytest.mark.parametrize(
    ("text", "where"),
    [
        # a short row: before, its missing cells were read as missing labels
        ("item_id,criterion,human,j\na1,c,MET,MET\na2,c,MET\n", "line 3: expected 4 columns"),
        # a long row after a blank line and a quoted cell over two lines: before, the extra
        # cell was dropped (and a line count from the row index was off by the blank lines)
        (
            'item_id,criterion,human,j\n\n"a\n1",c,MET,MET\n\na3,c,MET,MET,UNMET\n',
            "line 6: expected 4 columns (as in the header), found 5",
        ),
        # a short row of the long form: before, 'empty rater name'
        ("item_id,criterion,rater,label\na1,c,human,MET\na1,c\n", "found 2"),
    ],
)
def test_a_csv_row_of_the_wrong_length_names_file_line_and_counts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, where: str
) -> None:
    path = tmp_path / "rows.csv"
    path.write_text(text, encoding="utf-8")
    code, _, err = run(capsys, str(path))
    assert code == 2
    assert err.startswith(f"assay: error: {path}: line ") and err.count("\n") == 1, err
    assert where in err


def test_labels_that_differ_only_in_case_are_one_inferred_option(capsys, tmp_path):
    """Options are matched ignoring case, so inferred ones are too: 'Yes'/'yes' and
    'nan'/'NaN' are one option each (before: an 'unexpected ValidationError')."""
    rows = ["a,c,Yes,yes", "b,c,no,No", "d,c,maybe,yes", "e,c,nan,NaN"]
    labels = tmp_path / "labels.csv"
    labels.write_text("item_id,criterion,human,judge-a\n" + "\n".join(rows) + "\n")
    code, out, err = run(capsys, str(labels), "--format", "json")
    assert code == 0, err
    overall = json.loads(out)["overall"]["aggregate"]  # a, b, e agree; d does not
    assert overall["n_samples"] == 4 and overall["accuracy_micro"] == pytest.approx(3 / 4)


def test_a_bootstrap_too_large_for_memory_is_refused_before_it_starts(capsys, tmp_path):
    """600 free-text labels inferred as one nominal criterion: its jackknife alone would hold
    600 x 600^2 cells (1.7 GB); refused with exit 2 and the way out, not a MemoryError."""
    labels = tmp_path / "labels.csv"
    rows = [f"i{n},c,cat{n},cat{n + 1}" for n in range(600)]
    labels.write_text("item_id,criterion,human,judge-a\n" + "\n".join(rows) + "\n")
    code, _, err = run(capsys, str(labels), "--bootstrap", "50")
    assert code == 2, err
    assert "criterion 'c' has 601 options" in err and "--bootstrap 0" in err
    code, _, err = run(capsys, str(labels), "--bootstrap", "0")
    assert code == 0, err
