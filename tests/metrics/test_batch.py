"""score_batch gives exactly what score() gives, row by row: values bit for bit, details, errors.

The ranking kernels are also checked against trec_eval (pytrec_eval) directly, as the
per-sample metrics are in test_retrieval.py.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from typing import Any

import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings

from assay.data.dataset import Sample
from assay.data.outputs import Output, Retrieved
from assay.errors import AssayError
from assay.metrics.batch import ColumnBuilder, ScoreColumn
from assay.metrics.retrieval import MRR, HitAtK, NDCGAtK, RecallAtK
from batch_rows import batches, seeded_rows


def assert_same_as_rows(metric: Any, samples: Sequence[Sample], outputs: Sequence[Output]) -> None:
    column: ScoreColumn = metric.score_batch(samples, outputs)
    assert len(column) == len(samples)
    for index, (sample, output) in enumerate(zip(samples, outputs)):
        try:
            expected = metric.score(sample, output)
        except AssayError as exc:
            assert column.errors.get(index) == str(exc), (metric.name, index)
            assert math.isnan(column.values[index])
            continue
        assert index not in column.errors, (metric.name, index, column.errors.get(index))
        value = float(column.values[index])
        assert value.hex() == expected.value.hex(), (metric.name, index, value, expected.value)
        assert column.details_at(index) == dict(expected.details), (metric.name, index)
        assert list(column.details_at(index)) == list(expected.details), (metric.name, index)


def calls_to(monkeypatch: Any, module: Any, name: str) -> list[tuple[Any, ...]]:
    """The arguments of every call to ``module.name`` from now on (the function still runs)."""
    calls: list[tuple[Any, ...]] = []
    real = getattr(module, name)

    def counting(*args: Any) -> Any:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(module, name, counting)
    return calls


def random_queries(rng: random.Random, count: int) -> list[tuple[dict[str, int], list[str], int]]:
    queries = []
    for _ in range(count):
        pool = [f"d{n}" for n in range(rng.randint(2, 60))]
        judged = rng.sample(pool, rng.randint(1, len(pool)))
        qrels = {doc: rng.choice([0, 1, 2, 3]) for doc in judged}
        if not any(qrels.values()):
            qrels[judged[0]] = 2
        ranking = rng.sample(pool, rng.randint(1, len(pool)))
        queries.append((qrels, ranking, rng.randint(1, 25)))
    return queries


def as_inputs(
    queries: list[tuple[dict[str, int], list[str], int]], rng: random.Random
) -> tuple[list[Sample], list[Output]]:
    """Samples with k in metadata for most rows (the metric option covers the rest)."""
    samples, outputs = [], []
    for n, (qrels, ranking, k) in enumerate(queries):
        expected: Any = json.dumps(qrels) if rng.random() < 0.3 else dict(qrels)
        metadata = {"k": k if rng.random() < 0.5 else str(k)}
        samples.append(Sample(id=f"q{n}", input={}, expected_output=expected, metadata=metadata))
        if rng.random() < 0.2:
            outputs.append(Output(json.dumps(ranking)))
        else:
            outputs.append(Output("", tuple(Retrieved(d) for d in ranking)))
    return samples, outputs


RANKING = [HitAtK(k=7), RecallAtK(k=7), MRR(), NDCGAtK(k=7), NDCGAtK(k=3, gain="exponential")]


@pytest.mark.parametrize("metric", RANKING, ids=lambda m: f"{m.name}")
def test_ranking_batch_matches_score_and_trec_eval(metric: Any) -> None:
    rng = random.Random(5)
    queries = random_queries(rng, 600)
    samples, outputs = as_inputs(queries, rng)
    assert_same_as_rows(metric, samples, outputs)
    if isinstance(metric, NDCGAtK) and metric.gain == "exponential":
        return  # checked against score() above; score() is checked against trec in test_retrieval
    cutoffs = sorted({k for _, _, k in queries})
    measures = {
        "success." + ",".join(map(str, cutoffs)),
        "recall." + ",".join(map(str, cutoffs)),
        "ndcg_cut." + ",".join(map(str, cutoffs)),
        "recip_rank",
    }
    qrels = {f"q{n}": q for n, (q, _, _) in enumerate(queries)}
    run = {
        f"q{n}": {d: float(len(r) - i) for i, d in enumerate(r)}
        for n, (_, r, _) in enumerate(queries)
    }
    reference = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    key = {"retrieval-hit-at-k": "success_{k}", "retrieval-recall-at-k": "recall_{k}"}
    key |= {"retrieval-mrr": "recip_rank", "retrieval-ndcg-at-k": "ndcg_cut_{k}"}
    column = metric.score_batch(samples, outputs)
    for n, (_, _, k) in enumerate(queries):
        theirs = reference[f"q{n}"][key[metric.name].format(k=k)]
        assert column.values[n] == pytest.approx(theirs, abs=1e-12)


def test_ranking_batch_reports_the_rows_it_cannot_score() -> None:
    good = Sample(id="ok", input={}, expected_output={"a": 1, "b": 0})
    rows = [
        (good, Output("", (Retrieved("b"), Retrieved("a")))),
        (Sample(id="none", input={}, expected_output=None), Output("", (Retrieved("a"),))),
        (Sample(id="zero", input={}, expected_output={"a": 0}), Output("", (Retrieved("a"),))),
        (good, Output("not json")),
        (Sample(id="k", input={}, expected_output=["a"], metadata={"k": "abc"}), Output("[]")),
        (Sample(id="big", input={}, expected_output={"a": 1e308, "b": 1e308}), Output('["a"]')),
        (Sample(id="empty", input={}, expected_output=["a"]), Output("[]")),
    ]
    samples, outputs = [s for s, _ in rows], [o for _, o in rows]
    for metric in [*RANKING, NDCGAtK(gain="exponential")]:
        assert_same_as_rows(metric, samples, outputs)
        column = metric.score_batch(samples, outputs)
        assert set(column.errors) >= {1, 2, 3}
        assert column.values[0] > 0


def test_ranking_batch_reads_integer_levels_of_every_size_as_score_does() -> None:
    """Integer levels are read without a copy and converted by numpy: the same floats as
    ``float()``, including levels past 2**53, and the same errors for levels past a float."""
    levels: list[Any] = [
        {"a": 2**53 + 1, "b": 2**60 + 3, "c": 1},
        {"a": -(2**70), "b": 10**300, "c": 0},
        {"a": 2**1023 + 1, "b": 2},  # still a finite float: parse_gains reads it
        {"a": 10**400, "b": 1},  # too large for a float: an error
        {"a": -(10**400), "b": 1},
        {"a": 3, "b": True},  # a boolean is not a gain
        {"a": 0, "b": -1},  # nothing relevant
        {1: 2, "b": 1},  # an integer key matches the id "1"
        {},
    ]
    rankings = [["b", "x", "a", "c"], ["x", "b", "a"], ["a", "b"], ["b"], ["b"], ["a"], ["a"]]
    rankings += [["1", "b"], ["a"]]
    samples = [Sample(id=str(n), input={}, expected_output=g) for n, g in enumerate(levels)]
    outputs = [Output("", tuple(map(Retrieved, r))) for r in rankings]
    for metric in [*RANKING, NDCGAtK(k=1, gain="exponential")]:
        assert_same_as_rows(metric, samples, outputs)
    errors = HitAtK().score_batch(samples, outputs).errors
    assert set(errors) == {3, 4, 5, 6, 8}


def test_mrr_after_the_cut_off_metrics_matches_score() -> None:
    """MRR reads the gain table the metrics before it built and scans only the rows without a
    relevant id in their top k (rows with a bad ``metadata.k`` are not in the table)."""
    rng = random.Random(11)
    samples, outputs = as_inputs(random_queries(rng, 300), rng)
    samples += [
        Sample(id="bad-k", input={}, expected_output={"d3": 1}, metadata={"k": "abc"}),
        Sample(id="no-hit", input={}, expected_output={"d9": 2, "d1": 0}, metadata={"k": 1}),
    ]
    outputs += [Output("", (Retrieved("d1"), Retrieved("d3"))), Output('["d1", "d2", "d9"]')]
    for metric in [HitAtK(k=2), NDCGAtK(k=30), MRR()]:
        assert_same_as_rows(metric, samples, outputs)
    ranks = MRR().score_batch(samples, outputs).details["first_relevant_rank"]
    assert ranks[-2:] == [2, 3]


def test_column_builder_keeps_each_rows_own_details() -> None:
    from assay.metrics.base import MetricScore

    builder = ColumnBuilder(3)
    builder.put_column("k", [5, 5, 5])
    builder.values[[0]] = [1.0]
    builder.put(1, MetricScore(0.5, {"other": True}))
    builder.fail(2, "cannot score")
    column = builder.build()
    assert column.details_at(0) == {"k": 5}
    assert column.details_at(1) == {"other": True}
    assert column.details_at(2) == {}
    assert column.errors == {2: "cannot score"}


def lexical_rows() -> tuple[list[Sample], list[Output]]:
    rng = random.Random(3)
    words = ["Refund", "window", "30", "days", "café,", "Straße.", "東京", "ΣΟΦΙΑ!", "naïve", "_x_"]
    rows: list[tuple[Any, str]] = []
    for _ in range(300):
        reference = " ".join(rng.choice(words) for _ in range(rng.randint(1, 12)))
        if rng.random() < 0.4:
            candidate = reference
        elif rng.random() < 0.5:
            candidate = reference + " " + rng.choice(words)
        else:
            candidate = " ".join(rng.choice(words) for _ in range(rng.randint(0, 12)))
        rows.append((reference, candidate))
    rows += [("", ""), ("", "x"), ("x", ""), ("  ", "  "), (None, "x"), (["a"], "a"), (3, "3")]
    rows += [("!!!", "..."), ("a b c d e f g", "a b c d e f g h"), ("x", "x")]
    samples = [Sample(id=str(n), input={}, expected_output=e) for n, (e, _) in enumerate(rows)]
    return samples, [Output(c) for _, c in rows]


@pytest.mark.parametrize(
    "metric",
    [
        "exact-match",
        "contains",
        {"name": "contains", "case_sensitive": False},
        "rouge-l",
        {"name": "rouge-l", "beta": 2.0},
        {"name": "rouge-l", "max_tokens": 6},
    ],
    ids=str,
)
def test_lexical_batch_matches_score(metric: Any) -> None:
    from assay.metrics.registry import resolve

    samples, outputs = lexical_rows()
    assert_same_as_rows(resolve(metric), samples, outputs)


@pytest.mark.parametrize("options", [{}, {"beta": 0.5}, {"max_tokens": 5}], ids=str)
def test_rouge_l_batch_matches_score_across_chunks(options: dict[str, Any]) -> None:
    """More rows than one tokenizer chunk: chunks with and without the code points that send
    texts off the tokenizer's fast path, and the rows that score() has to take."""
    from assay.metrics.lexical import RougeL

    rng = random.Random(21)
    words = ["refund", "Window", "30", "café,", "Straße.", "東京", "naïve", "Москва", "x_y"]
    rows: list[tuple[Any, str]] = []
    for n in range(700):
        reference = " ".join(rng.choice(words) for _ in range(rng.randint(0, 9)))
        candidate = " ".join(rng.choice(words) for _ in range(rng.randint(0, 9)))
        if n % 150 == 3:  # tokens that differ there: 'i' 'stanbul', final sigma, a new letter
            candidate += [" İstanbul", " ΟΔΟΣ", " a\u0870b", " 🙂", " \ud800"][n // 150]
        rows.append((reference if n % 97 else rng.choice([None, 3, ["a"]]), candidate))
    samples = [Sample(id=str(n), input={}, expected_output=e) for n, (e, _) in enumerate(rows)]
    assert_same_as_rows(RougeL(**options), samples, [Output(c) for _, c in rows])


def test_regex_batch_matches_score() -> None:
    from assay.metrics.lexical import Regex

    patterns = ["/ORD-\\d{3}/", "/refund/i", "/^a/", "/(a)\\1/", "/x$/D", "no delimiter", "/(/"]
    texts = ["ORD-123", "REFUND now", "abc", "aa", "x\n", "café ORD-999", "", "bab"]
    rows = [(p, t) for p in patterns for t in texts] + [(None, "x"), (3, "3"), ("", "")]
    samples = [Sample(id=str(n), input={}, expected_output=p) for n, (p, _) in enumerate(rows)]
    outputs = [Output(t) for _, t in rows]
    metric = Regex()
    assert_same_as_rows(metric, samples, outputs)
    column = metric.score_batch(samples, outputs)
    assert {column.details_at(i).get("engine") for i in range(len(rows))} >= {"re2", "backtracking"}
    assert len(column.errors) == len(texts) * 2 + 3


def test_score_rankings_from_plain_lists_matches_score() -> None:
    """The plain-list entry point: the same column as score() on a Sample and an Output."""
    from assay.metrics.retrieval import score_rankings

    rng = random.Random(8)
    queries = random_queries(rng, 400)
    relevance: list[Any] = [
        json.dumps(q) if n % 3 == 0 else q for n, (q, _, _) in enumerate(queries)
    ]
    rankings: list[Any] = [r + r[:2] for _, r, _ in queries]  # repeats keep their first rank
    relevance += [None, {"a": 0}, ["a"], ["a"], {"a": 1e308, "b": 1e308}, ["a"]]
    rankings += [["a"], ["a"], ["", "a"], [{"id": "a", "text": "A"}, 7], ["a", "b"], []]
    metrics = [*RANKING, NDCGAtK(k=2, gain="exponential"), NDCGAtK(k=30)]
    columns = score_rankings(metrics, relevance, rankings)
    samples = [Sample(id=str(n), input={}, expected_output=r) for n, r in enumerate(relevance)]
    outputs = [Output(json.dumps(r)) for r in rankings]
    for metric, column in zip(metrics, columns):
        assert len(column) == len(samples)
        for index, (sample, output) in enumerate(zip(samples, outputs)):
            try:
                expected = metric.score(sample, output)
            except AssayError:
                assert index in column.errors and math.isnan(column.values[index])
                continue
            assert float(column.values[index]).hex() == expected.value.hex(), (metric, index)
            assert column.details_at(index) == dict(expected.details), (metric, index)
    assert (
        columns[0].errors[400]
        == "relevance[400] must list relevant ids or map id -> gain; got null"
    )


def test_ranking_metrics_share_one_read_of_the_same_executions(monkeypatch: Any) -> None:
    """The runner hands each metric its own list of the same executions: one read serves all."""
    from assay.metrics import ranking_judgements as judged

    calls = calls_to(monkeypatch, judged, "_judge")
    samples, outputs = as_inputs(random_queries(random.Random(2), 50), random.Random(3))
    for metric in RANKING:
        metric.score_batch(list(samples), list(outputs))
    assert [len(args[0]) for args in calls] == [50]
    RANKING[0].score_batch(samples[:-1], outputs[:-1])
    assert [len(args[0]) for args in calls] == [50, 49]


# --------------------------------------------------------------------------- every batch metric

VARIANTS: list[Any] = [
    {"name": "tool-called", "tools": ["search", "refund"]},
    {"name": "tool-not-called", "forbidden_tools": ["send_email"]},
    {"name": "tool-called-with", "tool_arguments": [{"tool": "search", "arguments": {"n": 7}}]},
    {"name": "tool-call-order", "order": ["search", "lookup_order"], "mode": "exact"},
    {"name": "tool-call-order", "order": ["search", "search"], "mode": "any-order"},
    {"name": "steps-below", "max_steps": 2},
    {"name": "approval-gated", "requires_approval": ["refund"]},
    {"name": "invisible-characters", "allow": ["zero_width", "bidi"]},
    {"name": "invisible-characters", "allow": ["zero_width", "bogus"]},  # every row errs
    {"name": "pii-leak", "kinds": ["email", "card"]},
    # (pii-leak with an unknown kind is refused when built: tests/metrics/test_safety.py)
    {"name": "forbidden-tool-call", "tools": ["search", "send_email"]},
    {"name": "ordinal-distance", "scale": ["bad", "ok", "good"]},
    {"name": "ordinal-distance", "scale": ["good", "ok", "bad", "refund", "café", "x"]},
    {"name": "faithfulness", "tau": 0.9, "texts": True},
    {"name": "context-recall", "tau": 0.2},
    {"name": "context-precision", "texts": True, "tau": 1.0},
    {"name": "answer-relevancy", "texts": True},
]
# The deterministic built-ins that must keep a batch kernel (a metric that loses one fails here).
BATCH_METRICS = {
    "tool-called", "tool-not-called", "tool-called-with", "tool-call-order", "steps-below",
    "no-pending-approvals", "approval-gated", "invisible-characters", "canary-leak", "pii-leak",
    "forbidden-tool-call", "ordinal-distance", "citation-groundedness", "faithfulness",
    "context-recall", "context-precision", "answer-relevancy",
}  # fmt: skip


def batch_metrics() -> list[Any]:
    """Every built-in that resolves with its default options and offers ``score_batch``, then
    the option variants: a metric that gains a kernel is covered here without a new test."""
    from assay.errors import MetricConfigError
    from assay.metrics.registry import catalogue, resolve

    metrics = []
    for name, _ in catalogue():
        try:
            metric = resolve(name)
        except MetricConfigError:
            continue
        if hasattr(metric, "score_batch"):
            metrics.append(metric)
    return metrics + [resolve(spec) for spec in VARIANTS]


ALL_BATCH = batch_metrics()


def test_the_deterministic_built_ins_have_batch_kernels() -> None:
    """Those metrics have kernels; the RAG metrics' judge method, which calls a provider, not."""
    from assay.metrics.registry import resolve

    assert {metric.name for metric in ALL_BATCH} >= BATCH_METRICS
    for name in ["faithfulness", "context-recall", "context-precision", "answer-relevancy"]:
        assert not hasattr(resolve({"name": name, "method": "judge"}), "score_batch")


@pytest.mark.parametrize("metric", ALL_BATCH, ids=lambda m: repr(m)[:80])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=batches())
def test_every_batch_kernel_matches_score_on_varied_rows(
    metric: Any, batch: tuple[list[Sample], list[Output]]
) -> None:
    """score_batch itself (not the runner's fallback) gives score()'s rows, bad rows included;
    score_column, the runner's path, gives score_sync's results."""
    from assay.engine.scoring import score_column, score_sync

    samples, outputs = batch
    assert_same_as_rows(metric, samples, outputs)
    expected = [score_sync(metric, s, o) for s, o in zip(samples, outputs)]
    assert score_column(metric, samples, outputs) == expected


