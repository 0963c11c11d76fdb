"""Reading the judge gate rules: min_judge_agreement and require_calibration."""

from __future__ import annotations

import pytest

from assay.compare.gate_rules import GateRules, rules_from_mapping
from assay.errors import UsageError


def test_a_number_applies_to_every_judge_metric() -> None:
    rules = rules_from_mapping({"min_judge_agreement": 0.4}, "gate")
    assert rules.min_judge_agreement == {"*": 0.4}


def test_a_mapping_names_metrics() -> None:
    rules = rules_from_mapping(
        {"min_judge_agreement": {"rubric": 0.6, "llm-as-judge": -0.1}}, "gate"
    )
    assert rules.min_judge_agreement == {"rubric": 0.6, "llm-as-judge": -0.1}


@pytest.mark.parametrize("bad", ["0.5", True, 1.5, -2, float("nan"), [0.3]])
def test_a_bad_floor_names_the_field(bad: object) -> None:
    with pytest.raises(UsageError, match=r"gate\.min_judge_agreement.* between -1 and 1"):
        rules_from_mapping({"min_judge_agreement": {"rubric": bad}}, "gate")


def test_require_calibration_true_list_or_false() -> None:
    assert rules_from_mapping({"require_calibration": True}, "g").require_calibration == ["*"]
    assert rules_from_mapping({"require_calibration": False}, "g").require_calibration == []
    listed = rules_from_mapping({"require_calibration": ["rubric"]}, "g")
    assert listed.require_calibration == ["rubric"]
    with pytest.raises(UsageError, match=r"g\.require_calibration must be true, false or a list"):
        rules_from_mapping({"require_calibration": "yes"}, "g")


def test_later_sources_win_key_by_key() -> None:
    base = rules_from_mapping(
        {"min_judge_agreement": {"rubric": 0.2, "x": 0.1}, "require_calibration": True}, "toml"
    )
    over = rules_from_mapping({"min_judge_agreement": {"rubric": 0.5}}, "dataset")
    merged = base.merged(over)
    assert merged.min_judge_agreement == {"rubric": 0.5, "x": 0.1}
    assert merged.require_calibration == ["*"]
    assert GateRules().merged(over).require_calibration == []
