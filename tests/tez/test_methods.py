"""The evaluation methods of seed 004 besides the judge: human_in_loop, hybrid, nli_based.

They run on the shipped example (examples/tez: the CC BY 4.0 interop-level-3 bundle, a
six-turn session and a reviewer's verdict file). Expected numbers are counted by hand from
the session's claims, not taken from assay's output.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from assay.cli import main
from assay.errors import TezError, UsageError
from assay.tez.bundle import open_bundle
from assay.tez.evaluate import MethodOptions, score_session
from assay.tez.judge import JudgeReply
from assay.tez.nli import windows
from assay.tez.session import load_session
from tez.helpers import REPO

EXAMPLES = REPO / "examples" / "tez"
BUNDLE = EXAMPLES / "novatech"
SESSION = EXAMPLES / "session.json"
VERDICTS = EXAMPLES / "verdicts.yml"
VENDOR_SCHEMA = REPO / "src" / "assay" / "schemas"


def _run(*args: str) -> int:
    try:
        main(["tez", "score", *args])
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def _by_query(evaluation: Any) -> dict[str, Any]:
    return {s.turn.query_id: s for s in evaluation.scores}


# --------------------------------------------------------------------------- human_in_loop


def test_human_verdicts_decide_every_claim() -> None:
    evaluation = score_session(
        open_bundle(BUNDLE),
        load_session(SESSION),
        method="human_in_loop",
        options=MethodOptions(reviews=VERDICTS),
    )
    scores = _by_query(evaluation)
    reviews = yaml.safe_load(VERDICTS.read_text())
    for query_id, score in scores.items():
        mine = [v for v in reviews["verdicts"] if v["query_id"] == query_id]
        assert len(score.claims) == len(mine)
        grounded = sum(v["grounded"] for v in mine) / len(mine)
        faithful = sum(v.get("faithful", v["grounded"]) for v in mine) / len(mine)
        assert score.groundedness == pytest.approx(grounded)
        assert score.faithfulness == pytest.approx(faithful)
    assert scores["grounded-02"].groundedness == 0.0
    assert scores["grounded-02"].faithfulness == 1.0
    assert scores["hallucination-trap-01"].relevance == 0.0  # from the file
    first = scores["grounded-01"].claims[0]
    assert first.source_items == ("market-landscape",)
    assert evaluation.evaluator.evaluation_method == "human_in_loop"
    assert evaluation.evaluator.model == "example-reviewer"
    assert evaluation.evaluator.model_version == "2026-11-23"


def _write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "verdicts.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_missing_verdict_is_exit_2_naming_file_query_and_claim(tmp_path, capsys) -> None:
    data = yaml.safe_load(VERDICTS.read_text())
    data["verdicts"] = [v for v in data["verdicts"] if v != data["verdicts"][3]]
    path = _write(tmp_path, data)
    code = _run(
        str(BUNDLE), "-s", str(SESSION), "--method", "human_in_loop", "--verdicts", str(path)
    )
    err = capsys.readouterr().err
    assert code == 2
    assert str(path) in err and "grounded-03" in err and "claim 2" in err
    assert "Traceback" not in err


def test_stale_claim_text_is_refused(tmp_path) -> None:
    data = yaml.safe_load(VERDICTS.read_text())
    for v in data["verdicts"]:
        if v["query_id"] == "grounded-01" and v["claim"] == 1:
            v["text"] = "The market is worth $42.5 billion."
    with pytest.raises(TezError, match="not the reviewed"):
        score_session(
            open_bundle(BUNDLE),
            load_session(SESSION),
            method="human_in_loop",
            options=MethodOptions(reviews=_write(tmp_path, data)),
        )


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"verdicts": [{"query_id": "q", "claim": 0, "grounded": True}]}, "verdicts"),
        ({"verdicts": [{"query_id": "q", "claim": 1, "grounded": "yes"}]}, "grounded"),
        ({"relevance": {"grounded-01": 1.5}}, "relevance"),
        ({"surprise": 1}, "surprise"),
    ],
)
def test_bad_verdict_files_name_the_field(tmp_path, change, match) -> None:
    data = {**yaml.safe_load(VERDICTS.read_text()), **change}
    with pytest.raises(TezError, match=match):
        score_session(
            open_bundle(BUNDLE),
            load_session(SESSION),
            method="human_in_loop",
            options=MethodOptions(reviews=_write(tmp_path, data)),
        )


def test_verdicts_for_another_session_are_refused(tmp_path) -> None:
    data = {**yaml.safe_load(VERDICTS.read_text()), "session_id": "another"}
    with pytest.raises(UsageError, match="another"):
        score_session(
            open_bundle(BUNDLE),
            load_session(SESSION),
            method="human_in_loop",
            options=MethodOptions(reviews=_write(tmp_path, data)),
        )


def test_human_records_written_into_the_bundle_validate(tmp_path) -> None:
    bundle = shutil.copytree(BUNDLE, tmp_path / "novatech")
    code = _run(
        str(bundle), "-s", str(SESSION), "--method", "human_in_loop",
        "--verdicts", str(VERDICTS), "--write",
    )  # fmt: skip
    assert code == 0
    record = json.loads(
        (bundle / "extensions" / "com.ragu.eval-metrics" / "eval-metrics.json").read_text()
    )
    assert record["evaluator"]["evaluation_method"] == "human_in_loop"
    schema = json.loads((VENDOR_SCHEMA / "tez-eval-metrics.schema.json").read_text())
    jsonschema.validate(record, schema)


# --------------------------------------------------------------------------- hybrid

# claims whose citations resolve but hold none of the claim's numbers: grounded-02's three
# wrongly cited claims and the fabricated CTO quote. Every other claim is lexically backed.
UNDECIDED = {
    "DocVision v2.3 achieves 94.7% F1 on FUNSD",
    "ahead of ABBYY FineReader 16 at 91.2% and Hyperscience v4.2 at 93.1%.",
    "It also scores 87.3% ANLS on DocVQA, leading Hyperscience by 2.4 points.",
    "The CTO said the team chose a multi-modal transformer because it beat a CNN baseline by "
    "12 points on DocVQA.",
}


def test_hybrid_asks_the_judge_only_what_the_heuristic_cannot_decide() -> None:
    asked: list[str] = []

    async def judge(messages: Any) -> JudgeReply:
        prompt = messages[-1]["content"]
        claim = re.search(r"Claim:\n<<<(.*?)>>>", prompt, re.S).group(1)
        asked.append(claim)
        return JudgeReply(json.dumps({"supported_by": [], "faithful": "CTO" not in claim}))

    evaluation = score_session(
        open_bundle(BUNDLE),
        load_session(SESSION),
        method="hybrid",
        options=MethodOptions(judge=judge, judge_model="fake"),
    )
    assert set(asked) == UNDECIDED and len(asked) == len(UNDECIDED)
    scores = _by_query(evaluation)
    assert scores["grounded-02"].groundedness == 0.0
    assert scores["grounded-02"].faithfulness == 1.0  # the judge: right facts, wrong place
    assert scores["hallucination-trap-01"].faithfulness == 0.0
    assert scores["cross-reference-01"].groundedness == 1.0  # heuristic, no judge call
    assert evaluation.evaluator.evaluation_method == "hybrid"
    assert any("judge decided 4 of 14 claim(s)" in w for w in evaluation.warnings)


def test_hybrid_judge_support_grounds_a_claim() -> None:
    async def judge(messages: Any) -> JudgeReply:
        return JudgeReply(json.dumps({"supported_by": [1], "faithful": True}))

    evaluation = score_session(
        open_bundle(BUNDLE),
        load_session(SESSION),
        method="hybrid",
        options=MethodOptions(judge=judge),
    )
    assert _by_query(evaluation)["grounded-02"].groundedness == 1.0


# --------------------------------------------------------------------------- nli_based


def _facts(text: str) -> set[str]:
    """Numbers and capitalised words past the first (names, acronyms)."""
    names = re.findall(r"\b[A-Z][A-Za-z]+", text)[1:]
    return set(re.findall(r"\d+(?:\.\d+)?", text)) | set(names)


def fake_nli(pairs):
    """Entailment 0.9 when the premise holds every number and name of the hypothesis."""
    return [0.9 if _facts(h) and _facts(h) <= _facts(p) else 0.1 for p, h in pairs]


def test_nli_scores_claims_from_entailment() -> None:
    seen: list[tuple[str, str]] = []

    def nli(pairs):
        seen.extend(pairs)
        return fake_nli(pairs)

    evaluation = score_session(
        open_bundle(BUNDLE),
        load_session(SESSION),
        method="nli_based",
        options=MethodOptions(nli=nli, nli_model="fake-nli"),
    )
    scores = _by_query(evaluation)
    assert scores["grounded-01"].groundedness == 1.0
    assert scores["grounded-03"].groundedness == 1.0
    assert scores["grounded-02"].groundedness == 0.0  # the cited passages lack the numbers
    assert scores["hallucination-trap-01"].faithfulness == 0.0
    assert all(len(p) <= 1000 for p, _ in seen)
    assert evaluation.evaluator.evaluation_method == "nli_based"
    assert evaluation.evaluator.model == "fake-nli"


def test_threshold_decides() -> None:
    strict = score_session(
        open_bundle(BUNDLE),
        load_session(SESSION),
        method="nli_based",
        options=MethodOptions(nli=fake_nli, nli_threshold=0.95),
    )
    assert all(s.groundedness == 0.0 for s in strict.scores if s.claims)


def test_windows_cover_the_text_within_the_limit() -> None:
    text = " ".join(f"Sentence {i} says something." for i in range(200))
    parts = windows(text, 120)
    assert all(len(p) <= 120 for p in parts)
    assert " ".join(parts).split() == text.split()
    assert windows("x" * 250, 100) == ["x" * 100, "x" * 100, "x" * 50]


def test_nli_without_the_extra_is_a_usage_error(monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    code = _run(str(BUNDLE), "-s", str(SESSION), "--method", "nli_based", "--nli-model", "x")
    err = capsys.readouterr().err
    assert code == 2 and "assay[nli]" in err


def test_nli_without_a_model_is_a_usage_error(capsys) -> None:
    assert _run(str(BUNDLE), "-s", str(SESSION), "--method", "nli_based") == 2
    assert "--nli-model" in capsys.readouterr().err


def _tiny_nli_model(root: Path, favour: str) -> Path:
    """A 1-layer BERT cross-encoder built here (no download) whose output favours one label."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    labels = {0: "contradiction", 1: "entailment", 2: "neutral"}
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"abcdefghijklmnopqrstuvwxyz0123456789"]
    root.mkdir()
    (root / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tokenizer = transformers.BertTokenizerFast(vocab_file=str(root / "vocab.txt"))
    config = transformers.BertConfig(
        vocab_size=len(vocab), hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=16, num_labels=3, id2label=labels,
        label2id={v: k for k, v in labels.items()},
    )  # fmt: skip
    model = transformers.BertForSequenceClassification(config)
    bias = torch.zeros(3)
    bias[next(k for k, v in labels.items() if v == favour)] = 6.0
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.copy_(bias)
    model.save_pretrained(root)
    tokenizer.save_pretrained(root)
    return root


def test_a_real_cross_encoder_loads_and_its_labels_are_read(tmp_path) -> None:
    pytest.importorskip("sentence_transformers")
    from assay.tez.nli import load_cross_encoder

    entails = load_cross_encoder(str(_tiny_nli_model(tmp_path / "yes", "entailment")))
    refutes = load_cross_encoder(str(_tiny_nli_model(tmp_path / "no", "contradiction")))
    pair = [("the market is 18.7 billion", "the market is 18.7 billion")]
    assert entails.score(pair)[0] > 0.99
    assert refutes.score(pair)[0] < 0.01
    bundle, session = open_bundle(BUNDLE), load_session(SESSION)
    yes = score_session(
        bundle, session, method="nli_based", options=MethodOptions(nli_model=str(tmp_path / "yes"))
    )
    no = score_session(
        bundle, session, method="nli_based", options=MethodOptions(nli_model=str(tmp_path / "no"))
    )
    # entailing everything grounds every claim with a located context citation: all 14
    assert sum(len(s.claims) for s in yes.scores) == 14
    assert all(s.groundedness == 1.0 for s in yes.scores)
    assert all(s.groundedness == 0.0 and s.faithfulness == 0.0 for s in no.scores)
    assert yes.evaluator.model == str(tmp_path / "yes")


def test_a_model_without_an_entailment_label_is_refused(tmp_path) -> None:
    pytest.importorskip("sentence_transformers")
    from assay.tez.nli import load_cross_encoder

    path = _tiny_nli_model(tmp_path / "m", "entailment")
    config = json.loads((path / "config.json").read_text())
    config["id2label"] = {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"}
    config["label2id"] = {"LABEL_0": 0, "LABEL_1": 1, "LABEL_2": 2}
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(UsageError, match="entail"):
        load_cross_encoder(str(path))


def test_example_verdicts_validate_against_the_shipped_schema() -> None:
    schema = json.loads((VENDOR_SCHEMA / "tez-human-verdicts.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(yaml.safe_load(VERDICTS.read_text()))
