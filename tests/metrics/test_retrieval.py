"""Retrieval-ranking metrics, checked against trec_eval (``pytrec_eval``) on random runs.

pytrec_eval counts a document as relevant when its qrel level is >= ``relevance_level``
(default 1). With integer gains that is exactly assay's rule "relevant = gain > 0", so the
default is kept and the tests give it integer levels only. nDCG in trec_eval uses the qrel
level itself as the gain (linear); exponential gains ``2^g - 1`` are checked by handing
trec_eval the transformed (still integer) levels, and against a small numpy formula.
"""

from __future__ import annotations

import json
import math
import random
from typing import Any

import numpy as np
import pytest
import pytrec_eval

from assay.data.dataset import Sample
from assay.data.outputs import Output, Retrieved, coerce_output
from assay.errors import MetricConfigError, MetricError
from assay.metrics.registry import resolve
from assay.metrics.retrieval import (
    MRR,
    AnswerContainmentAtK,
    HitAtK,
    NDCGAtK,
    RecallAtK,
    gains,
    ranked,
    resolve_k,
)

CUTOFFS = list(range(1, 26))
MEASURES = {
    "success." + ",".join(map(str, CUTOFFS)),
    "recall." + ",".join(map(str, CUTOFFS)),
    "ndcg_cut." + ",".join(map(str, CUTOFFS)),
    "P." + ",".join(map(str, CUTOFFS)),
    "recip_rank",
}


def sample(expected: Any, **metadata: Any) -> Sample:
    return Sample(id="q", input={}, expected_output=expected, metadata=metadata)


def ids_output(*ids: str) -> Output:
    return Output("", tuple(Retrieved(i) for i in ids))


# --------------------------------------------------------------------------- random queries


def random_query(rng: random.Random, graded: bool) -> tuple[dict[str, int], list[str], int]:
    """(qrels id -> level, ranked ids, k). At least one level is > 0."""
    pool = [f"d{n}" for n in range(rng.randint(2, 60))]
    judged = rng.sample(pool, rng.randint(1, len(pool)))
    levels = [0, 1, 2, 3] if graded else [0, 1]
    qrels = {doc: rng.choice(levels) for doc in judged}
    if not any(level > 0 for level in qrels.values()):
        qrels[rng.choice(judged)] = rng.choice(levels[1:])
    ranking = rng.sample(pool, rng.randint(1, len(pool)))
    return qrels, ranking, rng.choice(CUTOFFS)


def expected_for(qrels: dict[str, int], rng: random.Random, graded: bool) -> Any:
    """The same judgements in one of the shapes assay accepts."""
    shape = rng.random()
    if not graded and shape < 0.4:  # a plain list of relevant ids (gain 1 each)
        return [doc for doc, level in qrels.items() if level > 0]
    if shape < 0.6:
        return json.dumps(qrels)  # a JSON string of the gain map
    return dict(qrels)


def with_k(rng: random.Random, k: int) -> tuple[dict[str, Any], int | None]:
    """Pass k through metadata (int or digit string) or through the metric option."""
    roll = rng.random()
    if roll < 0.4:
        return {"k": k}, None
    if roll < 0.6:
        return {"k": str(k)}, None
    return {}, k


def trec_scores(
    queries: list[tuple[dict[str, int], list[str], int]],
) -> dict[str, dict[str, float]]:
    qrels = {f"q{n}": dict(q) for n, (q, _, _) in enumerate(queries)}
    # strictly decreasing scores: the rank order is unambiguous for trec_eval's sort
    run = {
        f"q{n}": {doc: float(len(ranking) - rank) for rank, doc in enumerate(ranking)}
        for n, (_, ranking, _) in enumerate(queries)
    }
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, MEASURES)
    return evaluator.evaluate(run)


@pytest.mark.parametrize("graded", [False, True], ids=["binary", "graded"])
def test_ranking_metrics_agree_with_pytrec_eval(graded: bool) -> None:
    rng = random.Random(7 if graded else 11)
    queries = [random_query(rng, graded) for _ in range(1200)]
    reference = trec_scores(queries)
    for n, (qrels, ranking, k) in enumerate(queries):
        theirs = reference[f"q{n}"]
        expected = expected_for(qrels, rng, graded)
        metadata, option = with_k(rng, k)
        s = sample(expected, **metadata)
        out = ids_output(*ranking)

        hit = HitAtK(k=option).score(s, out).value
        assert hit == theirs[f"success_{k}"]
        assert hit == (1.0 if theirs[f"P_{k}"] > 0 else 0.0)
        assert RecallAtK(k=option).score(s, out).value == pytest.approx(
            theirs[f"recall_{k}"], abs=1e-9
        )
        assert MRR().score(s, out).value == pytest.approx(theirs["recip_rank"], abs=1e-9)
        assert NDCGAtK(k=option).score(s, out).value == pytest.approx(
            theirs[f"ndcg_cut_{k}"], abs=1e-9
        )


