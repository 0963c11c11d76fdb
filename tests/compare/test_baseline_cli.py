"""Baselines (set/show/resolve) and the `assay baseline` / `assay compare` commands."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from assay.cli import main
from assay.cli.schema_files import generate
from assay.compare import baseline as baseline_module
from assay.compare.baseline import (
    list_pointers,
    load_baseline,
    load_report,
    read_pointer,
    resolve_reference,
    set_baseline,
    slug,
)
from assay.errors import InputError, UsageError
from compare.factory import from_matrix, make_report

SCHEMAS = Path(baseline_module.__file__).parents[1] / "schemas"


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """Every test runs in its own folder, with no store or baseline settings inherited."""
    for variable in ("ASSAY_BASELINE_DIR", "ASSAY_STORE", "ASSAY_MAX_REGRESSIONS", "ASSAY_ALPHA"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.chdir(tmp_path)


def reports(tmp_path: Path, drop: float = 0.2) -> tuple[Path, Path]:
    rng = np.random.default_rng(0)
    quality = rng.beta(5, 2, (80, 1))
    ref = from_matrix(
        {"judge": np.clip(quality + rng.normal(0, 0.05, quality.shape), 0, 1)}, run_id="ref"
    )
    cur = from_matrix(
        {"judge": np.clip(quality - drop + rng.normal(0, 0.05, quality.shape), 0, 1)}, run_id="cur"
    )
    ref_path, cur_path = tmp_path / "ref.json", tmp_path / "cur.json"
    ref_path.write_text(ref.model_dump_json(), encoding="utf-8")
    cur_path.write_text(cur.model_dump_json(), encoding="utf-8")
    return ref_path, cur_path


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(argv))
    captured = capsys.readouterr()
    return int(info.value.code or 0), captured.out, captured.err


# --------------------------------------------------------------------------- library


def test_datasets_whose_names_clean_alike_keep_their_own_baselines(tmp_path):
    """'a/b', 'a_b', 'a\\0b' and a 5,000-character name: each its own file, none replaced."""
    names = ["a/b", "a_b", "a\x00b", "..", "", "n" * 5000]
    for index, name in enumerate(names):
        set_baseline(
            make_report({"s": {"scores": {"m": [0.5]}}}, dataset=name, run_id=f"r{index}"),
            source="t",
        )
    for index, name in enumerate(names):
        found = read_pointer(name)
        assert found is not None and found[1].summary.run_id == f"r{index}", name
    assert len(list_pointers()) == len(names)


def test_a_baseline_pinned_under_the_old_name_is_still_found(tmp_path):
    path, _ = set_baseline(
        make_report({"s": {"scores": {"m": [1.0]}}}, dataset="x y", run_id="r1"), source="t"
    )
    path.rename(path.with_name("x_y.json"))  # where assay kept it before names had a hash
    found = read_pointer("x y")
    assert found is not None and found[1].summary.run_id == "r1"
    assert read_pointer("x_y") is None  # that file is another dataset's pointer


def test_set_show_and_resolve_baseline(tmp_path):
    report = make_report({"a": {"scores": {"m": [1.0]}}}, dataset="my data/set", run_id="r-7")
    path, pointer = set_baseline(report, source="ref.json")
    assert path == tmp_path / ".assay" / "baselines" / f"{slug('my data/set')}.json"
    assert slug("my data/set").startswith("my_data_set-") and slug("..x y").startswith("x_y-")
    assert slug("support.faq") == "support.faq"  # a safe name stays as it is
    document = json.loads(path.read_text(encoding="utf-8"))
    jsonschema.validate(document, json.loads((SCHEMAS / "baseline.v1.json").read_text()))
    assert json.loads((SCHEMAS / "baseline.v1.json").read_text()) == generate("baseline.v1.json")
    assert (
        document["schema_version"] == "assay.baseline.v1" and document["summary"]["run_id"] == "r-7"
    )
    assert read_pointer("my data/set")[1] == pointer
    assert load_baseline("my data/set") == report
    current = make_report({"a": {"scores": {"m": [0.0]}}}, dataset="my data/set", run_id="r-8")
    found = resolve_reference("baseline", current)
    assert found is not None and found.report == report and list(found.rows()) == report.rows


def test_missing_baseline_resolves_to_none():
    current = make_report({"a": {"scores": {"m": [1.0]}}})
    assert resolve_reference("baseline", current) is None
    assert resolve_reference("latest", current, store_path=Path("nope.db")) is None
    with pytest.raises(UsageError, match="no such file"):
        resolve_reference("missing.json", current)


def test_baseline_dir_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_BASELINE_DIR", str(tmp_path / "pinned"))
    path, _ = set_baseline(make_report({"a": {"scores": {"m": [1.0]}}}), source="x")
    assert (
        path.parent == tmp_path / "pinned" and (tmp_path / "pinned" / "demo.report.json").is_file()
    )


def test_latest_comes_from_the_run_store(tmp_path):
    from assay.store.runs import RunStore

    store = RunStore(tmp_path / "runs.db")
    for run_id, status in (("old", "finished"), ("broken", "interrupted"), ("now", "finished")):
        store.create_run(run_id, dataset_name="demo", dataset_path=None, config={"metrics": ["m"]})
        store.set_status(run_id, status)
    store.close()
    current = make_report({"a": {"scores": {"m": [1.0]}}}, run_id="now")
    found = resolve_reference("latest", current, store_path=tmp_path / "runs.db")
    # not itself, not the unfinished run
    assert found is not None and found.report.run.run_id == "old"


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("{not json", "not valid JSON"),
        ('{"schema_version": "eval-harness.report.v1"}', "unsupported schema_version"),
        ('{"schema_version": "assay.report.v1", "dataset": {}}', "not a valid assay report"),
        ("[1, 2]", "must be a JSON object"),
    ],
)
def test_bad_report_files(tmp_path, content, needle):
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_report(path)
    assert needle in str(info.value) and "bad.json" in str(info.value)


# --------------------------------------------------------------------------- commands


def test_cli_baseline_set_and_show(tmp_path, capsys):
    ref, _ = reports(tmp_path)
    code, out, _ = run_cli(capsys, "baseline", "set", str(ref))
    assert code == 0 and "baseline for 'sim' set to run ref" in out
    code, out, _ = run_cli(capsys, "baseline", "show")
    assert code == 0 and out.startswith("sim: run ref")
    code, out, _ = run_cli(capsys, "baseline", "show", "--dataset", "sim", "--json")
    assert code == 0 and json.loads(out)["summary"]["run_id"] == "ref"
    code, _, err = run_cli(capsys, "baseline", "show", "--dataset", "other")
    assert code == 2 and "no baseline is set for dataset 'other'" in err


def test_cli_baseline_set_and_show_escape_control_characters(tmp_path, capsys):
    """A dataset name with a NUL, a line break or ESC was printed raw (a NUL in the terminal,
    a second line); now escaped as ``repr`` writes it, one line per baseline."""
    name = "evil\x00name\x1b[31m\nsecond\u2028"
    report = make_report({"s1": {"scores": {"m": [1.0]}}}, dataset=name)
    path = tmp_path / "evil.json"
    path.write_text(report.model_dump_json(), encoding="utf-8")
    shown = "evil\\x00name\\x1b[31m\\nsecond\\u2028"
    for argv in (("baseline", "set", str(path)), ("baseline", "show")):
        code, out, _ = run_cli(capsys, *argv)
        assert code == 0 and len(out.splitlines()) == 1, out
        assert shown in out and not any(c in out for c in "\x00\x1b\u2028")


def test_cli_compare_text_escapes_control_characters(tmp_path, capsys):
    """Sample ids, tags and the dataset's name are the reports' text: a backspace, ESC or line
    break in them was printed raw by the text comparison, rewriting what the terminal shows."""
    name, sample = "evil\x08name\x1b[31m", "s\x01\u2028id"
    paths = []
    for run_id, score in (("ref", 1.0), ("cur", 0.0)):
        report = make_report({sample: {"scores": {"m": [score]}}}, dataset=name, run_id=run_id)
        paths.append(tmp_path / f"{run_id}.json")
        paths[-1].write_text(report.model_dump_json(), encoding="utf-8")
    code, out, _ = run_cli(capsys, "compare", str(paths[1]), str(paths[0]))
    assert code == 0 and "s\\x01\\u2028id" in out and "evil\\x08name\\x1b[31m" in out, out
    assert not any(c in out for c in "\x01\x08\x1b\u2028")


def test_cli_baseline_set_rejects_unknown_target(capsys):
    code, _, err = run_cli(capsys, "baseline", "set", "no-such-run")
    assert code == 2 and "neither a report file nor a stored run" in err
    assert "Traceback" not in err


def test_cli_compare_text_and_json(tmp_path, capsys):
    ref, cur = reports(tmp_path)
    code, out, _ = run_cli(capsys, "compare", str(cur), str(ref))
    assert code == 0
    assert "REGRESSIONS beyond noise" in out and "judge" in out and "regressed" in out
    out_path = tmp_path / "cmp.json"
    code, out, _ = run_cli(
        capsys, "compare", str(cur), str(ref), "--format", "json", "--out", str(out_path)
    )
    assert code == 0 and out == ""
    document = json.loads(out_path.read_text(encoding="utf-8"))
    jsonschema.validate(document, json.loads((SCHEMAS / "comparison.v1.json").read_text()))
    assert document["counts"]["regressions"] >= 1 and document["current"]["run_id"] == "cur"


def test_cli_compare_max_regressions_and_baseline_keyword(tmp_path, capsys):
    ref, cur = reports(tmp_path)
    code, _, err = run_cli(capsys, "compare", str(cur), str(ref), "--max-regressions", "0")
    assert code == 1 and "regressions beyond noise" in err
    code, _, err = run_cli(capsys, "compare", str(cur), "baseline")
    assert code == 2 and "no baseline is set" in err
    run_cli(capsys, "baseline", "set", str(ref))
    code, out, _ = run_cli(capsys, "compare", str(cur), "baseline", "--format", "json")
    assert code == 0 and json.loads(out)["reference"]["run_id"] == "ref"


@pytest.mark.parametrize(
    ("ref_name", "ref_hash", "names"),
    [
        ("golden-v2", "h-{}", "current 'golden', reference 'golden-v2'"),  # other name
        ("golden", "other-{}", "current 'golden', reference 'golden'"),  # no row alike
    ],
)
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_cli_compare_of_two_datasets_warns_on_stderr(
    tmp_path, capsys, ref_name, ref_hash, names, fmt
):
    """Once silent on stderr (a JSON comparison said nothing; rows that matched no row only
    counted as added and removed); the exit code is unchanged."""
    samples = {f"s{i}": {"scores": {"exact-match": [1.0]}} for i in range(4)}
    cur = make_report(samples, dataset="golden", hashes={k: f"h-{k}" for k in samples})
    ref = make_report(
        samples, dataset=ref_name, hashes={k: ref_hash.format(k) for k in samples}, run_id="r"
    )
    paths = [tmp_path / "cur.json", tmp_path / "ref.json"]
    for path, report in zip(paths, (cur, ref), strict=True):
        path.write_text(report.model_dump_json(), encoding="utf-8")
    code, _, err = run_cli(capsys, "compare", *map(str, paths), "--format", fmt)
    assert code == 0
    assert f"assay: warning: compare: datasets differ: {names}" in err.splitlines()[0]
    same = make_report(samples, dataset="golden", hashes={k: f"h-{k}" for k in samples})
    paths[1].write_text(same.model_dump_json(), encoding="utf-8")
    code, _, err = run_cli(capsys, "compare", *map(str, paths), "--format", fmt)
    assert code == 0 and "datasets differ" not in err


def test_cli_compare_noise_passes(tmp_path, capsys):
    ref, cur = reports(tmp_path, drop=0.0)
    code, out, _ = run_cli(capsys, "compare", str(cur), str(ref), "--max-regressions", "0")
    assert code == 0 and "no regression the paired tests can confirm" in out


def test_cli_compare_bad_flags(tmp_path, capsys):
    ref, cur = reports(tmp_path)
    code, _, err = run_cli(capsys, "compare", str(cur), str(ref), "--format", "yaml")
    assert code == 2 and "--format must be text or json" in err
    code, _, err = run_cli(capsys, "compare", str(cur), str(ref), "--alpha", "2")
    assert code == 2 and "alpha" in err


def test_looking_up_a_run_creates_no_store(tmp_path, capsys):
    run_cli(capsys, "baseline", "set", "some-run")
    assert not (tmp_path / ".assay").exists()


def test_cli_compare_latest_needs_another_run(tmp_path, capsys):
    _, cur = reports(tmp_path)
    code, _, err = run_cli(
        capsys, "compare", str(cur), "latest", "--store", str(tmp_path / "none.db")
    )
    assert code == 2 and "no other finished run" in err
