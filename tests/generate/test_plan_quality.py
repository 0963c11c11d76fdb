"""The task stream (kind mix, seeds) and the quality checks, on their own."""

from __future__ import annotations

import contextlib
import itertools
import json
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz import fuzz, utils

from assay.errors import JudgeParseError, UsageError
from assay.generate.corpus import Chunk, read_corpus
from assay.generate.plan import KINDS, kind_sequence, parse_mix, tasks
from assay.generate.prompts import parse_check, parse_generation, parse_user_turn
from assay.generate.quality import Duplicates, heuristic_check, leaks
from generate.conftest import DOCS


def test_mix_parsing_refuses_unknown_kinds_and_bad_weights() -> None:
    assert parse_mix(["single-fact=3", "unanswerable=1"]) == {"single-fact": 3, "unanswerable": 1}
    for bad in (
        ["trivia=1"],
        ["single-fact=x"],
        ["single-fact"],
        ["single-fact=-1"],
        ["multi-hop=0"],
    ):
        with pytest.raises(UsageError, match="--mix"):
            parse_mix(bad)


@pytest.mark.parametrize("weights", [(4, 2, 2, 1), (1, 0, 0, 1), (5, 3, 1, 1)])
def test_every_prefix_of_the_kind_stream_follows_the_mix(weights: tuple[int, ...]) -> None:
    mix = dict(zip(KINDS, weights))
    total = sum(weights)
    sequence = list(itertools.islice(kind_sequence(mix), 200))
    for length in range(1, 201):
        counts = Counter(sequence[:length])
        for kind, weight in mix.items():
            assert abs(counts[kind] - length * weight / total) < 1.0 + 1e-9, (length, kind)


def test_tasks_repeat_for_a_seed_and_differ_for_another() -> None:
    corpus = read_corpus(DOCS)
    mix = parse_mix(None)

    def ids(seed: int) -> list[tuple[str, tuple[str, ...], int]]:
        stream = itertools.islice(tasks(corpus, mix, ["a", "b"], seed), 40)
        return [(t.kind, tuple(c.id for c in t.chunks), t.seed) for t in stream]

    assert ids(7) == ids(7)
    assert ids(7) != ids(8)
    for task in itertools.islice(tasks(corpus, mix, (), 1), 60):
        docs = [c.document for c in task.chunks]
        if task.kind == "multi-hop":  # the same document, when it has two or more chunks
            several = sum(c.document == docs[0] for c in corpus.chunks) > 1
            assert len(docs) == 2 and (docs[0] == docs[1]) == several
        if task.kind == "comparison":
            assert len(set(docs)) == 2
        if task.kind in ("single-fact", "unanswerable"):
            assert len(docs) == 1


def test_answer_leak_is_a_whole_answer_in_the_question() -> None:
    assert leaks("Is the fare 2.40 euros, or 3.90?", "2.40 euros")
    assert leaks("Why does THE BLUE FERRY leave late?", "the blue ferry")
    assert not leaks("How much is a single ticket in Zone A?", "2.40 euros")
    assert not leaks("Which trains run at night?", "rain")


def test_heuristic_check_needs_every_claim_in_the_passages() -> None:
    chunk = Chunk("d.md#1", "d.md", "D", "A bike ticket costs 2 euros and is valid all day.")
    assert heuristic_check("single-fact", "A bike ticket costs 2 euros.", [chunk]).reason is None
    off = heuristic_check("single-fact", "A bike ticket costs 5 euros on Mondays.", [chunk])
    assert off.reason == "unsupported"
    assert heuristic_check("unanswerable", "The documents do not say.", [chunk]).reason is None


def test_near_duplicates_follow_rapidfuzz_token_sort_ratio() -> None:
    questions = [
        "How much does a bike ticket cost?",
        "What does a bike ticket cost?",
        "cost bike ticket how much does a?",
        "When do night trains run?",
    ]
    kept = Duplicates(threshold=90.0)
    kept.add("q1", questions[0])
    for question in questions[1:]:
        expected = fuzz.token_sort_ratio(questions[0].lower(), question.lower()) >= 90.0
        found = kept.match(question)
        assert (found is not None) == expected, question
        if found is not None:
            assert found[0] == "q1"
    assert kept.match(questions[2]) is not None  # word order does not hide a duplicate


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(),
        st.builds(
            json.dumps,
            st.recursive(
                st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
                max_leaves=8,
            ),
        ),
    )
)
def test_reply_parsers_accept_or_refuse_any_text(text: str) -> None:
    for parse in (parse_generation, parse_check, parse_user_turn):
        with contextlib.suppress(JudgeParseError):  # a parse or a refusal, nothing else
            parse(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60), st.text(max_size=60), st.floats(1, 100))
def test_a_near_duplicate_is_exactly_token_sort_ratio_at_the_threshold(
    kept: str, new: str, threshold: float
) -> None:
    duplicates = Duplicates(threshold)
    duplicates.add("k", kept)
    expected = fuzz.token_sort_ratio(kept, new, processor=utils.default_process)
    found = duplicates.match(new)
    assert (found is not None) == (expected >= threshold)
    if found is not None:
        assert found[1] == pytest.approx(expected)


def test_a_two_passage_answer_must_use_both_passages() -> None:
    bikes = Chunk("b.md#1", "b.md", "B", "A bike ticket costs 2 euros and is valid all day.")
    dogs = Chunk("d.md#1", "d.md", "D", "Dogs need a muzzle and travel on a child ticket.")
    both = "A bike ticket costs 2 euros. Dogs travel on a child ticket."
    assert heuristic_check("comparison", both, [bikes, dogs]).reason is None
    one = heuristic_check("multi-hop", "A bike ticket costs 2 euros.", [bikes, dogs])
    assert one.reason == "one-passage" and "d.md#1" in one.detail


@pytest.mark.parametrize(
    "reply",
    [
        '{"question": "Is it \\ud800?", "answer": "yes"}',
        json.dumps({"question": "Why?" * 2000, "answer": "yes"}),
        '{"question": "Why?", "answer": "yes", "extra": 1}',
        '{"question": "  ", "answer": "yes"}',
        "[1, 2]",
    ],
)
def test_generation_replies_a_file_could_not_hold_are_refused(reply: str) -> None:
    with pytest.raises(JudgeParseError):
        parse_generation(reply)