@pytest.mark.parametrize("metric", ALL_BATCH, ids=lambda m: repr(m)[:80])
def test_every_batch_kernel_matches_score_on_rows_that_mostly_score(metric: Any) -> None:
    samples, outputs = seeded_rows(4, 400)
    assert_same_as_rows(metric, samples, outputs)


def test_trajectory_metrics_share_one_parse_of_a_batch(monkeypatch: Any) -> None:
    """The runner hands each metric its own list of the same executions: one parse serves all,
    and the kernel records a malformed or missing trajectory as that row's error."""
    from assay.metrics import trajectory

    calls = calls_to(monkeypatch, trajectory, "parse_trajectory")
    samples = [Sample(id=str(n), input={}, expected_output="") for n in range(3)]
    outputs = [Output("a", trajectory={"tool_calls": ["search"]}), Output("b")]
    outputs.append(Output("c", trajectory={"tool_calls": [{"arguments": {}}]}))
    metrics = [trajectory.ToolCalled(), trajectory.StepsBelow(), trajectory.ApprovalGated()]
    columns = [metric.score_batch(list(samples), list(outputs)) for metric in metrics]
    assert len(calls) == 2
    for metric, column in zip(metrics, columns):
        assert set(column.errors) == {1, 2}
        assert column.errors[1].startswith(f"metric '{metric.name}' needs a trajectory")
        assert column.errors[2] == "trajectory.tool_calls[0] must carry a non-empty 'name'"


