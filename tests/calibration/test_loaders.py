"""Labels files: every format loads to the same arrays, and mistakes name file, item and field."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.calibration import Criterion, compute_agreement, labels_from_data, load_labels
from assay.calibration.model import FAILED, MISSING
from assay.errors import CalibrationError

from .builders import binary, document, nominal, ordinal

DATA = Path(__file__).parent / "data"


def test_yaml_document_loads_every_cell_kind():
    labels = load_labels(DATA / "ensemble.yml")
    assert labels.judges == ("gpt-a", "gpt-b")
    assert labels.item_ids == ("1", "2", "3", "4", "5", "6")  # numeric ids stay strings
    assert [c.kind for c in labels.criteria] == ["binary", "binary", "ordinal", "nominal"]
    tone = 3
    assert labels.votes[1, tone, 2] == FAILED
    assert labels.votes[0, tone, 5] == MISSING  # errored item: no judge verdicts
    assert labels.item_errored.tolist() == [False] * 5 + [True]
    assert labels.criteria[2].labels[labels.human[2, 3]] == "n/a"
    assert labels.lengths is not None and labels.lengths[4] == 2


def test_json_yaml_and_jsonl_agree(tmp_path, simple_doc):
    (tmp_path / "l.json").write_text(json.dumps(simple_doc))
    (tmp_path / "l.yaml").write_text(yaml.safe_dump(simple_doc))
    header = {"criteria": simple_doc["criteria"]}
    (tmp_path / "l.jsonl").write_text(
        "\n".join(json.dumps(x) for x in [header, *simple_doc["items"]]) + "\n"
    )
    loaded = [load_labels(tmp_path / name) for name in ("l.json", "l.yaml", "l.jsonl")]
    for other in loaded[1:]:
        assert np.array_equal(other.human, loaded[0].human)
        assert np.array_equal(other.votes, loaded[0].votes)
        assert other.criteria == loaded[0].criteria


def test_long_csv_infers_criteria_and_reads_failed_cells():
    labels = load_labels(DATA / "long.csv")
    assert labels.judges == ("judge-a",)
    kinds = {c.name: c for c in labels.criteria}
    assert kinds["correct"].kind == "binary"
    assert kinds["score"].kind == "ordinal"
    assert kinds["score"].labels == ("1", "2", "3", "4", "5")  # full range, 3 never chosen
    assert labels.votes[0, 0, 2] == FAILED
    assert any("inferred" in note for note in labels.notes)


def test_wide_csv_with_an_empty_cell_is_missing():
    labels = load_labels(DATA / "wide.csv")
    assert labels.judges == ("judge-a", "judge-b")
    assert labels.votes[1, 0, 3] == MISSING
    assert labels.votes[0, 0, 2] == 2  # CANNOT_ASSESS


def test_criteria_file_fixes_the_scale(tmp_path):
    crit = tmp_path / "criteria.yml"
    crit.write_text(
        yaml.safe_dump(
            {
                "criteria": [
                    {"name": "correct"},
                    {
                        "name": "score",
                        "type": "ordinal",
                        "options": [{"label": str(i)} for i in range(1, 8)],
                    },
                ]
            }
        )
    )
    labels = load_labels(DATA / "long.csv", criteria=crit)
    assert labels.criteria[1].labels == tuple(str(i) for i in range(1, 8))
    assert labels.notes == ()


def test_jsonl_without_header_infers_nominal_and_binary(tmp_path):
    lines = [
        {
            "id": 1,
            "human": {"ok": True, "style": "terse"},
            "judge": {"ok": "MET", "style": "chatty"},
        },
        {
            "id": 2,
            "human": {"ok": False, "style": "chatty"},
            "judge": {"ok": "unmet", "style": "chatty"},
        },
    ]
    path = tmp_path / "x.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines))
    labels = load_labels(path)
    by_name = {c.name: c for c in labels.criteria}
    assert by_name["ok"].kind == "binary"
    assert by_name["style"].kind == "nominal" and by_name["style"].labels == ("chatty", "terse")


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (
            lambda d: d["items"][1]["human"].update(correct="MAYBE"),
            r"sample 'b': field 'human\.correct'.*MET, UNMET",
        ),
        (
            lambda d: d["items"][0]["judges"]["j1"].update(clarity="7"),
            r"sample 'a': field 'judges\.j1\.clarity'.*not an option",
        ),
        (
            lambda d: d["items"][2]["human"].update(speed="MET"),
            r"field 'human\.speed': unknown criterion",
        ),
        (
            lambda d: d["items"][3].update(human_score=1.5),
            r"sample 'd': field 'human_score'.*\[0, 1\]",
        ),
        (
            lambda d: d["items"][3].update(colour="red"),
            r"sample 'd': field 'colour': unknown field",
        ),
        (lambda d: d["items"][1].update(id="a"), r"sample 'a': field 'id': duplicate item id"),
        (
            lambda d: d["criteria"][1].update(options=[{"label": "x"}]),
            r"field 'criteria\.1'.*at least 2 non-NA",
        ),
        (lambda d: d["items"][0]["judges"]["j1"].update(correct={"oops": 1}), r"failed judgment"),
        (lambda d: d.update(items=[]), r"field 'items'"),
    ],
)
def test_mistakes_name_file_item_and_field(simple_doc, mutate, match):
    mutate(simple_doc)
    with pytest.raises(CalibrationError, match=match) as info:
        labels_from_data(simple_doc, source="labels.json")
    assert str(info.value).startswith("labels.json")


def test_undeclared_judge_is_rejected_when_judges_are_listed(simple_doc):
    simple_doc["judges"] = ["j1"]
    with pytest.raises(CalibrationError, match=r"judge 'j2' is not declared"):
        labels_from_data(simple_doc)


def test_file_level_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(CalibrationError, match=r"bad\.json: not valid JSON"):
        load_labels(bad)
    csv = tmp_path / "bad.csv"
    csv.write_text("a,b\n1,2\n")
    with pytest.raises(CalibrationError, match="item_id column"):
        load_labels(csv)
    dup = tmp_path / "dup.csv"
    dup.write_text("item_id,criterion,rater,label\n1,c,human,MET\n1,c,human,UNMET\n")
    with pytest.raises(CalibrationError, match="second label"):
        load_labels(dup)
    with pytest.raises(CalibrationError, match="cannot read file"):
        load_labels(tmp_path / "missing.yml")


def test_criterion_rules():
    assert ordinal("o", labels="abc", na=False).code_values.tolist() == [0.0, 0.5, 1.0]
    with pytest.raises(ValueError, match="option value must be in"):
        Criterion(name="x", type="nominal", options=[{"label": "a", "value": 2}, {"label": "b"}])
    with pytest.raises(ValueError, match="unique"):
        Criterion(name="x", type="nominal", options=[{"label": "a"}, {"label": "A"}])
    with pytest.raises(ValueError, match="no options"):
        Criterion(name="x", type="binary", options=[{"label": "a"}, {"label": "b"}])
    with pytest.raises(ValueError, match="every ordinal option or for none"):
        Criterion(name="x", type="ordinal", options=[{"label": "a", "value": 0.1}, {"label": "b"}])
    # autorubric spelling: options + scale_type
    assert (
        Criterion(name="x", scale_type="nominal", options=[{"label": "a"}, {"label": "b"}]).kind
        == "nominal"
    )
    assert binary("p", -1).worst_code == 0  # a penalty criterion's worst answer is MET
    assert nominal("n", values=(0.3, 0.1, 0.9)).worst_code == 1


def test_loaded_file_round_trips_to_a_result():
    result = compute_agreement(load_labels(DATA / "ensemble.yml"))
    assert result.n_items == 6 and result.n_errored_items == 1
    assert result.source.endswith("ensemble.yml")


def test_jsonl_with_a_header_line():
    labels = load_labels(DATA / "items.jsonl")
    assert [c.name for c in labels.criteria] == ["correct", "style"]
    assert labels.judges == ("judge",)
    assert labels.human[1].tolist() == [0, 1, 0]  # a, b, a
    assert labels.votes[0, 0].tolist() == [0, 1, 1]  # MET, UNMET, UNMET
    assert labels.notes == ()


@st.composite
def small_documents(draw):
    criteria = [binary("b"), ordinal("o", labels="123", na=True), nominal("n")]
    judges = draw(
        st.lists(st.sampled_from(["j1", "j2", "j3"]), min_size=1, max_size=3, unique=True)
    )
    n_items = draw(st.integers(1, 8))
    items = []
    for i in range(n_items):

        def cells():
            out = {}
            for c in criteria:
                label = draw(st.sampled_from([None, *c.labels, "error: boom"]))
                if label is not None:
                    out[c.name] = label
            return out

        human = {k: v for k, v in cells().items() if not v.startswith("error")}
        items.append({"id": f"i{i}", "human": human, "judges": {j: cells() for j in judges}})
    return criteria, judges, items


def _as_json_cells(items):
    out = []
    for item in items:
        judges = {
            j: {k: ({"error": v} if v.startswith("error") else v) for k, v in cells.items()}
            for j, cells in item["judges"].items()
        }
        out.append({**item, "judges": judges})
    return out


@settings(max_examples=60, deadline=None)
@given(small_documents())
def test_every_format_gives_the_same_arrays(tmp_path_factory, doc):
    criteria, judges, items = doc
    folder = tmp_path_factory.mktemp("formats")
    crit_file = folder / "criteria.yml"
    crit_file.write_text(
        yaml.safe_dump({"criteria": [c.model_dump(exclude_none=True) for c in criteria]})
    )
    data = document(criteria, _as_json_cells(items), judges=judges)
    (folder / "l.json").write_text(json.dumps(data))
    (folder / "l.yaml").write_text(yaml.safe_dump(data))
    long_rows = ["item_id,criterion,rater,label"]
    wide_rows = ["item_id,criterion,human," + ",".join(judges)]
    for item in items:
        for c in criteria:
            human = item["human"].get(c.name, "")
            long_rows.append(f"{item['id']},{c.name},human,{human}")
            votes = [item["judges"][j].get(c.name, "") for j in judges]
            long_rows.extend(f"{item['id']},{c.name},{j},{v}" for j, v in zip(judges, votes))
            wide_rows.append(f"{item['id']},{c.name},{human}," + ",".join(votes))
    (folder / "long.csv").write_text("\n".join(long_rows) + "\n")
    (folder / "wide.csv").write_text("\n".join(wide_rows) + "\n")
    reference = load_labels(folder / "l.json")
    for name in ("l.yaml", "long.csv", "wide.csv"):
        other = load_labels(folder / name, criteria=crit_file)
        assert other.item_ids == reference.item_ids
        assert set(other.judges) == set(reference.judges)
        order = [other.judges.index(j) for j in reference.judges]
        assert np.array_equal(other.human, reference.human), name
        assert np.array_equal(other.votes[order], reference.votes), name


def test_option_shorthands_and_numeric_labels():
    crit = Criterion.model_validate(
        {"name": "s", "type": "ordinal", "options": [1, 2, 3, {"label": "n/a", "na": True}]}
    )
    assert crit.labels == ("1", "2", "3", "n/a")
    assert crit.code_of(2) == 1 and crit.code_of("3") == 2
    named = Criterion.model_validate(
        {"name": "t", "type": "nominal", "options": ["formal", "casual"]}
    )
    assert named.labels == ("formal", "casual")
    labels = labels_from_data(
        yaml.safe_load(
            "criteria:\n  - {name: s, type: ordinal, options: [{label: 1}, {label: 2}, {label: "
            "3}]}\n"
            "items:\n  - {id: 1, human: {s: 3}, judge: {s: 2}}\n"
        )
    )
    assert labels.human[0, 0] == 2 and labels.votes[0, 0, 0] == 1


def test_inferred_single_label_nominal_is_padded_and_said(tmp_path):
    path = tmp_path / "one.csv"
    path.write_text("item_id,criterion,human,j\n1,tone,formal,formal\n2,tone,formal,formal\n")
    labels = load_labels(path)
    assert labels.criteria[0].labels == ("formal", "(unobserved 2)")
    assert any("padded to 2 with placeholders" in note for note in labels.notes)
    result = compute_agreement(labels)
    assert result.overall.criteria[0].is_degenerate
