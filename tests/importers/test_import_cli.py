"""``assay import``: each tool's file, written to that tool's documented format (data/), becomes a
document assay's own loaders accept (``assay validate``, ``assay agreement``), carries the
values over exactly, and lists what it could not map. Bad input ends as exit 2 with one line.

The fixtures follow the formats as each tool documents or writes them: autorubric's
``RubricDataset.to_json`` and ``ItemResult.to_dict`` lines (items.jsonl), padosoft's
``eval-harness.calibration.v1`` cases, promptfoo's ``tests`` (config, ``file://`` CSV with
``__expected``), DeepEval's ``EvaluationDataset.save_as(file_type="json")`` goldens.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml

from assay.cli import main
from assay.providers import registry
from openai_server import OpenAIServer

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("ASSAY_"):
            monkeypatch.delenv(name)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    captured = capsys.readouterr()
    code = info.value.code
    return (0 if code is None else int(code)), captured.out, captured.err


def imported(capsys: pytest.CaptureFixture[str], *args: str, out: str) -> tuple[dict, str]:
    """Run ``assay import ARGS -o out``, check exit 0 and that ``assay validate`` accepts it."""
    code, _, err = run(capsys, "import", *args, "-o", out)
    assert code == 0, err
    if "labels" not in out:
        code, stdout, verr = run(capsys, "validate", out)
        assert code == 0, verr
        assert stdout.startswith(f"{out}: ok")
    text = Path(out).read_text(encoding="utf-8")
    return (json.loads(text) if out.endswith(".json") else yaml.safe_load(text)), err


def test_autorubric_dataset(capsys: pytest.CaptureFixture[str]) -> None:
    doc, err = imported(capsys, "autorubric", str(DATA / "autorubric_dataset.json"), out="d.yml")
    rubric = doc["rubric"]
    # autorubric's defaults written out: an unnamed criterion is C<n>, weights kept as given
    assert [c["name"] for c in rubric] == ["window", "C2", "tone"]
    assert [c["weight"] for c in rubric] == [10.0, -5.0, 4.0]
    assert rubric[2]["type"] == "ordinal"
    assert [o["label"] for o in rubric[2]["options"]] == ["rude", "neutral", "warm"]
    samples = {s["id"]: s for s in doc["samples"]}
    assert list(samples) == ["0", "1", "2", "3"]
    assert samples["0"]["metadata"]["labels"] == {"window": "MET", "C2": "UNMET", "tone": "warm"}
    # an option index in the ground truth becomes its label; item-level prompt/reference win
    assert samples["2"]["metadata"]["labels"]["tone"] == "rude"
    assert samples["2"]["input"] == {"prompt": "Can I return my jacket?"}
    assert samples["1"]["expected_output"] == "30 days from delivery."
    assert samples["1"]["metadata"]["answer"] == "30 days, minus a 10% restocking fee."
    assert "labels" not in samples["3"]["metadata"]
    assert "field 'guidelines' is not mapped" in err
    assert "criterion 'tone': field 'aggregation' is not mapped" in err


def test_autorubric_single_judge_results_agree_as_counted_by_hand(
    capsys: pytest.CaptureFixture[str],
) -> None:
    dataset = str(DATA / "autorubric_dataset.json")
    results = str(DATA / "autorubric_items_single.jsonl")
    doc, err = imported(capsys, "autorubric", results, "--dataset", dataset, out="labels.yml")
    items = {i["id"]: i for i in doc["items"]}
    assert doc["judges"] == ["default"]
    assert items["2"]["judges"]["default"]["window"] == {"error": "parse: not JSON"}
    # the judge picked the NA option autorubric appends (index 3 of 3 options)
    assert items["1"]["judges"]["default"]["tone"] == "Cannot assess / not applicable"
    assert doc["criteria"][2]["options"][-1] == {
        "label": "Cannot assess / not applicable",
        "value": 0.0,
        "na": True,
    }
    assert "1 dataset item(s) have no result" in err
    code, out, _ = run(capsys, "agreement", "labels.yml", "--format", "json")
    assert code == 0
    aggregate = json.loads(out)["overall"]["aggregate"]
    # by hand from the fixture: window 2/2 (item 2 failed), C2 2/3, tone 2/2 (item 1 NA,
    # excluded): 6 of 7 pairs agree; binary pooled 4 of 5
    assert aggregate["accuracy_micro"] == pytest.approx(6 / 7)
    assert aggregate["binary_micro"]["accuracy"] == pytest.approx(4 / 5)


def test_autorubric_ensemble_results_from_the_experiment_directory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    experiment = tmp_path / "experiments" / "brave-otter"
    experiment.mkdir(parents=True)
    shutil.copy(DATA / "autorubric_items_ensemble.jsonl", experiment / "items.jsonl")
    dataset = str(DATA / "autorubric_dataset.json")
    doc, _ = imported(
        capsys, "autorubric", str(experiment), "--dataset", dataset, out="labels.json"
    )
    first, errored = doc["items"]
    assert doc["judges"] == ["gpt", "claude"]
    assert first["judges"]["claude"]["tone"] == "neutral"
    assert first["consensus"] == {"window": "MET", "C2": "UNMET", "tone": "warm"}
    assert first["judge_scores"] == {"gpt": 1.0, "claude": 1.0}
    assert errored["error"] == "RuntimeError: rate limited"
    code, out, _ = run(capsys, "agreement", "labels.json", "--format", "json")
    assert code == 0
    # item 2 errored (excluded); on item 0 the consensus agrees with every human label
    assert json.loads(out)["overall"]["aggregate"]["accuracy_micro"] == pytest.approx(1.0)


def test_autorubric_results_need_their_dataset(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "import", "autorubric", str(DATA / "autorubric_items_single.jsonl"))
    assert code == 2
    assert "pass --dataset FILE" in err


def test_padosoft_calibration_cases(capsys: pytest.CaptureFixture[str]) -> None:
    doc, err = imported(
        capsys, "padosoft-calibration", str(DATA / "padosoft_cases.yml"), out="c.json"
    )
    first, second = doc["samples"]
    assert first["id"] == "refund-window"
    assert first["expected_output"] == "30 days"
    assert first["metadata"] == {
        "answer": "You can return items within 30 days.",
        "human_pass": True,
        "human_score": 1.0,
    }
    assert second["id"] == "7"
    assert second["metadata"]["human_pass"] is False
    assert "case '7': field 'reviewer' is not mapped" in err


def test_padosoft_bad_verdict_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "cases.yml"
    bad.write_text(
        "cases:\n  - {id: a, input: {}, expected: x, actual: y, human_verdict: maybe}\n",
        encoding="utf-8",
    )
    code, _, err = run(capsys, "import", "padosoft-calibration", str(bad))
    assert code == 2
    assert err.count("\n") == 1
    assert "sample 'a'" in err and "human_verdict" in err


def test_promptfoo_tests(capsys: pytest.CaptureFixture[str]) -> None:
    doc, err = imported(capsys, "promptfoo", str(DATA / "promptfooconfig.yaml"), out="p.yml")
    assert doc["description"] == "Support bot regression suite"
    samples = {s["id"]: s for s in doc["samples"]}
    assert list(samples) == [
        "capital-of-france",
        "arithmetic",
        "polite-refusal",
        "similar-wording",
        "test-5",
        "capital-of-japan",  # from the file:// CSV
        "test-7",
    ]
    assert samples["capital-of-france"]["input"] == {
        "shop": "Larkspur",  # defaultTest vars
        "question": "What is the capital of France?",
    }
    metrics = {m.get("as", m["name"]): m for m in doc["metrics"]}
    assert metrics["contains-2"]["case_sensitive"] is False
    assert metrics["llm-as-judge"]["threshold"] == 0.8
    assert metrics["cosine-embedding"]["threshold"] == 0.75
    assert samples["test-5"]["expected_output"] == "/ORD-\\d{6}/"
    assert samples["test-7"]["expected_output"] == "hello"  # a bare __expected is equals
    assert samples["test-7"]["metadata"]["tags"] == ["pf-exact-match"]
    for line in (
        "config: field 'prompts' is not mapped",
        "assertion type 'is-json' has no assay metric",
        "assertion type 'javascript' has no assay metric",
        "test 'similar-wording' assert[2]: 'contains' has a second expected value",
    ):
        assert line in err


def test_promptfoo_scores_what_it_mapped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The imported dataset runs: each lexical entry scores the samples its tag scopes."""
    doc, _ = imported(capsys, "promptfoo", str(DATA / "promptfooconfig.yaml"), out="p.yml")
    lexical = ("contains", "exact-match", "regex")  # the others need a judge or embeddings
    doc["metrics"] = [m for m in doc["metrics"] if m["name"] in lexical]
    Path("p.yml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    answers = {
        "capital-of-france": "It is paris.",  # contains fails (case), icontains passes
        "arithmetic": "4",
        "polite-refusal": "No.",
        "similar-wording": "30 days.",
        "test-5": "Your order is ORD-123456",
        "capital-of-japan": "Tokyo",
        "test-7": "hi",
    }
    (tmp_path / "o.json").write_text(json.dumps({"outputs": answers}), encoding="utf-8")
    code, out, _ = run(capsys, "run", "p.yml", "--outputs", "o.json", "--no-store", "-f", "json")
    assert code == 0
    scores = {
        (row["id"], metric): cell["score"]
        for row in json.loads(out)["rows"]
        for metric, cell in row["scores"].items()
    }
    assert scores == {
        ("capital-of-france", "contains"): 0.0,
        ("capital-of-france", "contains-2"): 1.0,
        ("arithmetic", "exact-match"): 1.0,
        ("test-5", "regex"): 1.0,
        ("capital-of-japan", "contains"): 1.0,
        ("test-7", "exact-match"): 0.0,
    }


