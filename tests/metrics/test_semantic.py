"""cosine-embedding and bertscore-like: numbers checked against scipy, edge cases, error paths."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist
from scipy.spatial.distance import cosine as scipy_cosine

from assay.data.dataset import Sample
from assay.data.outputs import Output
from assay.errors import MetricConfigError, MetricError
from assay.metrics.lexical import tokenize
from assay.metrics.registry import resolve
from assay.metrics.semantic import BertScoreLike, CosineEmbedding, greedy_match, idf_table
from assay.providers import local, registry
from assay.providers import settings as provider_settings_module
from assay.providers.settings import ProviderSettings
from openai_server import EMBEDDINGS, OpenAIServer, Step, hash_vector


def sample(expected: object, sid: str = "s1", **metadata: object) -> Sample:
    return Sample(
        id=sid, input={"question": "q"}, expected_output=expected, metadata=dict(metadata)
    )


@pytest.fixture
def hashing(monkeypatch: pytest.MonkeyPatch):
    """Hashing settings for the metrics this test builds without any (``from_environment``)."""
    registry.reset()
    chosen = ProviderSettings(embedding_provider="hashing", cache_mode="off")
    monkeypatch.setattr(provider_settings_module, "from_environment", lambda: chosen)
    yield
    registry.reset()


def fixed_vectors(table: dict[str, list[float]]):
    return lambda texts: [table[t] for t in texts]


# --------------------------------------------------------------------------- cosine-embedding


async def test_cosine_matches_scipy(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    table = {"expected text": [0.3, -1.2, 2.0, 0.5], "actual text": [1.0, 0.4, 1.5, -0.2]}
    openai_server.embed = fixed_vectors(table)
    result = await CosineEmbedding().score(sample("expected text"), Output("actual text"))
    reference = 1.0 - scipy_cosine(table["expected text"], table["actual text"])
    assert result.value == pytest.approx(reference, abs=1e-6)
    assert result.details["cosine_similarity"] == pytest.approx(reference, abs=1e-6)
    assert result.details["expected_dim"] == 4 and result.details["actual_dim"] == 4
    assert result.usage is not None and result.usage[0]["model"] == "embed-test"
    assert openai_server.requests[0][1]["input"] == ["expected text", "actual text"]


async def test_negative_similarity_is_clamped_or_rescaled(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    openai_server.embed = fixed_vectors({"up": [1.0, 0.2], "down": [-1.0, -0.1]})
    raw = 1.0 - scipy_cosine([1.0, 0.2], [-1.0, -0.1])
    clamped = await CosineEmbedding().score(sample("up"), Output("down"))
    assert clamped.value == 0.0 and clamped.details["cosine_similarity"] == pytest.approx(
        raw, abs=1e-6
    )
    rescaled = await CosineEmbedding(negative="rescale").score(sample("up"), Output("down"))
    assert rescaled.value == pytest.approx((1 + raw) / 2, abs=1e-6)
    with pytest.raises(MetricConfigError):
        resolve({"name": "cosine-embedding", "negative": "abs"})


async def test_zero_vectors_score_zero_not_nan(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    openai_server.embed = fixed_vectors({"a": [0.0, 0.0], "b": [1.0, 0.0]})
    result = await CosineEmbedding().score(sample("a"), Output("b"))
    assert result.value == 0.0 and result.details["cosine_similarity"] == 0.0


async def test_empty_sides_make_no_call(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    both = await CosineEmbedding().score(sample("  "), Output(""))
    one = await CosineEmbedding().score(sample("Paris"), Output(" "))
    assert both.value == 1.0 and one.value == 0.0 and one.details["empty"] == "actual"
    assert openai_server.total_calls() == 0


async def test_expected_must_be_a_string(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    with pytest.raises(
        MetricError, match="expected_output must be a string for cosine-embedding; got number"
    ):
        await CosineEmbedding().score(sample(42), Output("42"))
    assert openai_server.total_calls() == 0


async def test_dimension_mismatch_across_calls(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    metric = CosineEmbedding()
    openai_server.embed = lambda texts: [hash_vector(t, 8) for t in texts]
    await registry.embedder(provider_settings_module.from_environment()).prefetch(["expected"])
    openai_server.embed = lambda texts: [hash_vector(t, 16) for t in texts]
    with pytest.raises(MetricError, match=r"different dimensionality \(8 vs 16\)") as info:
        await metric.score(sample("expected"), Output("actual"))
    assert info.value.usage and info.value.usage[0]["prompt_tokens"] > 0  # spend kept on failure


async def test_provider_failures_become_metric_failures(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    openai_server.script(EMBEDDINGS, Step.error(503), Step.error(503), Step.error(503))
    with pytest.raises(
        MetricError,
        match=r"embeddings request failed: embeddings request to 127\.0\.0\.1:\d+ failed: HTTP 503",
    ):
        await CosineEmbedding().score(sample("a"), Output("b"))
    openai_server.embed = lambda texts: [hash_vector(t) for t in texts][:1]
    with pytest.raises(MetricError, match=r"returned 1 vector\(s\); expected 2"):
        await CosineEmbedding().score(sample("a"), Output("b"))


async def test_prefetch_batches_a_whole_chunk(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    metric = CosineEmbedding()
    pairs = [(sample(f"expected {i % 5}", f"s{i}"), Output(f"answer {i}")) for i in range(40)]
    await metric.prefetch(pairs)
    assert openai_server.calls[EMBEDDINGS] == 1
    assert len(openai_server.requests[0][1]["input"]) == 45  # 5 distinct expected + 40 answers
    scores = await asyncio.gather(*(metric.score(s, o) for s, o in pairs))
    assert openai_server.calls[EMBEDDINGS] == 1
    billed = [u for s in scores for u in s.usage if not u["cached"]]
    assert (
        len(billed) == 1 and billed[0]["prompt_tokens"] == 45 * 2
    )  # the one request, counted once


async def test_rerun_makes_zero_calls(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    pairs = [(sample(f"e{i}", f"s{i}"), Output(f"a{i}")) for i in range(10)]
    metric = CosineEmbedding()
    await metric.prefetch(pairs)
    first = [await metric.score(s, o) for s, o in pairs]
    registry.reset()
    await metric.prefetch(pairs)
    second = [await metric.score(s, o) for s, o in pairs]
    assert openai_server.calls[EMBEDDINGS] == 1
    assert [a.value for a in first] == [b.value for b in second]
    assert all(u["cached"] for s in second for u in s.usage)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(a=st.text(max_size=40), b=st.text(max_size=40))
def test_cosine_properties_with_the_hashing_embedder(hashing, a: str, b: str) -> None:
    async def run() -> tuple[float, float, float]:
        metric = CosineEmbedding()
        ab = await metric.score(sample(a), Output(b))
        ba = await metric.score(sample(b), Output(a))
        aa = await metric.score(sample(a), Output(a))
        return ab.value, ba.value, aa.value

    ab, ba, aa = asyncio.run(run())
    assert 0.0 <= ab <= 1.0
    assert ab == pytest.approx(ba, abs=1e-9)
    assert aa == pytest.approx(1.0, abs=1e-6)  # identity (both-empty also scores 1.0)


def test_hashing_reports_say_so(hashing) -> None:
    assert CosineEmbedding().settings.embedding_label.startswith("hashing (test only")

    async def run():
        return await CosineEmbedding().score(sample("the cat sat"), Output("the cat sat down"))

    result = asyncio.run(run())
    assert result.details["embedding_provider"] == "hashing" and result.usage is None


# ------------------------------------------------------------------------ bertscore-like (isolated)


def reference_bertscore(
    expected: str, actual: str, vectors: dict[str, list[float]], idf=None
) -> tuple[float, float, float]:
    """BERTScore greedy matching written independently with scipy's cdist."""
    e_tokens, a_tokens = tokenize(expected), tokenize(actual)
    e = np.array([vectors[t] for t in e_tokens], dtype=np.float32).astype(float)
    a = np.array([vectors[t] for t in a_tokens], dtype=np.float32).astype(float)
    sim = 1.0 - cdist(a, e, metric="cosine")
    best_a = np.clip(np.nan_to_num(sim, nan=0.0).max(axis=1), 0, None)
    best_e = np.clip(np.nan_to_num(sim, nan=0.0).max(axis=0), 0, None)
    wa = np.array([idf(t) for t in a_tokens]) if idf else np.ones(len(a_tokens))
    we = np.array([idf(t) for t in e_tokens]) if idf else np.ones(len(e_tokens))
    p = float((wa * best_a).sum() / wa.sum())
    r = float((we * best_e).sum() / we.sum())
    return p, r, 2 * p * r / (p + r)


