"""Gate rules: one test per rule, sources and their precedence, and bad values."""

from __future__ import annotations

import jsonschema
import pytest

from assay.cli.schema_files import generate, load
from assay.compare import gate
from assay.compare.comparison import compare_reports
from assay.compare.gate import check_gate
from assay.compare.gate_rules import GateRules, MetricFloors, load_rules
from assay.errors import UsageError
from assay.store.project import find_config
from compare.factory import make_report


@pytest.fixture
def report():
    """10 samples; exact-match passes 7 (mean 0.7), judge scores 0.1..1.0, policy cohort weak."""
    samples = {}
    for i in range(10):
        samples[f"q{i}"] = {
            "tags": ["policy"] if i < 4 else ["geography"],
            "scores": {"exact-match": [1.0 if i >= 3 else 0.0], "judge": [(i + 1) / 10]},
        }
    return make_report(samples)


def only(result, rule):
    return [f for f in result.failures if f.rule == rule]


# --------------------------------------------------------------------------- one test per rule


def test_min_macro_f1(report):
    # macro-F1 = mean(pass-rate exact 0.7, judge pass-rate 0.6 (0.5..1.0)) = 0.65
    assert report.summary.macro_f1 == pytest.approx(0.65)
    assert check_gate(report, GateRules(min_macro_f1=0.65)).passed
    result = check_gate(report, GateRules(min_macro_f1=0.7))
    assert not result.passed and result.exit_code == 1
    [failure] = only(result, "min_macro_f1")
    assert failure.actual == pytest.approx(0.65) and failure.threshold == 0.7
    assert "0.6500" in failure.message and "0.7000" in failure.message


def test_min_mean(report):
    rules = GateRules(metrics={"judge": MetricFloors(min_mean=0.56)})
    [failure] = check_gate(report, rules).failures
    assert (failure.rule, failure.subject) == ("min_mean", "judge")
    assert failure.actual == pytest.approx(0.55)
    assert check_gate(report, GateRules(metrics={"judge": MetricFloors(min_mean=0.55)})).passed


def test_min_pass_rate(report):
    result = check_gate(report, GateRules(metrics={"exact-match": MetricFloors(min_pass_rate=0.8)}))
    [failure] = result.failures
    assert failure.rule == "min_pass_rate" and failure.actual == pytest.approx(0.7)
    assert check_gate(
        report, GateRules(metrics={"exact-match": MetricFloors(min_pass_rate=0.7)})
    ).passed


def test_min_p50(report):
    # judge scores 0.1..1.0 -> numpy linear median 0.55
    result = check_gate(report, GateRules(metrics={"judge": MetricFloors(min_p50=0.6)}))
    [failure] = result.failures
    assert failure.rule == "min_p50" and failure.actual == pytest.approx(0.55)
    assert check_gate(report, GateRules(metrics={"judge": MetricFloors(min_p50=0.55)})).passed


def test_min_p95(report):
    result = check_gate(report, GateRules(metrics={"judge": MetricFloors(min_p95=0.99)}))
    [failure] = result.failures
    assert failure.rule == "min_p95" and failure.actual == pytest.approx(0.955)


def test_min_coverage():
    # 4 samples, one metric failure -> coverage 3/4
    report = make_report(
        {f"s{i}": {"scores": {"judge": [None if i == 0 else 0.9]}} for i in range(4)}
    )
    rules = GateRules(metrics={"judge": MetricFloors(min_coverage=0.8)}, max_failures=5)
    [failure] = check_gate(report, rules).failures
    assert failure.rule == "min_coverage" and failure.actual == pytest.approx(0.75)
    rules = GateRules(metrics={"judge": MetricFloors(min_coverage=0.75)}, max_failures=5)
    assert check_gate(report, rules).passed


def test_cohort_floor(report):
    # policy cohort: exact-match passes 1 of 4 (q3)
    rules = GateRules(cohorts={"policy": {"exact-match": MetricFloors(min_pass_rate=0.6)}})
    [failure] = check_gate(report, rules).failures
    assert failure.subject == "policy/exact-match" and failure.actual == pytest.approx(0.25)
    assert "cohort 'policy'" in failure.message
    ok = GateRules(cohorts={"geography": {"exact-match": MetricFloors(min_pass_rate=1.0)}})
    assert check_gate(report, ok).passed


