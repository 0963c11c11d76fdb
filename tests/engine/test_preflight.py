"""Configuration errors stop a run before any work: exit 2, one line, no sample attempted."""

from __future__ import annotations

import json
from pathlib import Path

from engine.procs import run_assay


def write(folder: Path, metrics: list[object]) -> None:
    dataset = {
        "schema_version": "assay.dataset.v1",
        "name": "pre",
        "metrics": metrics,
        "samples": [
            {"id": "a", "input": {"q": "x"}, "expected_output": "low", "metadata": {"tags": ["t"]}},
            {"id": "b", "input": {"q": "y"}, "expected_output": "high"},
        ],
    }
    (folder / "d.json").write_text(json.dumps(dataset), encoding="utf-8")
    (folder / "o.json").write_text(json.dumps({"outputs": {"a": "low", "b": "mid"}}), "utf-8")


def run(folder: Path, *args: str):  # type: ignore[no-untyped-def]
    env = {"OPENAI_API_KEY": "", "ASSAY_API_KEY": "", "OPENAI_BASE_URL": "", "ASSAY_BASE_URL": ""}
    return run_assay(["run", "d.json", "--outputs", "o.json", *args], cwd=folder, env=env)


def assert_usage_error(result, *words: str) -> None:  # type: ignore[no-untyped-def]
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr
    for word in words:
        assert word in lines[0]


def test_a_judge_with_no_key_and_no_base_url_is_a_configuration_error(tmp_path: Path) -> None:
    write(tmp_path, ["exact-match"])
    result = run(tmp_path, "-m", "llm-as-judge", "--store", str(tmp_path / "s.db"))
    assert_usage_error(result, "llm-as-judge", "API key", "base URL")
    assert not (tmp_path / "s.db").exists()  # nothing was started


def test_ordinal_distance_without_a_scale_is_a_configuration_error(tmp_path: Path) -> None:
    write(tmp_path, ["ordinal-distance"])
    assert_usage_error(run(tmp_path, "--no-store"), "ordinal-distance", "scale", "'a'")


def test_unknown_metric_and_unknown_option_are_configuration_errors(tmp_path: Path) -> None:
    write(tmp_path, ["exact-match"])
    assert_usage_error(run(tmp_path, "-m", "no-such-metric", "--no-store"), "no-such-metric")
    write(tmp_path, [{"name": "exact-match", "bogus": 1}])
    # The message names the option and the ones the metric takes (not a Python TypeError).
    result = run(tmp_path, "--no-store")
    assert_usage_error(result, "metric 'exact-match': unknown option 'bogus' (options: ")
    assert "__init__" not in result.stderr


def test_a_tag_scope_that_matches_no_sample_is_a_warning(tmp_path: Path) -> None:
    write(tmp_path, ["exact-match", {"name": "contains", "tags": ["nowhere"]}])
    result = run(tmp_path, "--no-store", "-q", "--max-failures", "5")
    assert "limited to tags [nowhere]" in result.stderr
    assert result.returncode in (0, 1)


def test_dash_m_keeps_the_dataset_options_of_a_metric_it_names(tmp_path: Path) -> None:
    write(tmp_path, [{"name": "ordinal-distance", "scale": ["low", "mid", "high"]}, "exact-match"])
    result = run(tmp_path, "-m", "ordinal-distance", "-f", "json", "--no-store", "-q")
    assert result.returncode == 0, result.stderr
    [metric] = json.loads(result.stdout)["metrics"]
    assert metric["name"] == "ordinal-distance" and metric["mean"] == 0.75  # 1.0 and 0.5