def numpy_ndcg(levels: dict[str, int], ranking: list[str], k: int, exponential: bool) -> float:
    """Independent nDCG@k: gains at ranks 1..k over log2(rank + 1)."""

    def gain(values: np.ndarray) -> np.ndarray:
        return np.power(2.0, values) - 1.0 if exponential else values

    actual = np.array([levels.get(doc, 0) for doc in ranking[:k]], dtype=float)
    ideal = np.sort(np.array(list(levels.values()), dtype=float))[::-1][:k]
    actual_dcg = float(np.sum(gain(actual) / np.log2(np.arange(2, actual.size + 2))))
    ideal_dcg = float(np.sum(gain(ideal) / np.log2(np.arange(2, ideal.size + 2))))
    return actual_dcg / ideal_dcg


def test_exponential_ndcg_agrees_with_trec_eval_and_numpy() -> None:
    rng = random.Random(2024)
    queries = [random_query(rng, graded=True) for _ in range(1000)]
    # trec_eval's nDCG uses the qrel level as the gain: give it 2^g - 1 (integers, > 0 iff g > 0)
    transformed = [({doc: 2**level - 1 for doc, level in q.items()}, r, k) for q, r, k in queries]
    reference = trec_scores(transformed)
    for n, (qrels, ranking, k) in enumerate(queries):
        metric = NDCGAtK(k=k, gain="exponential")
        ours = metric.score(sample(dict(qrels)), ids_output(*ranking)).value
        assert ours == pytest.approx(reference[f"q{n}"][f"ndcg_cut_{k}"], abs=1e-9)
        assert ours == pytest.approx(numpy_ndcg(qrels, ranking, k, exponential=True), abs=1e-9)


def test_linear_ndcg_with_fractional_gains_matches_numpy() -> None:
    rng = random.Random(99)
    for _ in range(300):
        docs = [f"d{n}" for n in range(rng.randint(1, 30))]
        levels = {doc: round(rng.uniform(0, 4), 3) for doc in docs}
        levels[docs[0]] = 2.5
        ranking = rng.sample([*docs, "x1", "x2"], rng.randint(1, len(docs) + 2))
        k = rng.randint(1, 12)
        ours = NDCGAtK(k=k).score(sample(levels), ids_output(*ranking)).value
        assert ours == pytest.approx(numpy_ndcg(levels, ranking, k, exponential=False), abs=1e-9)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- worked examples


def test_worked_example_graded() -> None:
    s = sample({"a": 3, "b": 2, "c": 0, "d": 1}, k=3)
    out = ids_output("x", "b", "c", "a", "d")
    assert HitAtK().score(s, out).details == {"k": 3, "hit": True}
    recall = RecallAtK().score(s, out)
    assert recall.value == pytest.approx(1 / 3)  # 'c' has gain 0: not relevant
    assert recall.details == {"k": 3, "relevant": 3, "found": 1}
    mrr = MRR().score(s, out)
    assert mrr.value == 0.5
    assert mrr.details == {"first_relevant_rank": 2}
    ndcg = NDCGAtK().score(s, out)
    dcg = 2 / math.log2(3)
    idcg = 3 + 2 / math.log2(3) + 1 / 2
    assert ndcg.details == pytest.approx({"k": 3, "dcg": dcg, "idcg": idcg})
    assert ndcg.value == pytest.approx(dcg / idcg)


def test_zero_gain_ids_are_not_relevant() -> None:
    """A deliberate difference from padosoft: it counts every judged id, even gain 0."""
    s = sample({"judged-but-useless": 0, "good": 1}, k=2)
    out = ids_output("judged-but-useless", "other")
    assert HitAtK().score(s, out).value == 0.0
    assert RecallAtK().score(s, out).value == 0.0
    assert MRR().score(s, out).value == 0.0
    assert NDCGAtK().score(s, out).value == 0.0