def test_cohort_coverage_and_missing_cohort(report):
    rules = GateRules(
        cohorts={
            "policy": {"judge": MetricFloors(min_coverage=1.0)},
            "nope": {"judge": MetricFloors(min_mean=0.1)},
        }
    )
    result = check_gate(report, rules)
    [failure] = result.failures
    assert failure.subject == "nope/judge" and failure.actual is None
    assert "n/a" in failure.message and "not in the report" in failure.message


def test_max_failures():
    report = make_report(
        {
            "a": {"scores": {"m": [None]}},
            "b": {"scores": {"m": [0.9]}, "sut_error": [0]},
            "c": {"scores": {"m": [1.0]}},
        }
    )
    assert report.summary.errored_rows == 2
    [failure] = check_gate(report, GateRules(max_failures=1)).failures
    assert failure.rule == "max_failures" and failure.actual == 2 and failure.threshold == 1
    assert check_gate(report, GateRules(max_failures=2)).passed
    # unset: captured failures fail the gate (DESIGN: exit 1 on captured failures)
    assert [f.rule for f in check_gate(report, GateRules()).failures] == ["max_failures"]


def test_max_regressions(report):
    worse = make_report(
        {
            f"q{i}": {
                "tags": ["policy"] if i < 4 else ["geography"],
                "scores": {"exact-match": [1.0], "judge": [0.0]},
            }
            for i in range(10)
        }
    )
    comparison = compare_reports(worse, report)
    assert comparison.regression_count >= 1
    result = check_gate(worse, GateRules(), comparison)  # default 0 when a comparison ran
    [failure] = only(result, "max_regressions")
    assert failure.actual == comparison.regression_count and failure.threshold == 0
    assert "judge" in failure.message
    allowed = check_gate(worse, GateRules(max_regressions=comparison.regression_count), comparison)
    assert not only(allowed, "max_regressions")


def test_missing_baseline_never_fails(report):
    result = check_gate(report, GateRules(max_regressions=0), comparison=None)
    assert result.passed
    assert any("no baseline" in w for w in result.warnings)


def test_undefined_actual_fails_with_na():
    report = make_report({"a": {"scores": {"judge": [None]}}})
    result = check_gate(
        report, GateRules(metrics={"judge": MetricFloors(min_mean=0.1)}, max_failures=1)
    )
    [failure] = result.failures
    assert failure.actual is None and "n/a" in failure.message


def test_unknown_metric_fails(report):
    [failure] = check_gate(
        report, GateRules(metrics={"rouge-l": MetricFloors(min_mean=0.1)})
    ).failures
    assert failure.actual is None and "not in the report" in failure.message


def test_every_failed_rule_is_listed(report):
    rules = GateRules(
        min_macro_f1=0.9,
        metrics={
            "judge": MetricFloors(min_mean=0.9, min_p95=0.99),
            "exact-match": MetricFloors(min_pass_rate=0.9),
        },
    )
    result = check_gate(report, rules)
    assert sorted(f.rule for f in result.failures) == [
        "min_macro_f1",
        "min_mean",
        "min_p95",
        "min_pass_rate",
    ]
    assert result.checked == 5  # four floors + max_failures
    text = gate.render_text(result)
    assert text.count("FAIL") == 4 and text.endswith("failed (4 of 5 rules)")


def test_gate_result_matches_shipped_schema(report):
    schema = generate("gate.v1.json")
    assert load("gate.v1.json") == schema
    result = check_gate(report, GateRules(min_macro_f1=0.99))
    jsonschema.validate(result.model_dump(mode="json"), schema)


# --------------------------------------------------------------------------- sources


def test_precedence_cli_over_dataset_over_toml(tmp_path):
    config = tmp_path / "assay.toml"
    config.write_text(
        """
[gate]
min_macro_f1 = 0.5
max_failures = 3

[gate.metrics.exact-match]
min_pass_rate = 0.6
min_p95 = 0.2

[gate.cohorts.policy.exact-match]
min_pass_rate = 0.4
""",
        encoding="utf-8",
    )
    dataset_gate = {
        "min_macro_f1": 0.7,
        "metrics": {"exact-match": {"min_pass_rate": 0.75}},
        "min_mean": {"judge": 0.3},
    }
    cli = {
        "min_pass_rate": ["exact-match=0.9"],
        "max_regressions": 2,
        "min_macro_f1": None,
        "min_mean": [],
    }
    rules = load_rules(cli=cli, dataset_gate=dataset_gate, config_path=config)
    assert rules.min_macro_f1 == 0.7  # dataset over toml; CLI None says nothing
    assert rules.max_failures == 3
    assert rules.max_regressions == 2
    assert rules.metrics["exact-match"] == MetricFloors(min_pass_rate=0.9, min_p95=0.2)
    assert rules.metrics["judge"].min_mean == 0.3
    assert rules.cohorts["policy"]["exact-match"].min_pass_rate == 0.4