VOCAB = {
    "the": [0.1, 0.9, 0.0, 0.2],
    "cat": [0.9, 0.1, 0.3, 0.0],
    "sat": [0.2, 0.2, 0.9, 0.1],
    "feline": [0.8, 0.3, 0.2, 0.1],
    "on": [0.0, 0.5, 0.5, 0.5],
    "mat": [0.5, 0.0, 0.1, 0.9],
    "rested": [-0.2, 0.1, 0.8, 0.3],
    "rug": [0.4, -0.3, 0.1, 0.8],
    "a": [0.1, 0.8, 0.1, 0.1],
}


async def test_bertscore_request_order_matches_the_reference(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    openai_server.embed = fixed_vectors(VOCAB)
    result = await BertScoreLike().score(sample("cat sat"), Output("feline sat"))
    assert openai_server.requests[0][1]["input"] == ["cat", "sat", "feline"]
    assert result.details["embedded_tokens"] == 3 and result.details["mode"] == "isolated"


@pytest.mark.parametrize(
    ("expected", "actual"),
    [
        ("The cat sat on the mat", "A feline rested on the rug"),
        ("the cat", "the the the cat sat on a mat"),
        ("rug", "cat"),
    ],
)
async def test_bertscore_matches_an_independent_implementation(
    openai_server: OpenAIServer, provider_settings: ProviderSettings, expected: str, actual: str
) -> None:
    openai_server.embed = fixed_vectors(VOCAB)
    result = await BertScoreLike().score(sample(expected), Output(actual))
    p, r, f = reference_bertscore(expected, actual, VOCAB)
    assert result.details["precision"] == pytest.approx(p, abs=1e-6)
    assert result.details["recall"] == pytest.approx(r, abs=1e-6)
    assert result.value == pytest.approx(f, abs=1e-6)


async def test_bertscore_idf_weights_match_the_formula(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    openai_server.embed = fixed_vectors(VOCAB)
    references = ["the cat sat on the mat", "the rug", "a cat"]
    samples = [sample(text, f"s{i}") for i, text in enumerate(references)]
    metric = resolve({"name": "bertscore-like", "idf": True})
    await metric.prepare(samples)
    m = len(references)

    def idf(token: str) -> float:
        df = sum(token in set(tokenize(ref)) for ref in references)
        return math.log((m + 1) / (df + 1))

    result = await metric.score(samples[0], Output("a feline rested on the rug"))
    p, r, f = reference_bertscore(references[0], "a feline rested on the rug", VOCAB, idf)
    assert result.details["precision"] == pytest.approx(p, abs=1e-6)
    assert result.details["recall"] == pytest.approx(r, abs=1e-6)
    assert result.value == pytest.approx(f, abs=1e-6)
    assert idf_table([["x"], ["x", "y"]]) == (
        {"x": math.log(3 / 3), "y": math.log(3 / 2)},
        math.log(3),
    )


async def test_idf_without_prepare_is_a_clear_failure(provider_settings: ProviderSettings) -> None:
    with pytest.raises(MetricError, match=r"call prepare\(samples\)"):
        await BertScoreLike(idf=True).score(sample("cat"), Output("cat sat"))


async def test_bertscore_edge_cases(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    both = await BertScoreLike().score(sample("..."), Output("!!"))
    one = await BertScoreLike().score(sample("cat"), Output("--"))
    assert both.value == 1.0 and both.details["precision"] == 1.0
    assert (
        one.value == 0.0
        and one.details["expected_tokens"] == 1
        and one.details["actual_tokens"] == 0
    )
    with pytest.raises(
        MetricError, match="output has 4 tokens; bertscore-like supports at most 3 tokens per field"
    ):
        await BertScoreLike(max_tokens=3).score(sample("a b"), Output("a b c d"))
    with pytest.raises(
        MetricError, match="expected_output must be a string for bertscore-like; got list"
    ):
        await BertScoreLike().score(sample(["a"]), Output("a"))
    assert openai_server.total_calls() == 0  # every check above runs before any provider call
    with pytest.raises(MetricConfigError):
        resolve({"name": "bertscore-like", "max_tokens": 0})
    with pytest.raises(MetricConfigError):
        resolve({"name": "bertscore-like", "mode": "fuzzy"})


async def test_bertscore_wrong_vector_count(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    openai_server.embed = lambda texts: [hash_vector(t) for t in texts][:-1]
    with pytest.raises(MetricError, match=r"returned 2 vector\(s\); expected 3"):
        await BertScoreLike().score(sample("cat sat"), Output("feline sat"))


async def test_bertscore_contextual_mode_needs_the_local_provider(
    provider_settings: ProviderSettings,
) -> None:
    with pytest.raises(MetricError, match="needs the local embedding provider"):
        await BertScoreLike(mode="contextual").score(sample("cat"), Output("cat"))


async def test_bertscore_prefetch_embeds_each_token_once(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    openai_server.embed = fixed_vectors(VOCAB)
    pairs = [
        (sample("the cat sat", f"s{i}"), Output(text))
        for i, text in enumerate(["a cat sat", "the rug", "cat"])
    ]
    metric = BertScoreLike()
    await metric.prefetch(pairs)
    assert openai_server.requests[0][1]["input"] == ["the", "cat", "sat", "a", "rug"]
    for s, o in pairs:
        await metric.score(s, o)
    assert openai_server.calls[EMBEDDINGS] == 1


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(a=st.text(max_size=30), b=st.text(max_size=30))
def test_bertscore_properties_with_the_hashing_embedder(hashing, a: str, b: str) -> None:
    async def run() -> tuple[float, float, float]:
        metric = BertScoreLike()
        ab = await metric.score(sample(a), Output(b))
        ba = await metric.score(sample(b), Output(a))
        aa = await metric.score(sample(a), Output(a))
        return ab.value, ba.value, aa.value

    ab, ba, aa = asyncio.run(run())
    assert 0.0 <= ab <= 1.0
    assert ab == pytest.approx(ba, abs=1e-9)  # F1 is symmetric
    assert aa == pytest.approx(1.0, abs=1e-6)


def test_greedy_match_is_symmetric_in_f1() -> None:
    rng = np.random.default_rng(7)
    x, y = rng.normal(size=(5, 8)), rng.normal(size=(3, 8))
    p, r, f = greedy_match(x, y)
    p2, r2, f2 = greedy_match(y, x)
    assert (p, r) == pytest.approx((r2, p2)) and f == pytest.approx(f2)


# --------------------------------------------------------------------------- contextual BERTScore

needs_local = pytest.mark.skipif(
    not local.available(), reason='needs the local extra: pip install "assay[local]"'
)

PARAPHRASES = [
    ("The cat sat on the mat.", "A cat was sitting on the mat."),
    (
        "The meeting was moved to Friday afternoon.",
        "They rescheduled the meeting for Friday afternoon.",
    ),
    ("Paris is the capital of France.", "France's capital city is Paris."),
    ("He bought three apples at the market.", "At the market he purchased three apples."),
]
UNRELATED = [
    ("The cat sat on the mat.", "Quarterly revenue grew by twelve percent."),
    (
        "The meeting was moved to Friday afternoon.",
        "Photosynthesis converts light into chemical energy.",
    ),
    ("Paris is the capital of France.", "My laptop battery died during the flight."),
    ("He bought three apples at the market.", "The river froze early that winter."),
]


@pytest.fixture
def local_provider(monkeypatch: pytest.MonkeyPatch):
    registry.reset()
    local = ProviderSettings(embedding_provider="local", cache_mode="off")
    monkeypatch.setattr(provider_settings_module, "from_environment", lambda: local)
    yield
    registry.reset()


@needs_local
async def test_contextual_bertscore_ranks_paraphrases_above_unrelated_pairs(local_provider) -> None:
    metric = BertScoreLike()
    para = [(await metric.score(sample(e), Output(a))).value for e, a in PARAPHRASES]
    unrelated = [(await metric.score(sample(e), Output(a))).value for e, a in UNRELATED]
    assert min(para) > max(unrelated)
    result = await metric.score(sample(PARAPHRASES[0][0]), Output(PARAPHRASES[0][1]))
    assert result.details["mode"] == "contextual" and result.usage is None
    identical = await metric.score(sample("The cat sat."), Output("The cat sat."))
    assert identical.value == pytest.approx(1.0, abs=1e-5)


@needs_local
async def test_contextual_bertscore_matches_greedy_matching_on_transformer_states(
    local_provider,
) -> None:
    expected, actual = PARAPHRASES[1]
    embedder = registry.embedder(provider_settings_module.from_environment())
    e, a = await embedder.embed_tokens([expected, actual])
    sim = 1.0 - cdist(a.vectors.astype(float), e.vectors.astype(float), metric="cosine")
    p, r = sim.max(axis=1).mean(), sim.max(axis=0).mean()
    result = await BertScoreLike().score(sample(expected), Output(actual))
    assert result.details["precision"] == pytest.approx(p, abs=1e-6)
    assert result.details["recall"] == pytest.approx(r, abs=1e-6)
    assert result.value == pytest.approx(2 * p * r / (p + r), abs=1e-6)


@needs_local
async def test_contextual_idf_uses_word_pieces(local_provider) -> None:
    references = [e for e, _ in PARAPHRASES]
    samples = [sample(text, f"s{i}") for i, text in enumerate(references)]
    metric = BertScoreLike(idf=True)
    await metric.prepare(samples)
    table, unseen = metric._idf
    assert table["the"] == pytest.approx(0.0)  # 'the' is in all 4 references: log(5/5)
    assert table["cat"] == pytest.approx(math.log(5 / 2))  # 'cat' is in 1 of 4
    assert unseen == pytest.approx(math.log(5))
    result = await metric.score(samples[0], Output(PARAPHRASES[0][1]))
    assert 0.0 < result.value <= 1.0 and result.details["idf"] is True


@needs_local
async def test_cosine_with_the_local_model_prefers_paraphrases(local_provider) -> None:
    metric = CosineEmbedding()
    para = [(await metric.score(sample(e), Output(a))).value for e, a in PARAPHRASES]
    unrelated = [(await metric.score(sample(e), Output(a))).value for e, a in UNRELATED]
    assert min(para) > max(unrelated)


async def test_lone_surrogates_are_failures_not_crashes(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    for metric in (CosineEmbedding(), BertScoreLike()):
        with pytest.raises(MetricError, match="output must be valid UTF-8 text"):
            await metric.score(sample("fine"), Output("bad \ud800 text"))
    assert openai_server.total_calls() == 0


async def test_dimensions_option(
    openai_server: OpenAIServer, provider_settings: ProviderSettings
) -> None:
    openai_server.embed = lambda texts: [hash_vector(t, 8) for t in texts]
    metric = resolve({"name": "cosine-embedding", "dimensions": "8"})
    result = await metric.score(sample("a"), Output("b"))
    assert result.details["expected_dim"] == 8
    assert openai_server.requests[0][1]["dimensions"] == 8
    with pytest.raises(MetricConfigError):
        resolve({"name": "bertscore-like", "dimensions": 0})


def test_dimensions_need_the_openai_provider(hashing) -> None:
    with pytest.raises(MetricError, match="applies to the openai embedding provider only"):
        asyncio.run(CosineEmbedding(dimensions=64).score(sample("a"), Output("b")))
