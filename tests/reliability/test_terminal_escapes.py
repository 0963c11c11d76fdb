"""Issue 33, defect 6: no control character of a user's text reaches the terminal.

On a7b0681 ``assay runs`` printed run ids and dataset names raw, ``--run-id`` took ESC
sequences, and the Markdown report on stdout (the default) carried raw ESC, BEL, BS and C1
characters from ids, inputs and the system's answer: an answer could retitle or rewrite the
terminal of whoever ran the evaluation.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from assay.cli import main

HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x08\x9b31m\u202e"
# Any C0 control but LF, DEL, any C1 control: what a terminal acts on.
RAW = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def _assay(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    captured = capsys.readouterr()
    return int(info.value.code or 0), captured.out, captured.err


@pytest.fixture
def hostile_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    samples = [{"id": f"s{HOSTILE}", "input": {"q": f"input {HOSTILE}"}, "expected_output": "a"}]
    document = {"schema_version": "assay.dataset.v1", "name": f"n{HOSTILE}", "samples": samples}
    document["metrics"] = ["exact-match"]
    (tmp_path / "d.yml").write_text(yaml.safe_dump(document), encoding="utf-8")
    outputs = {"outputs": {f"s{HOSTILE}": f"answer {HOSTILE}"}}
    (tmp_path / "o.json").write_text(json.dumps(outputs), encoding="utf-8")
    return tmp_path


def test_the_markdown_report_on_stdout_escapes_every_control_character(
    hostile_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _assay(capsys, "run", "d.yml", "--outputs", "o.json", "--store", "r.db")
    assert "| s\\x1b]0;pwned\\x07\\x1b[2J\\x08\\x9b31m\\u202e |" in out  # the id's table cell
    assert "answer \\x1b]0;pwned" in out and "input \\u001b]0;pwned" in out  # input: as JSON
    assert RAW.search(out) is None and RAW.search(err) is None
    code, out, err = _assay(capsys, "runs", "--store", "r.db")
    assert code == 0 and "n\\x1b]0;pwned\\x07" in out and RAW.search(out) is None
    code, out, err = _assay(capsys, "report", "latest", "--store", "r.db")
    assert code == 0 and RAW.search(out) is None


def test_a_markdown_file_escapes_control_characters_in_table_cells(
    hostile_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _assay(capsys, "run", "d.yml", "--outputs", "o.json", "--no-store", "-o", "r.md")
    text = (hostile_run / "r.md").read_text(encoding="utf-8")
    assert RAW.search(text) is None and "\\x9b31m" in text


@pytest.mark.parametrize("flag", ["--run-id", "--resume"])
def test_a_run_id_with_control_characters_is_refused(
    hostile_run: Path, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    code, _, err = _assay(capsys, "run", "d.yml", "--outputs", "o.json", flag, "x\x1b[2Jy")
    assert code == 2 and f"{flag} must be" in err and "'x\\x1b[2Jy'" in err
    assert RAW.search(err) is None and not (hostile_run / ".assay").exists()


def test_validate_names_a_file_with_control_characters_escaped(
    hostile_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    odd = hostile_run / "d\x1b[2J.yml"
    odd.write_bytes((hostile_run / "d.yml").read_bytes())
    code, out, _ = _assay(capsys, "validate", str(odd))
    assert code == 0 and "d\\x1b[2J.yml: ok" in out and RAW.search(out) is None


def test_the_one_escape_keeps_line_breaks_only_where_asked() -> None:
    from assay.data.terminal import printable, printable_lines  # here: the others run on main

    every = "".join(map(chr, [*range(0x20), *range(0x7F, 0xA0)]))
    assert RAW.search(printable(every)) is None and "\n" not in printable(every)
    assert printable_lines("a\nb\x1b") == "a\nb\\x1b"
    assert printable("plain text, é 日本") == "plain text, é 日本"
