"""``assay simulate`` on examples/chat's bot against the loopback server: conversations turn by
turn, written as a dataset that validates, scored per conversation and by goal-accuracy."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from assay.data.loading import load_dataset
from generate.conftest import CHAT, cli
from openai_server import CHAT as CHAT_PATH
from openai_server import OpenAIServer, Step


@pytest.fixture
def bot(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.syspath_prepend(str(CHAT))
    sys.modules.pop("bot", None)
    return "bot:reply"


def simulate(capsys: pytest.CaptureFixture[str], url: str, *args: str) -> tuple[int, str]:
    code, _, err = cli(capsys, "simulate", *args, "--base-url", url)
    return code, err


def test_the_chat_bot_is_simulated_and_scored(
    scripted: OpenAIServer, capsys: pytest.CaptureFixture[str], bot: str
) -> None:
    goals = str(CHAT / "goals.yml")
    code, err = simulate(capsys, scripted.url, goals, "--sut", bot, "--report", "r.json")
    assert code == 0, err
    assert "planned 16 calls" in err.splitlines()[0]  # 2 conversations x 8 turns, before any
    assert cli(capsys, "validate", "simulated.yml")[0] == 0
    dataset = load_dataset(Path("simulated.yml"))
    turns = [s.id for s in dataset.samples if s.metadata.get("conversation")]
    assert turns == ["berlin-trip#1", "berlin-trip#2", "berlin-trip#3", "refund#1", "refund#2"]
    outputs = json.loads(Path("simulated.outputs.json").read_text())["outputs"]
    berlin = next(o for o in outputs if o["id"] == "berlin-trip")["turns"]
    assert berlin[-1] == "Done: you are booked on Friday's 07:10 flight to Berlin."  # needs history

    report = json.loads(Path("r.json").read_text())
    rows = {row["id"]: row for row in report["rows"]}
    assert rows["berlin-trip#goal"]["scores"]["goal-accuracy"]["score"] == 1.0
    assert rows["refund#goal"]["scores"]["goal-accuracy"]["score"] == 0.0
    for conversation in report["conversations"]:
        (metric,) = conversation["metrics"]
        scores = [
            row["scores"]["answer-relevancy"]["score"]
            for rid, row in rows.items()
            if rid.startswith(conversation["id"] + "#") and rid[-1].isdigit()
        ]
        assert conversation["turns"] == len(scores)
        assert metric["mean"] == pytest.approx(sum(scores) / len(scores))
        assert metric["min"] == min(scores)
    assert "scored 'refund': 2 turns; goal-accuracy 0.00 (not_achieved)" in err
    run_id = err.split("stored as run ", 1)[1].split()[0]
    code, out, _ = cli(capsys, "runs")
    assert code == 0 and run_id in out and "chat.travel-desk.goals.simulated" in out

    calls = scripted.calls[CHAT_PATH]
    code, err = simulate(capsys, scripted.url, goals, "--sut", bot, "-o", "again.yml")
    assert code == 0 and scripted.calls[CHAT_PATH] == calls  # user turns and verdicts cached
    assert Path("again.yml").read_text() == Path("simulated.yml").read_text()


def _goals(tmp_path: Path, goal: str = "Fly to Berlin; travel on Friday") -> Path:
    sample = {
        "id": "trip",
        "input": {"customer": "ana"},
        "expected_output": "booked",
        "metadata": {"goal": goal, "persona": "Ana"},
    }
    other = {"id": "plain", "input": {"question": "hi"}, "expected_output": "hello"}
    path = tmp_path / "goals.yml"
    path.write_text(yaml.safe_dump({"name": "g", "samples": [sample, other]}))
    return path


def test_the_turn_limit_a_failing_bot_and_a_malformed_user_end_a_conversation(
    scripted: OpenAIServer, capsys: pytest.CaptureFixture[str], tmp_path: Path, bot: str
) -> None:
    goals = str(_goals(tmp_path, "a; b; c; d; e"))
    code, err = simulate(capsys, scripted.url, goals, "--sut", bot, "--max-turns", "2")
    assert code == 0, err
    assert "skipped sample 'plain': no metadata.goal" in err
    assert "conversation 'trip': 2 turns, ended max-turns" in err

    (tmp_path / "broken.py").write_text(
        "def reply(data):\n    if data['history']:\n        raise RuntimeError('down')\n"
        "    return 'hello'\n"
    )
    code, err = simulate(
        capsys, scripted.url, goals, "--sut", "broken:reply", "-o", "b.yml", "--no-cache"
    )
    assert code == 0 and "1 turn, ended sut-error: raised RuntimeError" in err
    assert len(load_dataset(Path("b.yml")).samples) == 2  # one turn, and the goal sample

    scripted.script(CHAT_PATH, Step.chat("not json"), Step.chat('{"status": "maybe"}'))
    code, err = simulate(capsys, scripted.url, goals, "--sut", bot, "-o", "c.yml", "--no-cache")
    assert code == 1 and "0 turns, ended user-error" in err and "after one re-ask" in err
    assert "nothing was written" in err and not Path("c.yml").exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--max-turns", "0"), "--max-turns must be between"),
        (("--metric", "no-such-metric"), "unknown metric"),
        (("--sut", "nomodule:reply"), "cannot import"),
        (("--sut-timeout", "-1"), "--sut-timeout must be"),
    ],
)
def test_bad_options_end_in_one_line_and_exit_2_before_any_call(
    scripted: OpenAIServer,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    bot: str,
    extra: tuple[str, ...],
    message: str,
) -> None:
    code, err = simulate(capsys, scripted.url, str(_goals(tmp_path)), "--sut", bot, *extra)
    assert code == 2 and message in err and err.count("\n") == 1
    assert scripted.calls[CHAT_PATH] == 0


def test_a_dataset_without_goals_is_a_usage_error(
    scripted: OpenAIServer, capsys: pytest.CaptureFixture[str], bot: str
) -> None:
    code, err = simulate(capsys, scripted.url, str(CHAT / "dataset.yml"), "--sut", bot)
    assert code == 2 and "no sample has both metadata.goal and metadata.persona" in err


def test_ids_that_would_collide_in_the_transcripts_are_refused_before_any_call(
    scripted: OpenAIServer, capsys: pytest.CaptureFixture[str], tmp_path: Path, bot: str
) -> None:
    meta = {"goal": "Fly to Berlin", "persona": "Ana"}
    samples = [
        {"id": "a", "input": {}, "expected_output": "x", "metadata": meta},
        {"id": "a#goal", "input": {}, "expected_output": "x", "metadata": meta},
    ]
    path = tmp_path / "clash.yml"
    path.write_text(yaml.safe_dump({"name": "clash", "samples": samples}))
    code, err = simulate(capsys, scripted.url, str(path), "--sut", bot)
    assert code == 2 and "a#goal" in err and err.count("\n") == 1
    assert scripted.calls[CHAT_PATH] == 0


def test_a_reply_no_file_could_hold_ends_the_conversation_not_the_process(
    scripted: OpenAIServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "odd.py").write_text(
        "def reply(data):\n    return 'fine' if not data['history'] else 'bad \\ud800'\n"
    )
    goals = str(_goals(tmp_path))
    code, err = simulate(capsys, scripted.url, goals, "--sut", "odd:reply")
    assert (
        code == 0 and "1 turn, ended sut-error: returned text in 'output' that is not valid" in err
    )
    assert "fine" in Path("simulated.outputs.json").read_text()


def test_the_budget_stops_simulated_users_and_a_rerun_resumes_from_the_cache(
    scripted: OpenAIServer, capsys: pytest.CaptureFixture[str], tmp_path: Path, bot: str
) -> None:
    goals = str(_goals(tmp_path, "a; b; c; d; e; f"))
    args = ("--sut", bot, "--user-model", "gpt-4o-mini", "--judge-model", "gpt-4o-mini")
    code, err = simulate(capsys, scripted.url, goals, *args, "--budget-usd", "0.0002")
    assert code == 1 and "budget reached" in err and "ended budget" in err
    asked = scripted.calls[CHAT_PATH]
    assert 0 < asked < 7
    assert "not scored: the budget was reached" in err  # scoring would spend more
    code, err = simulate(capsys, scripted.url, goals, *args, "-o", "full.yml")
    assert code == 0 and "6 turns, ended done" in err
    # the paid user turns replay from the cache: the other user turns (6 messages and the
    # 'done') and the goal verdict are sent
    assert scripted.calls[CHAT_PATH] - asked == (7 - asked) + 1
