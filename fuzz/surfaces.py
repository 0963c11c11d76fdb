"""One case per call for each input surface; each raises only what the surface may raise."""

from __future__ import annotations

import contextlib
import json
import os
import random
import zipfile
from collections.abc import Callable
from pathlib import Path

from fuzz.generate import (
    BUNDLE_NAMES,
    document,
    judge_reply,
    manifest,
    mutate,
    regex_case,
    value,
)


def judge(rng: random.Random, work: Path) -> None:
    from assay.calibration.model import Criterion
    from assay.errors import JudgeParseError
    from assay.judging import replies
    from assay.metrics.rubric import parse_criterion_reply, parse_rubric_reply

    reply = judge_reply(rng)
    parsers: list[Callable[[str], object]] = [
        replies.parse_verdict,
        replies.parse_refusal,
        lambda t: parse_rubric_reply(t, (Criterion(name="score"),)),
        lambda t: parse_criterion_reply(t, Criterion(name="score")),
        lambda t: replies.parse_tez_claim(t, 2),
        replies.parse_tez_relevance,
    ]
    for parse in parsers:
        with contextlib.suppress(JudgeParseError):
            parse(reply)


def regex(rng: random.Random, work: Path) -> None:
    from assay.data.dataset import Sample
    from assay.data.outputs import Output
    from assay.metrics.lexical import Regex

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
    from assay.data.loading import load_dataset

    shape = {"name": "d", "metrics": ["exact-match"], "samples": [SAMPLE]}
    load_dataset(_file(rng, work, shape, "yml json jsonl txt"))


def outputs(rng: random.Random, work: Path) -> None:
    from assay.data.loading import load_outputs

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


def bundle(rng: random.Random, work: Path) -> None:
    """A .tez zip or a bundle folder with a mutated manifest and hostile entry names."""
    from assay.tez.bundle import Limits, open_bundle

    text = json.dumps(manifest(rng))
    if rng.random() < 0.5:
        text = mutate(rng, text)
    if rng.random() < 0.02:
        text = "[" * 30_000 + "]" * 30_000
    files = {"manifest.json": text.encode("utf-8", "surrogatepass")}
    for _ in range(rng.randrange(4)):
        body = rng.choice([b"# a\n", b"\xff\xfe bad utf-8", b"x" * 5000, b"\x00" * 64])
        files[rng.choice(BUNDLE_NAMES)] = body
    limits = Limits(max_file_bytes=4096) if rng.random() < 0.2 else None
    if rng.random() < 0.6:
        target = work / "case.tez"
        with zipfile.ZipFile(
            target, "w", rng.choice([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
        ) as z:
            for name, body in files.items():
                if "\x00" not in name:  # zipfile itself cuts a name at NUL
                    z.writestr(name, body)
    else:
        target = work / "bundle"  # one folder, emptied per case, so the work area stays small
        remove_tree(target)
        for name, body in files.items():
            path = target / name.replace("\x00", "_")
            inside = path.resolve().is_relative_to(target.resolve())
            if not inside or name.endswith("/") or len(name) > 200:
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(body)
        target.mkdir(exist_ok=True)
        if rng.random() < 0.03:
            nested(target, rng.choice([70, 1500]))
    loaded = open_bundle(target, limits=limits)
    for name in loaded.files:
        loaded.read_text(name)


def nested(root: Path, depth: int) -> None:
    """``depth`` folders one inside the next under ``root``, a file at the bottom."""
    folder = root / "deep"
    folder.mkdir()
    fd = os.open(folder, os.O_RDONLY)
    try:
        for _ in range(depth):  # relative to an open folder: no path grows past PATH_MAX
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(os.open("f.md", os.O_WRONLY | os.O_CREAT, dir_fd=fd))
    finally:
        os.close(fd)


def remove_tree(root: Path) -> None:
    """Remove ``root`` and all below it without recursion (Python 3.11's rmtree recurses)."""
    if not root.is_dir() or root.is_symlink():
        root.unlink(missing_ok=True)
        return
    stack, folders = [str(root)], []
    while stack:
        folder = stack.pop()
        folders.append(folder)
        for entry in os.scandir(folder):
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
            else:
                os.unlink(entry.path)
    for folder in reversed(folders):
        os.rmdir(folder)


def _otlp_value(rng: random.Random) -> object:
    """An OTLP/JSON AnyValue, or a wild value where one is expected."""
    raw = value(rng)
    if rng.random() < 0.3:
        return raw
    kind = rng.choice(["stringValue", "intValue", "doubleValue", "boolValue", "arrayValue"])
    return {kind: {"values": [{"stringValue": raw}]} if kind == "arrayValue" else raw}


def _otlp_body(rng: random.Random) -> tuple[bytes, str]:
    keys = ["gen_ai.input.messages", "gen_ai.output.messages", "input.value", "output.value",
            "retrieval.documents.0.document.content", "gen_ai.tool.name", "session.id",
            "gen_ai.operation.name", "gen_ai.usage.input_tokens",
            "gen_ai.tool.call.arguments"]  # fmt: skip
    spans = [
        {
            "traceId": rng.choice(["0" * 31 + "1", "ab" * 16, "", "zz", "1" * rng.randrange(70)]),
            "spanId": rng.choice(["0" * 15 + "2", "", "1" * rng.randrange(30)]),
            "name": rng.choice(["chat", "", "\u0000"]),
            "startTimeUnixNano": rng.choice(["1", "-1", "18446744073709551616", 3, None]),
            "attributes": [
                {"key": rng.choice(keys), "value": _otlp_value(rng)}
                for _ in range(rng.randrange(6))
            ],
        }
        for _ in range(rng.randrange(1, 4))
    ]
    document = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    try:
        text = json.dumps(document, allow_nan=True)
    except (ValueError, RecursionError):  # a value nested past json's own limit
        text = '{"resourceSpans": ' + "[" * 30_000 + "]" * 30_000 + "}"
    if rng.random() < 0.5:
        return mutate(rng, text).encode("utf-8", "surrogatepass"), "application/json"
    from assay.errors import TraceError
    from assay.production.otlp import parse_json

    try:
        body = parse_json(text, "seed").SerializeToString()
    except TraceError:
        body = text.encode("utf-8", "surrogatepass")
    cut = bytearray(body[: rng.randrange(len(body) + 1)] if rng.random() < 0.3 else body)
    for _ in range(rng.randrange(4)):
        if cut:
            cut[rng.randrange(len(cut))] = rng.randrange(256)
    return bytes(cut), "application/x-protobuf"


def otlp(rng: random.Random, work: Path) -> None:
    """An OTLP/HTTP body through the whole intake: decode, map, redact, store, assemble."""
    from assay.production.intake import Intake
    from assay.production.mapping import TraceMapping
    from assay.production.monitor import output_of, sample_of
    from assay.production.otlp import parse_body
    from assay.production.redact import Redactor
    from assay.production.store import TraceStore

    body, kind = _otlp_body(rng)
    spans = parse_body(body, kind, "", "case")
    kept = Intake(Redactor(), TraceMapping()).prepare(spans)
    store = TraceStore(work / "traces.sqlite")
    try:
        store.write(kept)
        for trace_id in {s.trace_id for s in kept}:
            record = store.record(trace_id)
            if record is not None:
                sample_of(record)
                output_of(record)
    finally:
        store.close()


SURFACES: dict[str, Callable[[random.Random, Path], None]] = {
    "judge": judge,
    "regex": regex,
    "dataset": dataset,
    "outputs": outputs,
    "tez": tez,
    "labels": labels,
    "bundle": bundle,
    "otlp": otlp,
}