def test_deepeval_goldens_and_outputs(capsys: pytest.CaptureFixture[str]) -> None:
    doc, err = imported(
        capsys,
        "deepeval",
        str(DATA / "deepeval_goldens.json"),
        "--outputs",
        "out.json",
        out="g.yml",
    )
    first, second = doc["samples"]
    assert first["id"] == "refund-window"
    assert first["input"] == {"question": "How long do I have to return a jacket?"}
    assert first["metadata"]["trajectory"] == {"tools": ["lookup_policy"]}
    assert first["metadata"]["tags"] == ["policy"]
    assert first["metadata"]["context"] == ["Policy: 30-day returns."]
    assert second["id"] == "golden-2"
    saved = json.loads(Path("out.json").read_text(encoding="utf-8"))
    assert saved["outputs"] == [
        {
            "id": "refund-window",
            "output": "You have 30 days.",
            "contexts": ["Returns are accepted within 30 days of delivery."],
            "trajectory": {
                "tool_calls": [{"name": "lookup_policy", "arguments": {"topic": "returns"}}]
            },
        }
    ]
    assert "golden 2: a multi-turn (conversational) golden is not mapped" in err
    assert "field 'source_file' is not mapped" in err


@pytest.mark.parametrize(
    ("source", "text", "needle"),
    [
        ("deepeval", "{}", "expected a non-empty list of DeepEval goldens"),
        ("deepeval", '[{"expected_output": "x"}]', "field 'input'"),
        ("promptfoo", "tests: 5", "expected a non-empty list of promptfoo test cases"),
        ("promptfoo", "tests: [{assert: [{value: 1}]}]", "field 'type'"),
        ("autorubric", '{"rubric": [], "items": [{"submission": "a"}]}', "no criteria found"),
        ("autorubric", '{"x": 1}', "neither an autorubric dataset"),
        ("padosoft-calibration", "cases: []", "field 'cases'"),
        ("promptfoo", "[1, 2", "line"),
    ],
)
def test_bad_files_end_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, source: str, text: str, needle: str
) -> None:
    path = tmp_path / ("in.json" if text[0] in "[{" else "in.yml")
    path.write_text(text, encoding="utf-8")
    code, _, err = run(capsys, "import", source, str(path), "-o", "x.yml")
    assert code == 2
    assert err.count("\n") == 1, err
    assert needle in err
    assert "Traceback" not in err
    assert not Path("x.yml").exists()