def test_negative_gains_are_not_relevant_and_do_not_count() -> None:
    s = sample({"bad": -2, "good": 1}, k=2)
    out = ids_output("bad", "good")
    assert RecallAtK().score(s, out).value == 1.0
    assert MRR().score(s, out).value == 0.5
    assert NDCGAtK().score(s, out).value == pytest.approx((1 / math.log2(3)) / 1.0)


def test_mrr_ignores_k() -> None:
    s = sample(["j"], k=2)
    out = ids_output(*"abcdefghij")
    assert MRR().score(s, out).value == pytest.approx(0.1)
    assert HitAtK().score(s, out).value == 0.0


def test_metrics_of_one_execution_share_a_read_but_each_keeps_its_k() -> None:
    """Metrics scoring one sample and output in turn share what they read of it (the gains of
    the top k among it): each still uses its own k, and another sample or output is read
    afresh."""
    s, out = sample({"b": 1, "d": 2}), ids_output("a", "b", "c", "d")
    assert HitAtK(k=1).score(s, out).value == 0.0
    assert MRR().score(s, out).value == 0.5  # after a top 1 without a relevant id
    assert RecallAtK(k=2).score(s, out).value == 0.5
    assert MRR().score(s, out).value == 0.5  # after a top 2 with one
    assert RecallAtK(k=4).score(s, out).value == 1.0
    ideal = 2.0 / math.log2(2) + 1.0 / math.log2(3)
    assert NDCGAtK(k=3).score(s, out).value == pytest.approx((1.0 / math.log2(3)) / ideal)
    assert NDCGAtK(k=4).score(s, out).details["dcg"] == pytest.approx(
        1.0 / math.log2(3) + 2.0 / math.log2(5)
    )
    assert HitAtK(k=1).score(sample({"a": 1}), out).value == 1.0
    assert MRR().score(s, ids_output("d")).value == 1.0
    bad_k = sample({"b": 1}, k=0)
    for _ in range(2):
        with pytest.raises(MetricError, match=r"metadata\.k"):
            HitAtK().score(bad_k, out)
        assert MRR().score(bad_k, out).value == 0.5


def test_empty_ranking_scores_zero_not_failure() -> None:
    s = sample(["a"])
    out = ids_output()
    for metric in (HitAtK(), RecallAtK(), MRR(), NDCGAtK()):
        assert metric.score(s, out).value == 0.0


def test_batch_of_empty_rankings_scores_zero() -> None:
    """MRR after hit@k in one batch where no output ranks anything (a gain table of no
    column): zeros, as score() gives, not a failure."""
    samples, outputs = [sample({"a": 1}), sample(["b"])], [ids_output(), ids_output()]
    for metric in (HitAtK(), RecallAtK(), MRR(), NDCGAtK()):
        column = metric.score_batch(samples, outputs)
        assert column.values.tolist() == [0.0, 0.0]
        assert not column.errors


# --------------------------------------------------------------------------- k resolution


@pytest.mark.parametrize(
    ("metadata", "option", "k"),
    [
        ({"k": 3}, None, 3),
        ({"k": "3"}, None, 3),
        ({"k": " 12 "}, None, 12),
        ({"k": 3}, 7, 3),  # metadata wins over the option
        ({}, 7, 7),
        ({"k": None}, 7, 7),
        ({}, None, 5),
        ({"k": None}, None, 5),
    ],
)
def test_k_resolution(metadata: dict[str, Any], option: int | None, k: int) -> None:
    s = sample(["a"], **metadata)
    assert resolve_k(s, option) == k
    assert HitAtK(k=option).score(s, ids_output("a")).details["k"] == k


@pytest.mark.parametrize("bad", [0, -1, "0", "three", "3.5", 2.0, True, [3], {"k": 3}])
def test_bad_metadata_k_is_a_metric_error(bad: Any) -> None:
    with pytest.raises(MetricError, match=r"metadata\.k must be a positive integer"):
        RecallAtK().score(sample(["a"], k=bad), ids_output("a"))


@pytest.mark.parametrize("bad", [0, -2, True, "5", 2.5])
@pytest.mark.parametrize("cls", [HitAtK, RecallAtK, NDCGAtK, AnswerContainmentAtK])
def test_bad_k_option_is_a_config_error(cls: type, bad: Any) -> None:
    with pytest.raises(MetricConfigError, match="k must be a positive integer"):
        cls(k=bad)


