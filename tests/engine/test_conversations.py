"""Multi-turn conversations: expansion into turns, turn-by-turn calls with history (Python and
HTTP systems under test), saved outputs per turn, and per-conversation mean and min.

Expected aggregates are worked by hand: `contains` scoring 1.0, 0.0, 1.0 over three turns is a
conversation mean of 0.666667 and a min of 0.0.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from assay import evaluate
from assay.cli.schema_files import load
from assay.data.dataset import dataset_from_data
from assay.data.loading import load_outputs
from assay.errors import DatasetError, OutputsError
from assay.report.markdown import render_markdown

CONVERSATION = {
    "id": "trip",
    "input": {"user": "ana"},
    "metadata": {"tags": ["chat"]},
    "turns": [
        {"user": "Hi, I want to fly to Berlin.", "expected_output": "Berlin"},
        {"user": "On Friday, please.", "expected_output": "Friday"},
        {"user": "Book it.", "expected_output": "booked"},
    ],
}
DOC = {
    "schema_version": "assay.dataset.v1",
    "name": "chat",
    "metrics": ["contains"],
    "samples": [CONVERSATION, {"id": "single", "input": {"q": "x"}, "expected_output": "x"}],
}


def test_a_conversation_expands_into_turn_samples() -> None:
    dataset = dataset_from_data(DOC)
    ids = [s.id for s in dataset.samples]
    assert ids == ["trip#1", "trip#2", "trip#3", "single"]
    second = dataset.samples[1]
    assert second.input == {"user": "ana", "message": "On Friday, please."}
    assert second.expected_output == "Friday"
    assert second.metadata == {
        "tags": ["chat"],
        "conversation": {"id": "trip", "turn": 2, "turns": 3},
    }
    assert second.tags == ["chat"]
    plain = dataset_from_data({"name": "x", "samples": [{"id": "c", "turns": ["Hello there"]}]})
    assert plain.samples[0].input == {"message": "Hello there"}
    assert plain.samples[0].expected_output is None


@pytest.mark.parametrize(
    ("sample", "message"),
    [
        ({"id": "c", "input": {"message": "x"}, "turns": ["Hi"]}, "input.message is reserved"),
        ({"id": "c", "metadata": {"conversation": 1}, "turns": ["Hi"]}, "metadata.conversation"),
        ({"id": "c", "turns": []}, "field 'turns'"),
        ({"id": "c", "turns": [{"user": ""}]}, "field 'turns.0.user'"),
        ({"id": "c", "turns": [{"user": "a", "reply": "b"}]}, "field 'turns.0.reply': unknown"),
        ({"id": "c"}, "field 'input': required field is missing"),
    ],
)
def test_bad_conversations_name_the_sample_and_field(sample: dict, message: str) -> None:
    with pytest.raises(DatasetError, match=message) as info:
        dataset_from_data({"name": "x", "samples": [sample]}, source="d.yml")
    assert str(info.value).startswith("d.yml: ")


def test_expanded_ids_must_stay_unique() -> None:
    samples = [{"id": "c", "turns": ["Hi"]}, {"id": "c#1", "input": {}, "expected_output": 1}]
    with pytest.raises(DatasetError, match="'c#1' is used twice"):
        dataset_from_data({"name": "x", "samples": samples})


def test_the_shipped_schemas_accept_conversations() -> None:
    dataset_schema = jsonschema.Draft202012Validator(load("dataset.v1.json"))
    assert list(dataset_schema.iter_errors(DOC)) == []
    bad = {"name": "x", "samples": [{"id": "c", "turns": [{"user": "a", "reply": "b"}]}]}
    assert list(dataset_schema.iter_errors(bad))
    outputs_schema = jsonschema.Draft202012Validator(load("outputs.v1.json"))
    outputs = {"outputs": [{"id": "trip", "turns": ["a", {"output": "b", "contexts": ["c"]}]}]}
    assert list(outputs_schema.iter_errors(outputs)) == []
    assert list(outputs_schema.iter_errors({"outputs": [{"id": "trip", "turns": []}]}))


# --------------------------------------------------------------------------- a Python SUT


class Agent:
    """Replies naming what it saw: the message, and how many earlier turns the history held."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def __call__(self, data: dict[str, Any]) -> str:
        with self.lock:
            self.seen.append(data)
        history = data.get("history", [])
        if "Friday" in data.get("message", ""):
            return "Sure, which day?"  # misses the expected 'Friday': turn 2 fails
        if data.get("message") == "Book it.":
            earlier = [m["content"] for m in history if m["role"] == "assistant"]
            return f"booked after {len(earlier)} replies: {' / '.join(earlier)}"
        return "Berlin it is."


def test_a_python_sut_is_called_turn_by_turn_with_its_history() -> None:
    agent = Agent()
    report = evaluate(dataset_from_data(DOC), sut=agent, sut_concurrency=8)
    by_message = {call["message"]: call for call in agent.seen if "message" in call}
    third = by_message["Book it."]
    assert third["history"] == [
        {"role": "user", "content": "Hi, I want to fly to Berlin."},
        {"role": "assistant", "content": "Berlin it is."},
        {"role": "user", "content": "On Friday, please."},
        {"role": "assistant", "content": "Sure, which day?"},
    ]
    assert by_message["Hi, I want to fly to Berlin."]["history"] == []
    assert "history" not in next(call for call in agent.seen if "q" in call)
    rows = {row.id: row.scores["contains"].score for row in report.rows}
    assert rows == {"trip#1": 1.0, "trip#2": 0.0, "trip#3": 1.0, "single": 0.0}
    (conversation,) = report.conversations or []
    assert (conversation.id, conversation.turns, conversation.passed) == ("trip", 3, False)
    (contains,) = conversation.metrics
    assert contains.mean == pytest.approx(2 / 3) and contains.min == 0.0
    assert (contains.scored, contains.errored) == (3, 0)
    text = render_markdown(report)
    assert "## Conversations" in text
    assert "| trip | 3 | no | contains | 0.6667 | 0.0000 | 3 | 0 |" in text


