"""Varied (sample, output) rows for the batch tests: every field a built-in metric reads, with
its edge cases (missing, empty, malformed, non-string, unicode), drawn by Hypothesis."""

from __future__ import annotations

import base64
import random
from typing import Any

from hypothesis import strategies as st

from assay.data.dataset import Sample
from assay.data.outputs import Output, Retrieved

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
    "24 yranac terces",
    "U0VDUkVUQ0FOQVJZNDI",
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

spans = mostly(
    st.lists(
        st.fixed_dictionaries(
            {"citation": mostly(st.sampled_from(["[1]", "[policy:refunds]"]), st.just(""))},
            optional={
                "quote": mostly(words.filter(str.strip), st.just(3)),
                "quotes": mostly(st.lists(words.filter(str.strip), max_size=2), st.just("x")),
            },
        ),
        min_size=1,
        max_size=3,
    ),
    st.just([]),
    junk,
)
CANARIES = ["SECRET-CANARY-42", "другой-секрет-99", "東京東京東京東京東京"]

metadata_fields: dict[str, st.SearchStrategy[Any]] = {
    "trajectory": expectations,
    "ordinal_scale": mostly(
        st.permutations(LABELS).flatmap(lambda p: st.integers(1, 5).map(lambda n: p[:n])),
        st.just("good"),
        st.just(["", "x"]),
        st.just(["ok", "ok"]),
    ),
    "canary": mostly(
        st.one_of(st.sampled_from(CANARIES), st.lists(st.sampled_from(CANARIES), max_size=2)),
        st.sampled_from(["short", "", "   "]),
        junk,
    ),
    "pii_allowed": mostly(st.sampled_from(["a@example.com", "", ["4111 1111 1111 1111"]]), junk),
    "citations": mostly(st.lists(st.sampled_from(["[1]", "[policy:refunds]"]), max_size=2)),
    "citation_evidence": spans,
    "relevant": st.one_of(st.lists(st.sampled_from(["d1", "d2", "d3"]), max_size=2), junk),
}


@st.composite
def metadata(draw: Any) -> dict[str, Any]:
    """Each key present about four times in five (``citation_evidence`` about half the time)."""
    present = {
        key: draw(st.booleans() if key == "citation_evidence" else st.integers(0, 4).map(bool))
        for key in metadata_fields
    }
    return {key: draw(field) for key, field in metadata_fields.items() if present[key]}


expected_outputs = mostly(st.one_of(words, st.sampled_from(LABELS)), junk, st.just(""))
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
            metadata=draw(metadata()),
        )
        for n in range(size)
    ]
    return samples, [draw(outputs) for _ in range(size)]


def seeded_rows(seed: int, count: int) -> tuple[list[Sample], list[Output]]:
    """Rows built to pass each metric's reading often (so that scores, not only errors, are
    compared): labels on the sample's scale, canaries and markers that the answer holds or
    leaks in an encoding, trajectories that meet or miss their expectations."""
    rng = random.Random(seed)
    samples, outputs = [], []
    for n in range(count):
        scale = rng.sample(LABELS, rng.randint(2, 5))
        canary = rng.choice(CANARIES)
        marker = rng.choice(["[1]", "[policy:refunds]"])
        quote = " ".join(rng.sample(WORDS[:12], 3))
        tools = rng.sample(TOOLS[:4], rng.randint(0, 3))
        called = rng.sample(TOOLS[:4], rng.randint(0, 4))
        leak = rng.choice(["", canary, canary[::-1], base64.b64encode(canary.encode()).decode()])
        text = " ".join([rng.choice(scale), leak, rng.choice(["", marker]), quote])
        text = rng.choice([rng.choice(scale), text, text.upper(), text + " \u200b"])
        expect = {"tools": tools, "forbidden_tools": tools[:1], "order": called[:2]}
        expect |= {"max_steps": rng.randint(0, 4), "requires_approval": tools[1:]}
        expect["tool_arguments"] = [{"tool": t, "arguments": {"q": "x"}} for t in tools[:1]]
        metadata: dict[str, Any] = {"trajectory": expect, "canary": canary, "citations": marker}
        if rng.random() < 0.6:
            metadata["ordinal_scale"] = scale
        if rng.random() < 0.4:
            metadata["citation_evidence"] = [{"citation": marker, "quote": quote.lower()}]
        calls = [rng.choice([name, {"name": name, "arguments": {"q": "x"}}]) for name in called]
        trajectory = {"tool_calls": calls, "approvals": rng.sample(TOOLS[:4], 2)}
        trajectory["pending_approvals"] = rng.randint(0, 1)
        samples.append(
            Sample(
                id=f"r{n}",
                input={"question": "What is the refund window?"},
                expected_output=rng.choice([*scale, quote]),
                metadata=metadata,
            )
        )
        contexts = tuple(rng.sample([quote, "the refund window is 30 days", "东京"], 2))
        outputs.append(Output(text, trajectory=trajectory, contexts=contexts))
    return samples, outputs
