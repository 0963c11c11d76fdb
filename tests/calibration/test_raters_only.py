"""Agreement without a human column: judge vs judge, coder vs coder (issue 15, points 1 and 5)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import krippendorff
import numpy as np
import pytest

from assay.cli import main
from assay.cli.schema_files import load

EXAMPLE = Path(__file__).parents[2] / "examples" / "calibration" / "krippendorff2011.csv"

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section C: 4 coders,
# 12 units, values 1..5, missing cells blank. Published: nominal .743, ordinal .815,
# interval .849.
PUBLISHED = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849}


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(["agreement", *args])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _matrix() -> np.ndarray:
    """The example CSV read back as a coders x units matrix, independently of assay."""
    rows = [line.split(",") for line in EXAMPLE.read_text().splitlines()[1:]]
    coders = sorted({r[2] for r in rows})
    units = sorted({r[0] for r in rows})
    data = np.full((len(coders), len(units)), np.nan)
    for unit, _, coder, label in rows:
        data[coders.index(coder), units.index(unit)] = float(label)
    return data


def test_krippendorff_2011_worked_example_through_the_cli(capsys):
    code, out, err = run(capsys, str(EXAMPLE), "--format", "json")
    assert code == 0, err
    result = json.loads(out)
    jsonschema.validate(result, load("calibration.v1.json"))
    assert result["overall"] is None and result["per_judge"] == []
    (ij,) = result["inter_judge"]
    got = {
        "nominal": ij["krippendorff_alpha_nominal"],
        "ordinal": ij["krippendorff_alpha"],
        "interval": ij["krippendorff_alpha_interval"],
    }
    for level, published in PUBLISHED.items():
        assert round(got[level], 3) == published, level
        reference = krippendorff.alpha(_matrix(), level_of_measurement=level)
        assert got[level] == pytest.approx(reference, abs=1e-9), level


def test_text_summary_shows_every_alpha_level(capsys):
    code, out, _ = run(capsys, str(EXAMPLE))
    assert code == 0
    assert "INTER-RATER AGREEMENT (NO HUMAN LABELS)" in out
    row = next(line for line in out.splitlines() if line.strip().startswith("severity"))
    assert "0.743" in row and "0.815" in row and "0.849" in row


def test_binary_raters_only_show_alpha_without_a_fleiss_column(capsys, tmp_path):
    votes = {"a": "MMUMUM", "b": "MUUMUM", "c": "MMUUUM"}
    lines = ["item_id,criterion,rater,label"]
    for rater, column in votes.items():
        for unit, v in enumerate(column):
            lines.append(f"u{unit},ok,{rater},{'MET' if v == 'M' else 'UNMET'}")
    labels = tmp_path / "labels.csv"
    labels.write_text("\n".join(lines) + "\n")
    code, out, err = run(capsys, str(labels), "--format", "json")
    assert code == 0, err
    (ij,) = json.loads(out)["inter_judge"]
    matrix = np.array([[1.0 if v == "M" else 0.0 for v in col] for col in votes.values()])
    reference = krippendorff.alpha(matrix, level_of_measurement="nominal")
    assert ij["krippendorff_alpha"] == pytest.approx(reference, abs=1e-9)
    assert ij["fleiss_kappa"] is not None  # the JSON keeps Fleiss
    code, out, _ = run(capsys, str(labels))
    row = next(line for line in out.splitlines() if line.strip().startswith("ok "))
    assert f"{reference:.3f}" in row
    assert f"{ij['fleiss_kappa']:.3f}" not in row or ij["fleiss_kappa"] == reference


def test_gate_without_human_labels_fails_with_a_reason(capsys):
    code, _, err = run(capsys, str(EXAMPLE), "--min-kappa", "0.5")
    assert code == 1
    assert "no human labels" in err


def test_one_rater_without_human_labels_is_exit_2(capsys, tmp_path):
    labels = tmp_path / "one.csv"
    labels.write_text("item_id,criterion,rater,label\n1,ok,a,MET\n2,ok,a,UNMET\n")
    code, _, err = run(capsys, str(labels))
    assert code == 2
    assert "one.csv" in err and "human" in err