def test_a_failed_turn_stops_the_turns_after_it() -> None:
    def flaky(data: dict[str, Any]) -> str:
        if data.get("message", "").startswith("On Friday"):
            raise RuntimeError("backend down")
        return "Berlin, booked"

    report = evaluate(dataset_from_data(DOC), sut=flaky)
    errors = {f.sample_id: f.message for f in report.failures}
    assert errors["trip#2"] == "raised RuntimeError: backend down"
    assert errors["trip#3"] == "turn 2 of conversation 'trip' failed, so turn 3 was not asked"
    (conversation,) = report.conversations or []
    assert conversation.sut_errors == 2 and conversation.metrics[0].scored == 1


def test_repetitions_keep_their_own_history() -> None:
    calls: list[tuple[str, int]] = []

    def counting(data: dict[str, Any]) -> str:
        calls.append((data["message"], len(data["history"])))
        return "Berlin Friday booked"

    doc = {**DOC, "samples": [CONVERSATION]}
    report = evaluate(dataset_from_data(doc), sut=counting, repetitions=2)
    assert sorted(calls) == sorted(
        [("Hi, I want to fly to Berlin.", 0), ("On Friday, please.", 2), ("Book it.", 4)] * 2
    )
    conversations = report.conversations or []
    assert [(c.id, c.repetition, c.passed) for c in conversations] == [
        ("trip", 0, True),
        ("trip", 1, True),
    ]


# --------------------------------------------------------------------------- saved outputs


def test_saved_outputs_per_turn_or_per_conversation(tmp_path: Path) -> None:
    path = tmp_path / "o.json"
    path.write_text(
        json.dumps(
            {
                "outputs": [
                    {"id": "trip", "turns": ["Berlin!", "no", {"output": "booked"}]},
                    {"id": "single", "output": "x"},
                ]
            }
        ),
        encoding="utf-8",
    )
    assert set(load_outputs(path)) == {"trip#1", "trip#2", "trip#3", "single"}
    report = evaluate(dataset_from_data(DOC), outputs=path)
    (conversation,) = report.conversations or []
    assert conversation.metrics[0].mean == pytest.approx(2 / 3)
    path.write_text(json.dumps({"outputs": [{"id": "trip", "turns": []}]}), encoding="utf-8")
    with pytest.raises(OutputsError, match="turns must be a non-empty list"):
        load_outputs(path)


# --------------------------------------------------------------------------- an HTTP SUT


@pytest.fixture
def chat_server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    bodies: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            bodies.append(body)
            reply = json.dumps({"output": f"{len(body['history']) // 2} earlier: Berlin Friday"})
            data = reply.encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/chat", bodies
    finally:
        server.shutdown()
        server.server_close()


def test_the_http_sut_posts_the_history(
    chat_server: tuple[str, list[dict[str, Any]]], tmp_path: Path, monkeypatch: Any
) -> None:
    url, bodies = chat_server
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.yml").write_text(
        yaml.safe_dump({**DOC, "samples": [CONVERSATION]}), encoding="utf-8"
    )
    from assay.cli import main

    with pytest.raises(SystemExit):
        main(["run", "d.yml", "--sut-url", url, "--no-store", "--format", "json", "--quiet"])
    assert sorted(len(b["history"]) for b in bodies) == [0, 2, 4]
    last = max(bodies, key=lambda b: len(b["history"]))
    assert last["message"] == "Book it." and last["user"] == "ana"
    assert last["history"][1] == {"role": "assistant", "content": "0 earlier: Berlin Friday"}


def test_ray_batches_never_split_a_conversation() -> None:
    from assay.data.executions import plan
    from assay.engine.ray_executor import _batches

    doc = {"name": "x", "samples": [
        {"id": "a", "input": {}, "expected_output": 1},
        {"id": "c", "turns": ["x", "y", "z"]},
        {"id": "d", "turns": ["x", "y"]},
    ]}  # fmt: skip
    executions = plan(dataset_from_data(doc).samples, 2)
    batches = [[(e.sample.id, e.repetition) for e in b] for b in _batches(executions, 2)]
    assert batches == [
        [("a", 0), ("a", 1)],
        [("c#1", 0), ("c#1", 1), ("c#2", 0), ("c#2", 1), ("c#3", 0), ("c#3", 1)],
        [("d#1", 0), ("d#1", 1), ("d#2", 0), ("d#2", 1)],
    ]


def test_the_chat_example_scores_as_its_readme_says() -> None:
    import importlib.util

    root = Path(__file__).resolve().parents[2] / "examples" / "chat"
    spec = importlib.util.spec_from_file_location("chat_example_bot", root / "bot.py")
    assert spec is not None and spec.loader is not None
    bot = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bot)
    saved = evaluate(root / "dataset.yml", outputs=root / "outputs.json")
    live = evaluate(root / "dataset.yml", sut=bot.reply)
    for report in (saved, live):
        summary = {
            c.id: (c.passed, c.metrics[0].mean, c.metrics[0].min)
            for c in report.conversations or []
        }
        assert summary == {"berlin-trip": (True, 1.0, 1.0), "refund": (False, 0.5, 0.0)}
    assert [r.scores["contains"].score for r in live.rows] == [1.0, 1.0, 1.0, 1.0, 0.0]