def test_an_option_score_rejects_for_every_row_errs_every_row_of_the_batch() -> None:
    from assay.metrics.safety import InvisibleCharacters

    samples = [Sample(id=str(n), input={}, expected_output="") for n in range(3)]
    outputs = [Output("a@example.com"), Output("\u200b"), Output("")]
    # (pii-leak's unknown kinds are refused when it is built: tests/metrics/test_safety.py)
    for metric in [InvisibleCharacters(allow=("tag", "nope"))]:
        column = metric.score_batch(samples, outputs)
        assert set(column.errors) == {0, 1, 2}
        assert len(set(column.errors.values())) == 1
        assert all(map(math.isnan, column.values))
        assert_same_as_rows(metric, samples, outputs)


def test_context_recall_and_precision_split_each_reference_once(monkeypatch: Any) -> None:
    from assay.metrics import rag

    calls = calls_to(monkeypatch, rag, "split_response")
    rag._claims.cache_clear()
    references = [f"The refund window is {n} days. Returns need a receipt." for n in range(50)]
    samples = [Sample(id=str(n), input={}, expected_output=r) for n, r in enumerate(references)]
    outputs = [Output("ok", contexts=("The refund window is 30 days.",)) for _ in references]
    for metric in [rag.ContextRecall(), rag.ContextPrecision()]:
        assert_same_as_rows(metric, samples, outputs)
    assert sorted(text for (text,) in calls) == sorted(references)


