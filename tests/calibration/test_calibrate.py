"""``assay calibrate``: judge models over a human-labelled dataset (loopback OpenAI server)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score

from assay.cli import main
from assay.data.dataset import dataset_from_data
from assay.engine.calibration_run import calibrate_async
from assay.errors import CalibrationError, UsageError

RUBRIC = [
    {"name": "correct", "requirement": "States the right number.", "weight": 2},
    {
        "name": "tone",
        "type": "ordinal",
        "options": [{"label": "poor"}, {"label": "ok"}, {"label": "good"}],
    },
]

# answer -> (human labels, judge a verdicts, judge b verdicts)
TABLE = {
    "It is 4.": ({"correct": "MET", "tone": "good"}, ("MET", "good"), ("MET", "ok")),
    "Four, obviously, as anyone can see.": (
        {"correct": "MET", "tone": "poor"},
        ("MET", "poor"),
        ("UNMET", "poor"),
    ),
    "5": ({"correct": "UNMET", "tone": "ok"}, ("UNMET", "ok"), ("UNMET", "ok")),
    "The answer is 3.": ({"correct": "UNMET", "tone": "good"}, ("MET", "good"), ("UNMET", "good")),
    "4": ({"correct": "MET", "tone": "ok"}, ("MET", "ok"), ("CANNOT_ASSESS", "cannot assess")),
    "I think it might be 4 but maybe 5.": (
        {"correct": "UNMET", "tone": "poor"},
        ("UNMET", "ok"),
        ("UNMET", "poor"),
    ),
}


def dataset(extra: dict | None = None, **top):
    samples = [
        {
            "id": f"s{i}",
            "input": {"question": "2 + 2?"},
            "expected_output": "4",
            "metadata": {"answer": answer, "labels": labels},
        }
        for i, (answer, (labels, _, _)) in enumerate(TABLE.items())
    ]
    samples.append(
        {
            "id": "unlabelled",
            "input": {"question": "2 + 2?"},
            "expected_output": "4",
            "metadata": {"answer": "4"},
        }
    )
    return dataset_from_data(
        {"name": "calib", "rubric": RUBRIC, "samples": samples, **(extra or {}), **top}
    )


def rubric_reply(request: dict) -> str:
    prompt = request["messages"][0]["content"]
    answer = re.search(r"ANSWER: (.*)\n", prompt).group(1)
    _, a, b = TABLE[answer]
    correct, tone = a if request["model"] == "judge-a" else b
    return json.dumps({"verdicts": {"correct": correct, "tone": tone}, "reason": "r"})


async def test_rubric_calibration_two_judges(provider_settings, openai_server):
    openai_server.chat_reply = rubric_reply
    result = await calibrate_async(
        dataset(), metric="rubric", judge_models=["judge-a", "judge-b"], model_under_test="judge-b"
    )
    run = result.judge_run
    assert run.judge_models == ["judge-a", "judge-b"] and run.n_samples == 6 and run.n_failed == 0
    assert run.n_calls == 12  # the unlabelled sample is never judged
    assert any("1 sample(s) without human labels were not judged" in w for w in result.warnings)
    assert any("self-preference risk: judge model 'judge-b'" in w for w in result.warnings)
    a, b = result.per_judge
    human = [0 if labels["correct"] == "MET" else 1 for labels, _, _ in TABLE.values()]
    judge_a = [0 if x[0] == "MET" else 1 for _, x, _ in TABLE.values()]
    assert a.criteria[0].kappa == pytest.approx(cohen_kappa_score(human, judge_a, labels=[0, 1]))
    # judge b abstained once on "correct": excluded under the default mode
    assert b.criteria[0].n_samples == 5 and b.criteria[0].coverage.n_judge_abstain == 1
    tone_h = [["poor", "ok", "good"].index(lab["tone"]) for lab, _, _ in TABLE.values()]
    tone_a = [["poor", "ok", "good"].index(x[1]) for _, x, _ in TABLE.values()]
    assert a.criteria[1].weighted_kappa == pytest.approx(
        cohen_kappa_score(tone_h, tone_a, labels=[0, 1, 2], weights="quadratic")
    )
    assert result.inter_judge is not None and len(result.inter_judge) == 2
    # per-item weighted scores: judge a's own scores vs the human scores derived from labels
    values = {"MET": 1.0, "UNMET": 0.0, "poor": 0.0, "ok": 0.5, "good": 1.0}
    h_scores = [
        (2 * values[lab["correct"]] + values[lab["tone"]]) / 3 for lab, _, _ in TABLE.values()
    ]
    a_scores = [(2 * values[x[0]] + values[x[1]]) / 3 for _, x, _ in TABLE.values()]
    assert a.scores.pearson.coefficient == pytest.approx(sps.pearsonr(a_scores, h_scores).statistic)


async def test_failed_judgments_and_errored_items(provider_settings, openai_server):
    def reply(request):
        prompt = request["messages"][0]["content"]
        if "ANSWER: 5\n" in prompt:
            return "not json"
        if "ANSWER: 4\n" in prompt and request["model"] == "judge-b":
            return "not json"
        return rubric_reply(request)

    openai_server.chat_reply = reply
    result = await calibrate_async(dataset(), metric="rubric", judge_models=["judge-a", "judge-b"])
    assert result.judge_run.n_failed == 3
    assert result.n_errored_items == 1  # "5": both judges failed
    b = result.per_judge[1]
    assert b.aggregate.coverage.n_failed == 2  # "4" on both criteria
    assert any("grading errored" in w for w in result.warnings)


async def test_llm_as_judge_calibration_and_length_bias(provider_settings, openai_server):
    answers = ["a " * n for n in (2, 4, 8, 16, 32, 64)]
    human = [0.9, 0.2, 0.8, 0.3, 0.7, 0.4]
    samples = [
        {
            "id": str(i),
            "input": {"question": "q"},
            "expected_output": "x",
            "metadata": {"answer": text.strip(), "human_score": h},
        }
        for i, (text, h) in enumerate(zip(answers, human))
    ]

    def reply(request):
        prompt = request["messages"][0]["content"]
        words = len(re.search(r"ACTUAL: (.*)\n", prompt).group(1).split())
        return json.dumps({"score": min(1.0, words / 64), "reason": "longer is better"})

    openai_server.chat_reply = reply
    ds = dataset_from_data({"name": "j", "samples": samples})
    result = await calibrate_async(ds, metric="llm-as-judge")
    judge = np.array([min(1.0, len(t.split()) / 64) for t in answers])
    assert result.overall.scores.spearman.coefficient == pytest.approx(
        sps.spearmanr(judge, human).statistic
    )
    assert result.overall.scores.bias.p_value == pytest.approx(sps.ttest_rel(judge, human).pvalue)
    passed_h = [0 if h >= 0.5 else 1 for h in human]
    passed_j = [0 if j >= 0.5 else 1 for j in judge]
    assert result.overall.criteria[0].kappa == pytest.approx(
        cohen_kappa_score(passed_h, passed_j, labels=[0, 1])
    )
    assert any("possible length bias" in w for w in result.warnings)
    assert any("Spearman(answer words, human score)" in w for w in result.warnings)


async def test_calibration_input_errors(provider_settings):
    with pytest.raises(CalibrationError, match=r"sample 's0': field 'metadata.labels.tone'"):
        bad = dataset()
        sample = bad.samples[0].model_copy(
            update={"metadata": {"answer": "x", "labels": {"tone": "great"}}}
        )
        await calibrate_async(bad.model_copy(update={"samples": [sample]}), metric="rubric")
    no_rubric = dataset_from_data(
        {
            "name": "n",
            "samples": [
                {
                    "id": "1",
                    "input": {},
                    "expected_output": "x",
                    "metadata": {"answer": "a", "labels": {"c": "MET"}},
                }
            ],
        }
    )
    with pytest.raises(UsageError, match="needs a rubric"):
        await calibrate_async(no_rubric, metric="rubric")
    with pytest.raises(CalibrationError, match="no sample carries human labels"):
        await calibrate_async(no_rubric, metric="llm-as-judge")
    missing_answer = dataset_from_data(
        {
            "name": "n",
            "rubric": RUBRIC,
            "samples": [
                {
                    "id": "1",
                    "input": {},
                    "expected_output": "x",
                    "metadata": {"labels": {"correct": "MET"}},
                }
            ],
        }
    )
    with pytest.raises(CalibrationError, match=r"metadata\.answer"):
        await calibrate_async(missing_answer, metric="rubric")


def test_cli_calibrate_gate_and_json(openai_server, tmp_path, monkeypatch, capsys):
    from assay.providers import registry

    openai_server.chat_reply = rubric_reply
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ASSAY_JUDGE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ASSAY_BASE_URL", openai_server.url)
    monkeypatch.setenv("ASSAY_API_KEY", "sk-test-not-real")
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "calib.json"
    path.write_text(json.dumps(dataset().model_dump(mode="json", exclude_none=True)))
    registry.reset()
    try:

        def run(*args: str) -> int:
            try:
                main(["calibrate", str(path), "--judge-model", "judge-a", *args])
            except SystemExit as exc:
                return int(exc.code or 0)
            return 0

        assert run("--format", "json", "--min-agreement", "0.5") == 0
        captured = capsys.readouterr()
        document = json.loads(captured.out)
        assert document["judge_run"]["judge_models"] == ["judge-a"]
        assert "judged 6 samples with 1 judge model(s)" in captured.err
        assert run("--min-kappa", "0.99") == 1
        assert "gate failed" in capsys.readouterr().err
        assert run("--metric", "bleu") == 2
        assert "--metric must be rubric or llm-as-judge" in capsys.readouterr().err
        # the second run replays every judge call from the cache
        assert run("--format", "json") == 0
        assert json.loads(capsys.readouterr().out)["judge_run"]["n_cached"] == 6
    finally:
        registry.reset()


def test_cli_calibrate_without_key_or_base_url_is_one_usage_error(tmp_path, monkeypatch, capsys):
    """As `assay run` with a judge metric: exit 2 naming what is missing, before any call."""
    for name in ("OPENAI_API_KEY", "ASSAY_API_KEY", "OPENAI_BASE_URL", "ASSAY_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "calib.json"
    path.write_text(json.dumps(dataset().model_dump(mode="json", exclude_none=True)))
    with pytest.raises(SystemExit) as exit_info:
        main(["calibrate", str(path), "--judge-model", "judge-a"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "neither an API key" in err and "judged" not in err


def test_cli_calibrate_passes_concurrency_on(tmp_path, monkeypatch, capsys):
    """`--concurrency N` reaches the judging workflow (it was checked, then dropped)."""
    from assay.engine import calibration_run as workflow
    from assay.errors import UsageError

    seen: dict[str, object] = {}

    def fake_calibrate(loaded, **options):
        seen.update(options)
        raise UsageError("stop here")

    monkeypatch.setattr(workflow, "calibrate", fake_calibrate)
    path = tmp_path / "calib.json"
    path.write_text(json.dumps(dataset().model_dump(mode="json", exclude_none=True)))
    with pytest.raises(SystemExit) as exit_info:
        main(["calibrate", str(path), "--judge-model", "judge-a", "--concurrency", "3"])
    assert exit_info.value.code == 2
    assert seen["concurrency"] == 3
