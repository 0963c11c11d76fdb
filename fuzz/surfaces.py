"""One case per call for each input surface; each raises only what the surface may raise."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable
from pathlib import Path

from fuzz.generate import document, judge_reply, regex_case


def judge(rng: random.Random, work: Path) -> None:
    from assay.calibration.model import Criterion
    from assay.metrics import judge as metric_judge
    from assay.metrics.rubric import parse_criterion_reply, parse_rubric_reply
    from assay.tez import judge as tez_judge

    reply = judge_reply(rng)
    parsers: list[Callable[[str], object]] = [
        metric_judge.parse_verdict,
        metric_judge.parse_refusal,
        lambda t: parse_rubric_reply(t, (Criterion(name="score"),)),
        lambda t: parse_criterion_reply(t, Criterion(name="score")),
        lambda t: tez_judge.parse_claim_verdict(t, 2),
        tez_judge.parse_relevance,
    ]
    for parse in parsers:
        with contextlib.suppress(metric_judge.JudgeParseError, tez_judge.JudgeParseError):
            parse(reply)


def regex(rng: random.Random, work: Path) -> None:
    from assay.dataset import Sample
    from assay.metrics.lexical import Regex
    from assay.outputs import Output

    pattern, text = regex_case(rng)
    sample = Sample(id="s", input={"q": "?"}, expected_output=pattern)
    Regex().score(sample, Output(text))


def _file(rng: random.Random, work: Path, shape: dict[str, object], suffixes: str) -> Path:
    suffix = rng.choice(suffixes.split())
    path = work / f"case.{suffix}"
    text = document(rng, shape)
    if suffix == "jsonl":
        text = "\n".join([text, document(rng, shape)])
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return path


SAMPLE = {"id": "s1", "input": {"question": "q"}, "expected_output": "a"}


def dataset(rng: random.Random, work: Path) -> None:
    from assay.dataset import load_dataset

    shape = {"name": "d", "metrics": ["exact-match"], "samples": [SAMPLE]}
    load_dataset(_file(rng, work, shape, "yml json jsonl txt"))


def outputs(rng: random.Random, work: Path) -> None:
    from assay.outputs import load_outputs

    load_outputs(_file(rng, work, {"outputs": {"s1": "answer"}}, "yml json jsonl"))


def tez(rng: random.Random, work: Path) -> None:
    from assay.tez.session import load_expectations, load_session

    turn = {"query_id": "q1", "query": "q", "response": "r [[tez.md]]"}
    load_session(_file(rng, work, {"turns": [turn]}, "json jsonl yml"))
    load_expectations(_file(rng, work, {"q1": {"behavior": "answer"}}, "json yml"))


def labels(rng: random.Random, work: Path) -> None:
    from assay.calibration.loaders import load_labels

    item = {"id": "i1", "human": {"accurate": "MET"}, "judges": {"j": {"accurate": "UNMET"}}}
    path = _file(rng, work, {"criteria": [{"name": "accurate"}], "items": [item]}, "json yml")
    if rng.random() < 0.2:
        path = work / "case.csv"
        rows = ["item_id,criterion,human", "i1,accurate,MET", document(rng)[:200]]
        path.write_text("\n".join(rows), encoding="utf-8", errors="surrogatepass")
    load_labels(path)


SURFACES: dict[str, Callable[[random.Random, Path], None]] = {
    "judge": judge,
    "regex": regex,
    "dataset": dataset,
    "outputs": outputs,
    "tez": tez,
    "labels": labels,
}