def test_row_column_keeps_each_rows_keys_errors_and_order() -> None:
    from assay.errors import MetricError
    from assay.metrics.batch import row_column

    rows: list[Any] = [
        (1.0, {"a": 1, "b": [2]}),
        MetricError("row 1 cannot be scored"),
        (0.5, {"a": 3, "b": None, "note": "x"}),
        (0.0, {"a": 4, "b": 5}),
    ]

    def kernel(index: int) -> Any:
        if isinstance(rows[index], Exception):
            raise rows[index]
        return rows[index]

    column = row_column(kernel, len(rows))
    assert column.errors == {1: "row 1 cannot be scored"}
    assert math.isnan(column.values[1]) and list(column.values[[0, 2, 3]]) == [1.0, 0.5, 0.0]
    assert [column.details_at(i) for i in range(4)] == [
        {"a": 1, "b": [2]},
        {},
        {"a": 3, "b": None, "note": "x"},
        {"a": 4, "b": 5},
    ]
    assert list(column.details_at(2)) == ["a", "b", "note"]
    assert column.absent == {"note": frozenset({0, 3})}
    uniform = row_column(lambda i: (0.25, {"k": i}), 3)
    assert uniform.details == {"k": [0, 1, 2]} and not uniform.absent and not uniform.errors
    nothing = row_column(kernel, 0)
    assert len(nothing) == 0 and not nothing.details


def test_a_batch_whose_every_relevance_mapping_is_empty_is_scored_as_its_rows() -> None:
    """Every ``expected_output`` ``{}``: the batch path indexed an empty table (IndexError)."""
    samples = [Sample(id="s0", input={"question": ""}, expected_output={})]
    outputs = [Output("", retrieved=None)]
    for metric in (RecallAtK(), HitAtK(), MRR(), NDCGAtK()):
        assert_same_as_rows(metric, samples, outputs)