def test_ground_truth_must_name_an_option(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = json.loads((DATA / "autorubric_dataset.json").read_text(encoding="utf-8"))
    data["items"][0]["ground_truth"] = ["MET", "UNMET", "superb"]
    path = tmp_path / "d.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    code, _, err = run(capsys, "import", "autorubric", str(path))
    assert code == 2
    assert "sample #0: field 'ground_truth[2]'" in err and "'superb' is not an option" in err


def test_unknown_source(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "import", "ragas", str(DATA / "deepeval_goldens.json"))
    assert code == 2
    assert "sources are autorubric, padosoft-calibration, promptfoo, deepeval" in err


# autorubric MetricsResult fields as its metrics page (seed 002) documents them
AUTORUBRIC_FIELDS = {
    "criterion_accuracy", "criterion_precision", "criterion_recall", "criterion_f1",
    "mean_kappa", "macro_accuracy", "micro_kappa", "criterion_phi",
    "mean_krippendorff_alpha", "cannot_assess_mode", "na_mode", "n_samples", "coverage_stats",
    "per_criterion", "score_rmse", "score_mae", "score_spearman", "score_kendall",
    "score_pearson", "bias", "bootstrap", "per_judge", "n_items", "n_criteria",
    "n_binary_criteria", "n_ordinal_criteria", "n_nominal_criteria", "na_stats",
    "cannot_assess_stats", "warnings",
}  # fmt: skip


def test_agreement_in_autorubric_field_names(capsys: pytest.CaptureFixture[str]) -> None:
    from sklearn.metrics import cohen_kappa_score

    dataset = str(DATA / "autorubric_dataset.json")
    results = str(DATA / "autorubric_items_single.jsonl")
    imported(capsys, "autorubric", results, "--dataset", dataset, out="labels.yml")
    code, out, _ = run(capsys, "agreement", "labels.yml", "--format", "autorubric")
    assert code == 0
    doc = json.loads(out)
    assert set(doc) == AUTORUBRIC_FIELDS | {"schema_version"}
    # autorubric's criterion_accuracy pools the binary criteria of a mixed rubric: 4 of 5
    assert doc["criterion_accuracy"] == pytest.approx(4 / 5)
    assert doc["macro_accuracy"] == pytest.approx((1 + 2 / 3 + 1) / 3)
    # mean_kappa: Cohen's kappa of C2 and the quadratic-weighted kappa of tone (window is
    # single-class, undefined), computed here by scikit-learn on the pairs of the fixture
    c2 = cohen_kappa_score(["UNMET", "MET", "UNMET"], ["UNMET", "UNMET", "UNMET"])
    tone = cohen_kappa_score([2, 0], [2, 0], weights="quadratic", labels=[0, 1, 2, 3])
    assert doc["mean_kappa"] == pytest.approx((c2 + tone) / 2)
    window, fee, tone_row = doc["per_criterion"]
    assert window["kappa"] is None and window["is_degenerate"] is True
    assert fee["confusion_matrix"] == {"matrix": [[0, 1], [0, 2]], "labels": ["MET", "UNMET"]}
    assert tone_row["criterion_type"] == "ordinal" and tone_row["exact_accuracy"] == 1.0
    assert doc["na_stats"]["na_count_pred"] == 1 and doc["na_stats"]["na_false_positive"] == 1
    assert doc["per_judge"] is None  # one judge: autorubric fills per_judge for ensembles


def test_imported_rubric_dataset_calibrates(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The dataset imported from autorubric runs through ``assay calibrate --metric rubric``
    against the loopback server: the three labelled items are judged, the fourth is not."""
    imported(capsys, "autorubric", str(DATA / "autorubric_dataset.json"), out="d.yml")
    verdicts = {"window": "MET", "C2": "UNMET", "tone": "warm"}
    with OpenAIServer() as server:
        server.chat_reply = lambda _: json.dumps({"verdicts": verdicts, "reason": "r"})
        monkeypatch.setenv("ASSAY_BASE_URL", server.url)
        monkeypatch.setenv("ASSAY_API_KEY", "sk-test-not-real")
        monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "cache"))
        registry.reset()
        try:
            code, out, err = run(capsys, "calibrate", "d.yml", "--judge-model", "j", "-f", "json")
        finally:
            registry.reset()
    assert code == 0, err
    result = json.loads(out)
    assert result["judge_run"]["n_samples"] == 3
    # the same verdicts for every item against the fixture's labels: item 0 agrees on all 3
    # criteria, item 1 on window only, item 2 on C2 only: 5 of 9
    assert result["overall"]["aggregate"]["accuracy_micro"] == pytest.approx(5 / 9)