def test_k_option_through_resolve() -> None:
    metric = resolve({"name": "retrieval-recall-at-k", "k": 2})
    assert metric.score(sample(["a", "b"]), ids_output("x", "a", "b")).value == 0.5
    with pytest.raises(MetricConfigError):
        resolve({"name": "retrieval-ndcg-at-k", "k": 0})
    with pytest.raises(MetricConfigError, match="gain must be 'linear' or 'exponential'"):
        resolve({"name": "retrieval-ndcg-at-k", "gain": "log"})


# --------------------------------------------------------------------------- relevance input


@pytest.mark.parametrize(
    ("expected", "parsed"),
    [
        (["a", "b", "a"], {"a": 1.0, "b": 1.0}),
        ([7, "b"], {"7": 1.0, "b": 1.0}),
        ({"a": 2, "b": 0.5, "c": 0}, {"a": 2.0, "b": 0.5, "c": 0.0}),
        ({"a": "2", "b": "-1"}, {"a": 2.0, "b": -1.0}),
        ('["a", "b"]', {"a": 1.0, "b": 1.0}),
        ('{"a": 3, "b": 0}', {"a": 3.0, "b": 0.0}),
    ],
)
def test_gain_shapes(expected: Any, parsed: dict[str, float]) -> None:
    assert gains(sample(expected)) == parsed


@pytest.mark.parametrize(
    ("expected", "message"),
    [
        ([], "at least one relevant id"),
        ({}, "at least one relevant id"),
        ({"a": 0, "b": -1}, "at least one relevant id"),
        ("[]", "at least one relevant id"),
        ("not json", "expected_output string is not JSON"),
        ("", "expected_output string is not JSON"),
        (42, "must list relevant ids or map id -> gain; got number"),
        (None, "got null"),
        (True, "got boolean"),
        ('"just a string"', "got string"),
        (["a", ""], "expected_output\\[1\\] must be a non-empty id string"),
        (["a", None], "expected_output\\[1\\]"),
        ([True], "expected_output\\[0\\]"),
        ([["nested"]], "expected_output\\[0\\]"),
        ({"a": "high"}, "gain for 'a' must be a finite number"),
        ({"a": True}, "gain for 'a' must be a finite number"),
        ({"a": None}, "gain for 'a'"),
        ({"a": [1]}, "gain for 'a'"),
        ('{"a": NaN}', "gain for 'a' must be a finite number"),
        ({"a": float("inf")}, "gain for 'a' must be a finite number"),
    ],
)
def test_bad_relevance_is_a_metric_error(expected: Any, message: str) -> None:
    for metric in (HitAtK(), RecallAtK(), MRR(), NDCGAtK()):
        with pytest.raises(MetricError, match=message):
            metric.score(sample(expected), ids_output("a"))


# --------------------------------------------------------------------------- ranked list input


def test_ranked_list_from_output_text() -> None:
    assert [r.id for r in ranked(Output('["d7", "d3"]'))] == ["d7", "d3"]
    assert [r.id for r in ranked(Output('  {"retrieved": ["a", {"id": "b", "text": "B"}]}  '))] == [
        "a",
        "b",
    ]
    assert ranked(Output('[{"id": "a", "text": "A"}, {"id": "b", "text": 5}]')) == (
        Retrieved("a", "A"),
        Retrieved("b", ""),
    )


def test_duplicates_keep_their_best_rank() -> None:
    out = Output('["x", "a", "x", "b", "a"]')
    assert [r.id for r in ranked(out)] == ["x", "a", "b"]
    assert MRR().score(sample(["b"]), out).value == pytest.approx(1 / 3)


def test_retrieved_field_wins_over_text() -> None:
    out = coerce_output({"output": '["zzz"]', "retrieved": ["a"]})
    assert HitAtK().score(sample(["a"]), out).value == 1.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("the answer is doc-7", "its text is not JSON"),
        ("", "its text is not JSON"),
        ('{"docs": ["a"]}', "must be a JSON list or an object with a 'retrieved' list"),
        ('"a"', "must be a JSON list"),
        ('{"retrieved": "a"}', "must be a JSON list or an object with a 'retrieved' list"),
        ('["a", ""]', "'retrieved\\[1\\]' must be a non-empty id"),
        ('["a", null]', "'retrieved\\[1\\]'"),
        ('[{"text": "no id"}]', "'retrieved\\[0\\]'"),
        ("[[1]]", "'retrieved\\[0\\]'"),
        ("[" * 5000 + "]" * 5000, "not JSON"),
    ],
)
def test_bad_ranked_list_is_a_metric_error(text: str, message: str) -> None:
    for metric in (HitAtK(), RecallAtK(), MRR(), NDCGAtK(), AnswerContainmentAtK()):
        expected: Any = "answer" if isinstance(metric, AnswerContainmentAtK) else ["a"]
        with pytest.raises(MetricError, match=message):
            metric.score(sample(expected), Output(text))


