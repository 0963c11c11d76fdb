"""RankedDocs, the lazy ``Output.retrieved``: a read-only sequence of Retrieved that behaves
like the tuple of Retrieved it replaces (compared here against such tuples, built by hand)."""

from __future__ import annotations

import copy
import gc
import pickle
from dataclasses import replace

import pytest

from assay.data.outputs import Output, RankedDocs, Retrieved, coerce_output, parse_retrieved
from assay.errors import SystemUnderTestError

IDS = ("d3", "d1", "d7")
TEXTS = ("three", "", "seven")
AS_TUPLE = (Retrieved("d3", "three"), Retrieved("d1"), Retrieved("d7", "seven"))


def test_ids_only_holds_plain_tuples() -> None:
    docs = RankedDocs(["a", "b"])
    assert docs.ids == ("a", "b") and type(docs.ids) is tuple
    assert docs.texts is None
    assert RankedDocs(("a", "b"), ("", "")).texts is None  # no text anywhere: None


def test_texts_must_match_ids() -> None:
    with pytest.raises(ValueError, match="one text per id"):
        RankedDocs(("a", "b"), ("x",))


def test_equal_both_ways_to_tuples_and_lists_of_retrieved() -> None:
    docs = RankedDocs(IDS, TEXTS)
    assert docs == AS_TUPLE and AS_TUPLE == docs  # noqa: SIM300 (both operand orders)
    assert docs == list(AS_TUPLE) and list(AS_TUPLE) == docs
    assert docs == RankedDocs(IDS, TEXTS)
    assert RankedDocs(("a",)) == (Retrieved("a"),) == RankedDocs(("a",), ("",))
    assert docs != AS_TUPLE[:2] and docs != (*AS_TUPLE[:2], Retrieved("d7"))
    assert docs != RankedDocs(IDS)  # same ids, texts differ
    assert RankedDocs(("a",)) != ("a",)  # ids are not Retrieved entries
    assert RankedDocs(()) == () and RankedDocs(()) != (Retrieved("a"),)
    assert docs != "d3" and docs != None  # noqa: E711


def test_hash_is_the_tuple_hash() -> None:
    docs = RankedDocs(IDS, TEXTS)
    assert hash(docs) == hash(AS_TUPLE) == hash(RankedDocs(IDS, TEXTS))
    assert {docs: 1}[AS_TUPLE] == 1


def test_repr_shows_ids_and_texts() -> None:
    assert repr(RankedDocs(("a", "b"))) == "RankedDocs(('a', 'b'))"
    assert repr(RankedDocs(("a",), ("x",))) == "RankedDocs(('a',), texts=('x',))"
    assert eval(repr(RankedDocs(IDS, TEXTS))) == RankedDocs(IDS, TEXTS)


def test_indexing_slicing_and_iteration_give_retrieved() -> None:
    docs = RankedDocs(IDS, TEXTS)
    assert len(docs) == 3 and bool(docs) and not RankedDocs(())
    assert [docs[i] for i in range(3)] == list(AS_TUPLE)
    assert docs[-1] == Retrieved("d7", "seven") and docs[-3] == AS_TUPLE[0]
    with pytest.raises(IndexError):
        docs[3]
    assert docs[1:] == AS_TUPLE[1:] and isinstance(docs[1:], RankedDocs)
    assert docs[::-1] == AS_TUPLE[::-1] and docs[:0] == ()
    assert docs[1:2].texts is None  # the slice's only entry has no text
    assert list(docs) == list(AS_TUPLE) and tuple(RankedDocs(("a",))) == (Retrieved("a"),)
    assert list(reversed(docs)) == list(reversed(AS_TUPLE))
    assert Retrieved("d1") in docs and Retrieved("d1", "x") not in docs
    assert docs.index(Retrieved("d7", "seven")) == 2 and docs.count(Retrieved("d1")) == 1


def test_read_only() -> None:
    docs = RankedDocs(IDS)
    with pytest.raises(TypeError):
        docs[0] = Retrieved("x")  # type: ignore[index]
    with pytest.raises(AttributeError):
        docs.other = 1  # type: ignore[attr-defined]


