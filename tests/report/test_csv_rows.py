"""``--format csv``: one line per execution and metric, read back with the csv module and
checked against the JSON report of the same run (a separate renderer) and by hand."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from assay.cli import main
from assay.report.csv_rows import HEADER, row_lines, spreadsheet_safe
from assay.report.model import Row, RowScore

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    return int(info.value.code or 0), capsys.readouterr().out


@pytest.mark.parametrize("store", [False, True])
def test_csv_rows_agree_with_the_json_report(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: bool
) -> None:
    monkeypatch.chdir(tmp_path)
    base = ["run", str(QUICKSTART / "dataset.yml"), "--outputs", str(QUICKSTART / "outputs.json")]
    base += ["--store", str(tmp_path / "s.db")] if store else ["--no-store"]
    code_csv, text = run(capsys, *base, "-f", "csv")
    code_json, report = run(capsys, *base, "-f", "json")
    assert code_csv == code_json
    lines = list(csv.reader(io.StringIO(text)))
    assert tuple(lines[0]) == HEADER
    data = json.loads(report)
    thresholds = {m["name"]: m["threshold"] for m in data["metrics"]}
    expected = []
    for row in data["rows"]:
        for metric, cell in row["scores"].items():
            status = "passed" if cell["passed"] else "failed"
            expected.append((row["id"], metric, status, cell["score"], thresholds[metric]))
    got = [(r[0], r[3], r[4], float(r[5]), float(r[6])) for r in lines[1:] if r[4] != "errored"]
    assert sorted(got) == sorted(expected)
    by_key = {(r[0], r[3]): r for r in lines[1:]}
    assert by_key[("capital-australia", "exact-match")][2:] == [
        "geography",
        "exact-match",
        "failed",
        "0.0",
        "0.5",
        "scored 0.0000, below the threshold 0.5",
    ]


def test_errors_reasons_and_formula_cells() -> None:
    row = Row(
        id="=HYPERLINK(1)",
        row_hash="h",
        repetition=2,
        tags=["a", "b"],
        passed=False,
        scores={"judge": RowScore(score=0.9, passed=True, details={"reason": "-cites the policy"})},
        errors={"rouge-l": "expected_output is missing", "system-under-test": "timed out"},
    )
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    for line in row_lines(row, {"judge": 0.95, "rouge-l": 0.3}):
        writer.writerow([spreadsheet_safe(c) for c in line])
    lines = list(csv.reader(io.StringIO(buffer.getvalue())))
    assert lines == [
        ["'=HYPERLINK(1)", "2", "a;b", "judge", "failed", "0.9", "0.95", "'-cites the policy"],
        [
            "'=HYPERLINK(1)",
            "2",
            "a;b",
            "rouge-l",
            "errored",
            "",
            "0.3",
            "expected_output is missing",
        ],
        ["'=HYPERLINK(1)", "2", "a;b", "system-under-test", "errored", "", "", "timed out"],
    ]