def test_cli_flags():
    rules = load_rules(
        cli={
            "min_macro_f1": 0.8,
            "min_pass_rate": ["exact-match=0.7", "judge=0.5"],
            "min_mean": ["judge=0.6"],
            "min_coverage": ["judge=1"],
            "max_failures": 0,
            "max_regressions": None,
        }
    )
    assert rules.min_macro_f1 == 0.8 and rules.max_failures == 0 and rules.max_regressions is None
    assert rules.metrics["judge"] == MetricFloors(min_pass_rate=0.5, min_mean=0.6, min_coverage=1.0)


def test_find_config(tmp_path, monkeypatch):
    (tmp_path / "assay.toml").write_text("[gate]\nmin_macro_f1 = 0.5\n", encoding="utf-8")
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    assert find_config(nested) == tmp_path / "assay.toml"


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"cli": {"min_pass_rate": ["exact-match"]}}, "METRIC=VALUE"),
        ({"cli": {"min_pass_rate": ["exact-match=high"]}}, "between 0 and 1"),
        ({"cli": {"min_mean": ["judge=1.5"]}}, "between 0 and 1"),
        ({"cli": {"min_macro_f1": float("nan")}}, "--min-macro-f1"),
        ({"cli": {"max_failures": -1}}, "whole number"),
        ({"dataset_gate": {"min_macro_f1": True}}, "dataset gate.min_macro_f1"),
        (
            {"dataset_gate": {"metrics": {"judge": {"min_median": 0.5}}}},
            "unknown floor 'min_median'",
        ),
        ({"dataset_gate": {"max_regresions": 1}}, "unknown gate rule 'max_regresions'"),
        ({"dataset_gate": ["min_macro_f1"]}, "must be a mapping"),
        ({"dataset_gate": {"cohorts": {"policy": 0.5}}}, "cohorts.policy"),
        ({"dataset_gate": {"min_pass_rate": 0.5}}, "map metric names"),
    ],
)
def test_bad_values_raise_usage_error(kwargs, needle):
    with pytest.raises(UsageError) as info:
        load_rules(**kwargs)
    assert needle in str(info.value)


def test_bad_toml(tmp_path):
    config = tmp_path / "assay.toml"
    config.write_text("[gate\nmin_macro_f1 = ", encoding="utf-8")
    with pytest.raises(UsageError, match="not valid TOML"):
        load_rules(config_path=config)
    config.write_text("[gate]\nmin_macro_f1 = 2\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"assay.toml \[gate\].min_macro_f1"):
        load_rules(config_path=config)
    with pytest.raises(UsageError, match="not found"):
        load_rules(config_path=tmp_path / "missing.toml")


def test_dataset_yaml_gate_block_with_untagged_cohort():
    import yaml

    block = yaml.safe_load(
        """
min_macro_f1: 0.5
cohorts:
  (untagged):
    m: {min_pass_rate: 0.9}
"""
    )
    rules = load_rules(dataset_gate=block)
    report = make_report(
        {
            "a": {"scores": {"m": [1.0]}},
            "b": {"scores": {"m": [0.0]}},
            "c": {"tags": ["x"], "scores": {"m": [1.0]}},
        }
    )
    [failure] = check_gate(report, rules).failures
    assert failure.subject == "(untagged)/m" and failure.actual == pytest.approx(0.5)


def test_a_run_from_a_sub_folder_keeps_the_projects_gate(tmp_path, monkeypatch, report):
    """`assay run` reads the nearest assay.toml's [gate], as it does `executor` and [ray]."""
    from assay.cli.run_report import gate_rules, gate_verdict

    (tmp_path / "assay.toml").write_text("[gate]\nmin_macro_f1 = 0.99\n", encoding="utf-8")
    nested = tmp_path / "evals" / "support"
    nested.mkdir(parents=True)
    monkeypatch.chdir(nested)
    result = gate_verdict(report, gate_rules(None, {}), None)
    assert [f.rule for f in result.failures] == ["min_macro_f1"]
