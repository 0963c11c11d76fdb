"""Outputs: the shipped JSON Schema, schema-valid documents, the text summary, the DataFrame."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.calibration import LabelSet, compute_agreement, load_labels
from assay.calibration.result import CALIBRATION_SCHEMA
from assay.cli.schema_files import generate, load

from .builders import binary, label_sets, ordinal

DATA = Path(__file__).parent / "data"


def _validator() -> jsonschema.Draft202012Validator:
    schema = load("calibration.v1.json")
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


_VALIDATOR = jsonschema.Draft202012Validator(load("calibration.v1.json"))


def test_shipped_schema_is_generated_from_the_models():
    assert load("calibration.v1.json") == generate("calibration.v1.json")


def _results():
    ensemble = load_labels(DATA / "ensemble.yml")
    yield compute_agreement(ensemble, bootstrap=50, seed=1)
    yield compute_agreement(ensemble, cannot_assess_mode="as_category", na_mode="as_unmet")
    yield compute_agreement(load_labels(DATA / "long.csv"), cannot_assess_mode="as_unmet")
    degenerate = LabelSet.from_labels([binary("q")], [["MET"]] * 3, {"j": [["MET"]] * 3})
    yield compute_agreement(degenerate, bootstrap=20, seed=0)
    abstained = LabelSet.from_labels([ordinal("o")], [["1"], ["2"]], {"j": [["n/a"], ["n/a"]]})
    yield compute_agreement(abstained)


def test_every_result_validates_against_the_shipped_schema():
    validator = _validator()
    for result in _results():
        document = json.loads(result.to_json())
        assert document["schema_version"] == CALIBRATION_SCHEMA
        errors = sorted(validator.iter_errors(document), key=str)
        assert not errors, errors[0].message


def test_json_never_contains_nan_and_round_trips(tmp_path):
    result = next(_results())
    text = result.to_json()
    assert "NaN" not in text and "Infinity" not in text
    path = result.to_file(tmp_path / "nested" / "agreement.json")
    again = type(result).model_validate_json(path.read_text(encoding="utf-8"))
    assert again == result
    assert again.cannot_assess_mode == "exclude" and again.na_mode == "exclude"


def test_summary_names_modes_levels_and_renders_none_as_na():
    results = list(_results())
    text = results[1].summary()
    assert "Handling modes: CANNOT_ASSESS=as_category, NA=as_unmet" in text
    assert "Accuracy (micro, all criteria pooled)" in text
    assert "Accuracy (macro, mean over criteria)" in text
    assert "Mean Cohen's kappa (macro" in text
    assert "Inter-rater agreement" in text
    boot = results[0].summary(verbose=True)
    assert "Bootstrap (50 item-level resamples, seed 1, 95% intervals)" in boot
    assert "BCa" in boot
    degenerate = results[3].summary()
    assert "[degenerate: single class, kappa undefined]" in degenerate
    assert "n/a" in degenerate
    assert "nan" not in degenerate.lower().replace("nominal", "")
    assert "[no data]" in results[4].summary()


def test_dataframe_has_labelled_levels_and_modes():
    pd = pytest.importorskip("pandas")
    result = next(_results())
    frame = result.to_dataframe()
    assert isinstance(frame, pd.DataFrame)
    levels = frame["level"].tolist()
    assert levels.count("aggregate") == 3  # overall + 2 judges
    assert levels.count("inter_judge") == 4
    assert {"accuracy_micro", "accuracy_macro", "mean_kappa_macro", "cannot_assess_mode"} <= set(
        frame.columns
    )
    overall = frame[(frame.level == "aggregate") & (frame.rater == "consensus")].iloc[0]
    assert overall.accuracy_micro == pytest.approx(result.overall.aggregate.accuracy_micro)
    clarity = frame[
        (frame.level == "criterion") & (frame.name == "clarity") & (frame.rater == "consensus")
    ].iloc[0]
    assert clarity.weighted_kappa == pytest.approx(result.overall.criteria[2].weighted_kappa)
    assert clarity.weighted_kappa_linear == pytest.approx(
        result.overall.criteria[2].weighted_kappa_linear
    )
    assert clarity.macro_f1 == pytest.approx(result.overall.criteria[2].macro_f1)
    assert overall.kappa_micro == pytest.approx(result.overall.aggregate.kappa_micro)
    assert set(frame["na_mode"]) == {"exclude"}


def test_everything_but_the_dataframe_works_without_pandas():
    """pandas is optional: block its import, compute, render, and get a clear UsageError."""
    code = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(name)
sys.meta_path.insert(0, Block())
from assay.calibration import Criterion, LabelSet, compute_agreement
from assay.errors import UsageError
labels = LabelSet.from_labels([Criterion(name="q")], [["MET"], ["UNMET"], ["MET"]],
                              {"j": [["MET"], ["MET"], ["UNMET"]]})
result = compute_agreement(labels, bootstrap=10, seed=1)
result.summary(); result.to_json()
try:
    result.to_dataframe()
except UsageError as exc:
    print("usage error:", exc)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "usage error: to_dataframe() needs pandas" in out.stdout


def test_bootstrap_estimates_equal_the_point_estimates():
    result = next(_results())
    boot = result.bootstrap
    agg = result.overall.aggregate
    assert boot.accuracy_micro.estimate == pytest.approx(agg.accuracy_micro)
    assert boot.mean_kappa_macro.estimate == pytest.approx(agg.mean_kappa_macro)
    assert boot.rmse.estimate == pytest.approx(result.overall.scores.rmse)
    for ci, crit in zip(boot.criteria, result.overall.criteria):
        assert ci.accuracy.estimate == pytest.approx(crit.accuracy)
        if crit.kappa is None:
            assert ci.kappa.estimate is None
        else:
            assert ci.kappa.estimate == pytest.approx(crit.kappa)
        if crit.kind == "ordinal":
            assert ci.weighted_kappa.estimate == pytest.approx(crit.weighted_kappa)
    assert np.isfinite(boot.accuracy_micro.standard_error)


@settings(max_examples=40, deadline=None)
@given(label_sets(), st.sampled_from(["exclude", "as_unmet", "as_category"]), st.integers(0, 6))
def test_any_label_set_renders_and_validates(labels, mode, resamples):
    """Robustness: whatever the labels (single classes, missing, failed, errored items), the
    result validates against the shipped schema, renders as text and flattens to a frame."""
    result = compute_agreement(
        labels,
        cannot_assess_mode=mode,
        na_mode="as_unmet" if mode == "as_category" else mode,
        bootstrap=resamples,
        seed=1,
    )
    errors = list(_VALIDATOR.iter_errors(json.loads(result.to_json())))
    assert not errors, errors[0].message
    text = result.summary(verbose=True)
    assert "Handling modes:" in text and "nan" not in text.replace("nominal", "")
    frame = result.to_dataframe()
    if result.overall is not None:
        assert len(frame) >= 1 + len(labels.criteria)
