"""A real run store with two quickstart runs, and `assay view` serving it on loopback."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from assay.cli import main
from assay.view.data import ViewData
from assay.view.server import ViewServer

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
# The second run fixes one answer and breaks another: one fail->pass and one pass->fail flip.
FIXED, BROKEN = "capital-australia", "capital-japan"


@dataclass
class Runs:
    store: Path
    first: str
    second: str
    reports: dict[str, dict]


def _run(work: Path, outputs: Path, report: Path, *extra: str) -> dict:
    with contextlib.suppress(SystemExit):
        main(
            [
                "run",
                str(work / "dataset.yml"),
                "--outputs",
                str(outputs),
                "--store",
                str(work / ".assay" / "runs.db"),
                "-q",
                "-f",
                "json",
                "-o",
                str(report),
                *extra,
            ]
        )
    return json.loads(report.read_text())


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    work = tmp_path_factory.mktemp("view-project")
    (work / "dataset.yml").write_text((QUICKSTART / "dataset.yml").read_text())
    saved = json.loads((QUICKSTART / "outputs.json").read_text())
    (work / "outputs.json").write_text(json.dumps(saved))
    saved["outputs"][FIXED], saved["outputs"][BROKEN] = "Canberra", "Kyoto"
    (work / "outputs-v2.json").write_text(json.dumps(saved))
    here = Path.cwd()
    os.chdir(work)
    try:
        first = _run(work, work / "outputs.json", work / "r1.json")
        second = _run(work, work / "outputs-v2.json", work / "r2.json", "--min-macro-f1", "0.99")
    finally:
        os.chdir(here)
    ids = [first["run"]["run_id"], second["run"]["run_id"]]
    return Runs(work / ".assay" / "runs.db", ids[0], ids[1], dict(zip(ids, [first, second])))


@contextlib.contextmanager
def serving(store: Path, *, redact: bool = False) -> Iterator[ViewServer]:
    """`assay view` over ``store`` on a free loopback port, for the block's duration."""
    data = ViewData(store, redact=redact)
    server = ViewServer(data, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        data.close()
        thread.join(timeout=5)


@pytest.fixture
def server(runs: Runs) -> Iterator[ViewServer]:
    with serving(runs.store) as server:
        yield server
