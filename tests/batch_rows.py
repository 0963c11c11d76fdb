"""Varied (sample, output) rows for the batch tests: every field a built-in metric reads, with
its edge cases (missing, empty, malformed, non-string, unicode), drawn by Hypothesis."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from assay.dataset import Sample
from assay.outputs import Output, Retrieved

WORDS = [
    "refund",
    "Refund",
    "policy",
    "30",
    "days",
    "café",
    "Straße",
    "東京",
    "ΣΟΦΙΑ",
    "naïve",
    "search",
    "lookup_order",
    "send_email",
    "[1]",
    "[policy:refunds]",
    "good",
    "bad",
    "ok",
    "4111 1111 1111 1111",
    "a@example.com",
    "123-45-6789",
    "+1 415 555 0100",
    "GB82 WEST 1234 5698 7654 32",
    "SECRET-CANARY-42",
    "\u200b",
    "\u202e",
    "\U000e0041",
    "\U000e0101",
    "👩\u200d💻",
    "",
    " ",
    "What",
    "is",
    "the",
    "window",
    "?",
    ".",
]
TOOLS = ["search", "lookup_order", "send_email", "refund", " search ", "", "東京"]
LABELS = ["good", "ok", "bad", "refund", "café"]

words = st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join)
junk = st.one_of(st.none(), st.integers(-2, 9), st.booleans(), st.just([1, "x"]), st.just({}))
tool_list = st.one_of(st.sampled_from(TOOLS), st.lists(st.sampled_from(TOOLS), max_size=4), junk)


def mostly(good: st.SearchStrategy[Any], *bad: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``good`` about four times in five, else one of the ``bad`` strategies."""
    return st.integers(0, 4).flatmap(lambda n: good if n or not bad else st.one_of(*bad))


def _call() -> st.SearchStrategy[Any]:
    arguments = mostly(
        st.fixed_dictionaries({}, optional={"q": words, "n": st.sampled_from([7, 7.0, "7", True])}),
        st.none(),
        st.just("not a mapping"),
    )
    named = mostly(
        st.fixed_dictionaries({"name": st.sampled_from(TOOLS[:4])}),
        st.fixed_dictionaries({}, optional={"tool": st.sampled_from(TOOLS)}),
    )
    mapping = st.builds(lambda m, a: {**m, "arguments": a}, named, arguments)
    return mostly(st.one_of(st.sampled_from(TOOLS[:4]), mapping), st.integers(0, 3), st.just(""))


trajectories = mostly(
    st.fixed_dictionaries(
        {},
        optional={
            "tool_calls": mostly(st.lists(_call(), max_size=5), st.none(), st.just("x")),
            "tools": st.lists(st.sampled_from(TOOLS), max_size=3),
            "steps": mostly(st.sampled_from([0, 3, "4", None]), st.sampled_from([-1, "x", True])),
            "pending_approvals": mostly(st.sampled_from([0, 1, "2", None]), st.just(-3)),
            "finish_reason": st.sampled_from(["stop", 3, None]),
            "approvals": mostly(st.lists(st.sampled_from(TOOLS), max_size=3), st.just("x")),
        },
    ),
    st.none(),
    st.just(["not", "a", "mapping"]),
)

expectations = mostly(
    st.fixed_dictionaries(
        {},
        optional={
            "tools": tool_list,
            "forbidden_tools": tool_list,
            "order": tool_list,
            "requires_approval": tool_list,
            "max_steps": st.sampled_from([0, 2, "3", -1, "x", None, True, 10]),
            "tool_arguments": st.one_of(
                st.lists(
                    st.fixed_dictionaries(
                        {"tool": st.sampled_from(TOOLS)},
                        optional={"arguments": st.sampled_from([{}, {"n": 7}, {"q": "x"}, "x"])},
                    ),
                    max_size=3,
                ),
                junk,
            ),
        },
    ),
    st.just("not a mapping"),
)

spans = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "citation": st.sampled_from(["[1]", "[policy:refunds]", "", 3]),
            "quote": st.one_of(words, st.just(3)),
            "quotes": st.one_of(st.lists(words, max_size=2), st.just("x")),
        },
    ),
    max_size=3,
)

metadata = st.fixed_dictionaries(
    {},
    optional={
        "trajectory": expectations,
        "ordinal_scale": st.one_of(
            st.lists(st.sampled_from(LABELS), max_size=4), st.just("good"), st.just(["", "x"])
        ),
        "canary": st.one_of(
            st.sampled_from(["SECRET-CANARY-42", "short", "東京東京東京東京東京", ""]),
            st.lists(st.sampled_from(["SECRET-CANARY-42", "другой-секрет-99"]), max_size=2),
            junk,
        ),
        "pii_allowed": st.one_of(st.sampled_from(["a@example.com", ""]), junk),
        "citations": st.one_of(tool_list, st.sampled_from(["[1]", "[policy:refunds]"])),
        "citation_evidence": st.one_of(spans, junk),
        "relevant": st.one_of(st.lists(st.sampled_from(["d1", "d2", "d3"]), max_size=2), junk),
    },
)

expected_outputs = st.one_of(words, st.sampled_from(LABELS), junk, st.just(""))
inputs = st.one_of(
    st.fixed_dictionaries({"question": words}), st.just({}), st.just({"a": "x", "b": "y"})
)
retrieved = st.one_of(
    st.none(),
    st.lists(
        st.builds(Retrieved, st.sampled_from(["d1", "d2", "d3", "d4"]), words),
        max_size=4,
        unique_by=lambda r: r.id,
    ),
)
outputs = st.builds(
    Output,
    st.one_of(words, st.sampled_from(LABELS), st.just("")),
    retrieved=retrieved,
    trajectory=trajectories,
    contexts=st.one_of(st.none(), st.lists(words, max_size=3).map(tuple)),
)


@st.composite
def batches(draw: Any, max_size: int = 12) -> tuple[list[Sample], list[Output]]:
    """A batch of rows; some rows share an expectation or a scale, as real datasets do."""
    size = draw(st.integers(0, max_size))
    samples = [
        Sample(
            id=f"s{n}",
            input=draw(inputs),
            expected_output=draw(expected_outputs),
            metadata=draw(metadata),
        )
        for n in range(size)
    ]
    return samples, [draw(outputs) for _ in range(size)]