# --------------------------------------------------------------------------- answer containment


def passages(*texts: str) -> Output:
    return Output("", tuple(Retrieved(f"p{n}", t) for n, t in enumerate(texts, start=1)))


def test_answer_containment_normalises_whitespace_and_case() -> None:
    metric = AnswerContainmentAtK()
    out = passages("nothing here", "Refunds are available\n within   30\tDAYS of delivery.")
    score = metric.score(sample("  within 30 days "), out)
    assert score.value == 1.0
    assert score.details == {"k": 5, "matched_rank": 2}


def test_answer_containment_case_sensitive_option() -> None:
    out = passages("Within 30 Days")
    assert (
        AnswerContainmentAtK(case_sensitive=True).score(sample("within 30 days"), out).value == 0.0
    )
    assert (
        AnswerContainmentAtK(case_sensitive=True).score(sample("Within  30 Days"), out).value == 1.0
    )


def test_answer_containment_respects_k() -> None:
    out = passages("a", "b", "c", "the answer")
    assert AnswerContainmentAtK(k=3).score(sample("the answer"), out).details == {
        "k": 3,
        "matched_rank": None,
    }
    assert AnswerContainmentAtK(k=3).score(sample("the answer", k="4"), out).value == 1.0


def test_answer_containment_skips_entries_without_text() -> None:
    out = Output("", (Retrieved("p1"), Retrieved("p2", "the answer")))
    assert AnswerContainmentAtK().score(sample("answer"), out).details["matched_rank"] == 2


def test_answer_containment_needs_texts() -> None:
    with pytest.raises(MetricError, match="carry no text"):
        AnswerContainmentAtK().score(sample("answer"), ids_output("a", "b"))
    # an empty ranking is a plain miss
    assert AnswerContainmentAtK().score(sample("answer"), ids_output()).value == 0.0


@pytest.mark.parametrize(
    ("expected", "label"),
    [("", "string"), ("  \n", "string"), (["a"], "list"), (None, "null"), (3, "number")],
)
def test_answer_containment_needs_an_answer_span(expected: Any, label: str) -> None:
    with pytest.raises(
        MetricError, match=f"non-empty answer span for answer-containment-at-k; got {label}"
    ):
        AnswerContainmentAtK().score(sample(expected), passages("text"))


@pytest.mark.parametrize("odd_k", [None, "7", True, 0], ids=["ints", "digits", "bool", "zero"])
def test_batches_with_metadata_k_agree_with_pytrec_eval(odd_k: Any) -> None:
    """A batch whose samples carry ``metadata.k`` (scored without a per-row loop when every k
    is a plain int) agrees with trec_eval; one odd k sends the batch row by row, where the
    same scores come out and only the odd row's k is its own (or its error)."""
    rng = random.Random(99)
    queries = [random_query(rng, graded=True) for _ in range(400)]
    reference = trec_scores(queries)
    samples = [sample(dict(q), k=k) for q, _, k in queries]
    if odd_k is not None:
        samples[3] = sample(dict(queries[3][0]), k=odd_k)
    outputs = [ids_output(*ranking) for _, ranking, _ in queries]
    names = {HitAtK: "success_{k}", RecallAtK: "recall_{k}", NDCGAtK: "ndcg_cut_{k}", MRR: None}
    for metric_type, measure in names.items():
        column = metric_type().score_batch(samples, outputs)
        for n, (_, _, k) in enumerate(queries):
            if n == 3 and odd_k is not None and measure is not None:
                bad = isinstance(odd_k, bool) or odd_k == 0
                assert (n in column.errors) == bad
                if not bad:
                    assert column.values[n] == pytest.approx(reference["q3"][measure.format(k=7)])
                continue
            theirs = reference[f"q{n}"][measure.format(k=k) if measure else "recip_rank"]
            assert column.values[n] == pytest.approx(theirs, abs=1e-12)
