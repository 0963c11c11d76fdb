"""``assay generate`` against the loopback server: a dataset that validates, labels that point at
real chunks, drops with reasons, a rerun that makes no call, the budget stop and its resume."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from assay.data.loading import load_dataset
from assay.generate.corpus import read_corpus
from assay.generate.quality import REASONS
from generate.conftest import DOCS, ROOT, cli
from openai_server import CHAT, OpenAIServer, Step

SCHEMAS = ROOT / "src" / "assay" / "schemas"


def generate(capsys: pytest.CaptureFixture[str], url: str, *args: str) -> tuple[int, str]:
    code, _, err = cli(capsys, "generate", "--base-url", url, *args)
    return code, err


def test_thirty_samples_validate_and_point_at_real_chunks_and_a_rerun_is_free(
    scripted: OpenAIServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    args = ("--from", str(DOCS), "-n", "30", "-o", "ds.yml", "--summary", "s.json")
    code, err = generate(capsys, scripted.url, *args)
    assert code == 0, err
    assert "planned 30 calls" in err and "made " in err and "kept 30 of 30" in err
    first_calls = scripted.calls[CHAT]
    summary = json.loads(Path("s.json").read_text())
    assert summary["schema_version"] == "assay.generate-summary.v1"
    jsonschema.validate(summary, json.loads((SCHEMAS / "generate-summary.v1.json").read_text()))
    assert first_calls == summary["made"] == summary["calls_sent"]
    assert summary["kept"] == 30 and sum(summary["dropped"].values()) == summary["made"] - 30

    assert cli(capsys, "validate", "ds.yml")[0] == 0
    dataset = load_dataset(Path("ds.yml"))
    chunks = {c.id: c for c in read_corpus(DOCS).chunks}
    kinds = set()
    for sample in dataset.samples:
        meta = sample.metadata
        kinds.add(meta["kind"])
        provenance = meta["provenance"]
        assert set(provenance["chunks"]) <= set(chunks)
        assert [c["text"] for c in meta["contexts"]] == [
            chunks[i].text for i in provenance["chunks"]
        ]
        assert provenance["documents"] == sorted({chunks[i].document for i in provenance["chunks"]})
        if meta["kind"] == "unanswerable":
            assert meta["refusal_expected"] is True and "relevant" not in meta
        else:
            assert set(meta["relevant"]) == set(provenance["chunks"])
    assert kinds == {"single-fact", "multi-hop", "comparison", "unanswerable"}

    code, err = generate(capsys, scripted.url, *args[:-4], "-o", "again.yml")
    assert code == 0, err
    assert scripted.calls[CHAT] == first_calls  # zero calls: every answer came from the cache
    assert "30 answered by the cache, 0 to send" in err
    assert Path("again.yml").read_text() == Path("ds.yml").read_text()


def _one_document(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ferry.md").write_text(
        "# Ferry\n\nThe blue ferry leaves Pier 4 at 09:15 every weekday. "
        "The red ferry leaves Pier 2 at 10:40 on Saturdays. "
        "Tickets for either ferry cost 6 euros for adults.\n"
    )
    return docs


GOOD = {
    "question": "When does the blue ferry leave Pier 4?",
    "answer": "The blue ferry leaves Pier 4 at 09:15.",
}


def test_malformed_duplicate_leaking_and_off_corpus_generations_are_dropped_with_reasons(
    scripted: OpenAIServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    scripted.script(
        CHAT,
        Step.chat("Sure! Here is a question: when does the ferry leave?"),  # not JSON
        Step.chat(json.dumps({"question": "When does the blue ferry leave?"})),  # no answer
        Step.chat(
            json.dumps(
                {
                    "question": "What does the moon cost?",
                    "answer": "The moon costs 99 euros on Mars.",
                }
            )
        ),
        Step.chat(json.dumps({"question": "Is 6 euros the adult fare?", "answer": "6 euros"})),
        Step.chat(json.dumps(GOOD)),
        Step.chat(json.dumps({**GOOD, "question": "when does the BLUE ferry leave pier 4"})),
    )
    docs = _one_document(tmp_path)
    args = ("--from", str(docs), "-n", "3", "--mix", "single-fact=1", "--max-attempts", "12")
    code, err = generate(capsys, scripted.url, *args, "-o", "ds.yml", "--summary", "s.json")
    assert code == 0, err
    summary = json.loads(Path("s.json").read_text())
    assert summary["kept"] == 3
    dropped = summary["dropped"]
    assert dropped["malformed"] == 2 and dropped["unsupported"] == 1
    assert dropped["answer-leak"] == 1 and dropped["near-duplicate"] >= 1
    assert set(dropped) <= set(REASONS)
    for reason, count in dropped.items():
        assert f"{count:>4} {reason}: {REASONS[reason]}" in err
    questions = [
        s["input"]["question"] for s in yaml.safe_load(Path("ds.yml").read_text())["samples"]
    ]
    assert sum("blue ferry leave" in q.lower() for q in questions) == 1

    calls = scripted.calls[CHAT]
    code, err = generate(capsys, scripted.url, *args, "-o", "ds2.yml", "--summary", "s2.json")
    assert code == 0 and scripted.calls[CHAT] == calls  # malformed replies replay too
    assert json.loads(Path("s2.json").read_text())["dropped"] == dropped


def test_the_judge_check_drops_what_the_judge_calls_unsupported(
    scripted: OpenAIServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    docs = _one_document(tmp_path)
    refuse = json.dumps({"answerable": True, "supported": False, "reason": "not in the passage"})
    scripted.script(CHAT, Step.chat(json.dumps(GOOD)), Step.chat(refuse))
    args = ("--from", str(docs), "-n", "1", "--mix", "single-fact=1", "--check", "judge")
    code, err = generate(capsys, scripted.url, *args, "-o", "ds.yml", "--summary", "s.json")
    assert code == 0, err
    summary = json.loads(Path("s.json").read_text())
    assert summary["dropped"] == {"unsupported": 1} and summary["kept"] == 1
    assert summary["made"] == 2 and scripted.calls[CHAT] == 4  # a generation and a check each
    assert "plus one judge check per generated sample" in err


def test_the_budget_stops_before_the_next_call_and_a_rerun_resumes(
    scripted: OpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ("--from", str(DOCS), "-n", "20", "--model", "gpt-4o-mini")
    code, err = generate(capsys, scripted.url, *args, "--budget", "0.0006", "-o", "part.yml")
    assert code == 1 and "budget reached" in err
    paid = scripted.calls[CHAT]
    assert 0 < paid < 20
    assert "$" in err.split("planned", 1)[1].split("\n", 1)[0]  # the estimate, before any call
    code, err = generate(capsys, scripted.url, *args, "-o", "full.yml", "--summary", "s.json")
    assert code == 0, err
    summary = json.loads(Path("s.json").read_text())
    assert summary["calls_cached"] == paid  # what was paid for is not asked again
    assert scripted.calls[CHAT] == paid + summary["calls_sent"]
    partial = load_dataset(Path("part.yml")).samples
    full = {s.id: s for s in load_dataset(Path("full.yml")).samples}
    assert all(full[s.id] == s for s in partial)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--from", "missing"), "no such file or folder"),
        (("--from", "{docs}", "-n", "0"), "-n must be between"),
        (("--from", "{docs}", "--mix", "trivia=2"), "unknown kind"),
        (("--from", "{docs}", "--check", "vibes"), "--check must be"),
        (("--from", "{docs}", "--budget", "nan"), "--budget must be"),
        (("--from", "{docs}", "--persona", " "), "--persona must not be empty"),
    ],
)
def test_bad_options_end_in_one_line_and_exit_2(
    scripted: OpenAIServer,
    capsys: pytest.CaptureFixture[str],
    args: tuple[str, ...],
    message: str,
) -> None:
    code, err = generate(capsys, scripted.url, *(a.format(docs=DOCS) for a in args))
    assert code == 2 and message in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert scripted.calls[CHAT] == 0


def test_a_provider_that_fails_drops_with_an_error_reason_and_writes_nothing(
    scripted: OpenAIServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    docs = _one_document(tmp_path)
    scripted.script(CHAT, *[Step.error(500) for _ in range(4)])
    args = ("--from", str(docs), "-n", "2", "--max-attempts", "2", "-o", "ds.yml")
    code, err = generate(capsys, scripted.url, *args)
    assert code == 1 and "2 error:" in err and "no sample was kept" in err
    assert not Path("ds.yml").exists()


def test_an_output_folder_that_does_not_exist_is_refused_before_any_call(
    scripted: OpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = generate(capsys, scripted.url, "--from", str(DOCS), "-o", "no/such/dir/d.yml")
    assert code == 2 and "does not exist" in err and scripted.calls[CHAT] == 0


def test_personas_and_the_mix_reach_the_prompts_and_json_output_validates(
    scripted: OpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    personas = ("a commuter in a hurry", "a parent with two children")
    args = ("--from", str(DOCS), "-n", "8", "--mix", "comparison=1", "-o", "ds.json")
    code, err = generate(capsys, scripted.url, *args, *(f"--persona={p}" for p in personas))
    assert code == 0, err
    assert cli(capsys, "validate", "ds.json")[0] == 0
    samples = json.loads(Path("ds.json").read_text())["samples"]
    assert {s["metadata"]["kind"] for s in samples} == {"comparison"}
    assert {s["metadata"]["persona"] for s in samples} == set(personas)
    prompts = [r["messages"][0]["content"] for path, r, _ in scripted.requests if path == CHAT]
    for prompt in prompts:
        assert "KIND: comparison" in prompt
        assert sum(f"ask it: {p}." in prompt for p in personas) == 1
    sent = {hashlib.sha256(p.encode()).hexdigest()[:16]: p for p in prompts}
    for sample in samples:  # provenance names the prompt that was sent, and its chunks
        prompt = sent[sample["metadata"]["provenance"]["prompt_hash"]]
        assert all(f'<passage id="{c}"' in prompt for c in sample["metadata"]["relevant"])