@pytest.mark.parametrize("docs", [RankedDocs(IDS, TEXTS), RankedDocs(IDS), RankedDocs(())])
def test_pickles_and_copies(docs: RankedDocs) -> None:
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(docs, protocol))
        assert type(back) is RankedDocs and back == docs and back.texts == docs.texts
    assert copy.copy(docs) == docs and copy.deepcopy(docs) == docs
    output = Output("x", docs, contexts=("c",))
    assert pickle.loads(pickle.dumps(output)) == output


def test_ids_are_not_tracked_by_the_gc() -> None:
    docs = parse_retrieved([f"doc-{n}" for n in range(100)])
    gc.collect()
    assert not gc.is_tracked(docs.ids)


# --------------------------------------------------------------------------- Output


def test_output_takes_retrieved_tuples_and_lists() -> None:
    for given in (AS_TUPLE, list(AS_TUPLE)):
        output = Output("x", given)
        assert type(output.retrieved) is RankedDocs
        assert output.retrieved == AS_TUPLE and output.retrieved.ids == IDS
        assert output.retrieved.texts == TEXTS
    docs = RankedDocs(IDS)
    assert Output("x", docs).retrieved is docs  # kept as given
    assert Output("x").retrieved is None
    assert Output("x", ()).retrieved == () and Output("x", ()).retrieved is not None


def test_output_keeps_duplicates_and_order_given() -> None:
    """Output does not rank or deduplicate: only parsing what a system returned does."""
    given = (Retrieved("b"), Retrieved("a"), Retrieved("b"))
    assert Output("x", given).retrieved == given


def test_output_rejects_entries_that_are_not_retrieved() -> None:
    with pytest.raises(TypeError, match="Retrieved entries"):
        Output("x", ["a", "b"])  # type: ignore[list-item]


def test_output_equality_hash_and_replace() -> None:
    a, b = Output("x", AS_TUPLE), Output("x", list(AS_TUPLE))
    assert a == b and hash(Output("x", AS_TUPLE)) == hash(Output("x", RankedDocs(IDS, TEXTS)))
    assert replace(a, text="y").retrieved == AS_TUPLE
    assert Output("x", AS_TUPLE, usage={"n": 1}) == Output("x", AS_TUPLE)  # usage not compared


def test_context_texts_and_json_read_the_texts() -> None:
    output = Output("x", AS_TUPLE)
    assert output.context_texts() == ("three", "seven")
    assert output.to_json() == {
        "output": "x",
        "retrieved": [{"id": "d3", "text": "three"}, "d1", {"id": "d7", "text": "seven"}],
    }
    ids_only = Output("x", (Retrieved("a"), Retrieved("b")))
    assert ids_only.context_texts() is None
    assert ids_only.to_json() == {"output": "x", "retrieved": ["a", "b"]}
    assert Output("x", AS_TUPLE, contexts=("c",)).context_texts() == ("c",)


def test_saved_output_round_trips_through_json() -> None:
    output = Output("x", AS_TUPLE)
    assert coerce_output(output.to_json()) == output


# --------------------------------------------------------------------------- parse_retrieved


def test_parse_retrieved_ids_keep_their_best_rank() -> None:
    docs = parse_retrieved(["b", "a", "b", "c", "a"])
    assert docs.ids == ("b", "a", "c") and docs.texts is None
    assert docs == (Retrieved("b"), Retrieved("a"), Retrieved("c"))


def test_parse_retrieved_mixed_entries() -> None:
    docs = parse_retrieved(
        [{"id": "a", "text": "A"}, 7, "a", {"id": "b"}, {"id": "c", "text": 5}, {"id": "7"}]
    )
    assert docs.ids == ("a", "7", "b", "c")
    assert docs.texts == ("A", "", "", "")
    assert docs == (Retrieved("a", "A"), Retrieved("7"), Retrieved("b"), Retrieved("c"))
    assert parse_retrieved([{"id": "a"}]).texts is None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("a", "'retrieved' must be a list"),
        ({"a": 1}, "'retrieved' must be a list"),
        (["a", ""], r"'retrieved\[1\]' must be a non-empty id"),
        (["a", None], r"'retrieved\[1\]'"),
        ([True], r"'retrieved\[0\]'"),
        ([{"id": ""}], r"'retrieved\[0\]'"),
        ([{"id": 3}], r"'retrieved\[0\]'"),
    ],
)
def test_parse_retrieved_errors(raw: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_retrieved(raw)
    with pytest.raises(SystemUnderTestError, match=message):
        coerce_output({"output": "", "retrieved": raw})
