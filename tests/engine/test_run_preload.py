"""What the end of a run needs loads in a background thread while the run waits on replies
(assay.cli.run_report.preload); the numbers it gives are the same."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from assay.cli import main, run_execution, run_report
from assay.providers import registry
from assay.report.statistics import mean_interval
from openai_server import OpenAIServer

SRC = Path(__file__).resolve().parents[2] / "src"
QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
PROBE = """
import json, sys
from assay.cli.run_report import preload
watched = json.loads(sys.argv[1])
before = [m for m in watched if m in sys.modules]
thread = preload(["json", "md", "json"])
thread.join(60)
print(json.dumps({"before": before, "daemon": thread.daemon,
                  "after": [m for m in watched if m in sys.modules]}))
"""


def run_probe(code: str, *args: str) -> Any:
    """Run ``code`` in a fresh interpreter (assay from this checkout); its last line, as JSON."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        env={"PYTHONPATH": str(SRC), "PATH": ""},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_preload_imports_the_run_end_modules_in_a_fresh_interpreter() -> None:
    loaded = [
        "numpy",
        "statistics",
        "assay.adversarial.lane",
        "assay.adversarial.compliance",
        "assay.compare.gate",
        "assay.engine.rebuild",
        "assay.data.fileio",
        "assay.report.json_stream",
        "assay.report.markdown",
    ]
    watched = [*loaded, "assay.report.html", "assay.report.junit", "scipy", "numpy.ma"]
    result = run_probe(PROBE, json.dumps(watched))
    assert result == {"before": [], "daemon": True, "after": loaded}


PAUSE_PROBE = """
import asyncio, json, sys, threading, time
from assay.cli.run_report import preload
pauses, sleep = [], time.sleep

def counted(seconds):
    if threading.current_thread().name == "assay-preload":
        pauses.append(seconds)
    sleep(seconds)

time.sleep = counted
finders = list(sys.meta_path)

async def main():
    thread = preload(["json"])
    while thread.is_alive():
        await asyncio.sleep(0.005)

asyncio.run(main())
print(json.dumps({"pauses": len(pauses), "finders restored": sys.meta_path == finders,
                  "loaded": "numpy" in sys.modules}))
"""


def test_a_preload_under_a_running_loop_pauses_between_modules() -> None:
    """The thread leaves the GIL free before each module it imports while the run's event
    loop runs (numpy alone is ~110 modules), and puts the finders back."""
    result = run_probe(PAUSE_PROBE)
    assert result["pauses"] > 100
    assert result["finders restored"] and result["loaded"]


def test_the_pauses_are_the_preload_threads_own_and_stop_with_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    slept: list[float] = []
    monkeypatch.setattr(run_report.time, "sleep", slept.append)

    class Loop:
        running = True

        def is_running(self) -> bool:
            return self.running

    loop = Loop()
    finder = run_report._Yielding(loop)
    assert finder.find_spec("first") is None
    other = threading.Thread(target=finder.find_spec, args=("another thread's",))
    other.start()
    other.join()
    loop.running = False
    assert finder.find_spec("after the run") is None
    assert slept == [run_report._PAUSE_S]


def test_a_failed_preload_is_silent_and_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    raised: list[object] = []
    monkeypatch.setattr(threading, "excepthook", raised.append)
    monkeypatch.setattr(
        run_report, "_AFTER_THE_RUN", ("assay_no_such_module_here", "assay.compare.gate")
    )
    thread = run_report.preload(["no-such-format"])
    thread.join(60)
    assert not thread.is_alive()
    assert raised == []
    assert "assay.compare.gate" in sys.modules


def test_mean_interval_after_a_preload_matches_scipy_stats() -> None:
    run_report.preload(["json"]).join(60)
    values = np.array([0.1, 0.4, 0.35, 0.8, 0.55, 0.9, 0.05])
    interval = mean_interval(values)
    assert interval is not None
    low, high = stats.t.interval(
        0.95, df=values.size - 1, loc=values.mean(), scale=stats.sem(values)
    )
    assert interval.low == pytest.approx(max(0.0, low), abs=1e-12)
    assert interval.high == pytest.approx(min(1.0, high), abs=1e-12)


def _top_level_imports() -> dict[str, set[str]]:
    """Each assay module's module-level ``assay`` imports (not those inside functions)."""
    graph: dict[str, set[str]] = {}
    for path in (SRC / "assay").rglob("*.py"):
        name = ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        found: set[str] = set()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
        graph[name] = {m for m in found if m.startswith("assay")}
    return {name: {m for m in deps if m in graph and m != name} for name, deps in graph.items()}


def test_no_preloaded_module_is_in_an_import_cycle() -> None:
    """The thread and the main thread cannot wait on each other's import locks."""
    graph = _top_level_imports()

    def reachable(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for dep in graph[todo.pop()] - seen:
                seen.add(dep)
                todo.append(dep)
        return seen

    preloaded = [*run_report._AFTER_THE_RUN, *run_report._RENDERERS.values()]
    cycles = {
        name: sorted(d for d in reachable(name) if name in reachable(d)) for name in preloaded
    }
    assert cycles == {name: [] for name in preloaded}


def _preloads(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> list[list[str]]:
    """The formats ``assay run ARGV`` asked :func:`run_report.preload` for, one list a call."""
    calls: list[list[str]] = []
    monkeypatch.setattr(run_execution, "preload", lambda formats: calls.append(list(formats)))
    with pytest.raises(SystemExit) as exited:
        main(["run", *argv, "-q", "--no-store"])
    assert exited.value.code in (None, 0)
    return calls


def test_a_run_of_saved_outputs_scored_locally_loads_nothing_early(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    argv = [str(QUICKSTART / "dataset.yml"), "--outputs", str(QUICKSTART / "outputs.json")]
    argv += ["-m", "exact-match", "-f", "json", "-o", os.devnull]
    assert _preloads(monkeypatch, argv) == []


def test_a_judge_run_loads_its_report_modules_once_while_it_waits(
    openai_server: OpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    dataset = tmp_path / "d.json"
    samples = [
        {"id": f"q{i}", "input": {"question": f"Q{i}?"}, "expected_output": "A."} for i in range(3)
    ]
    dataset.write_text(
        json.dumps({"schema_version": "assay.dataset.v1", "name": "p", "samples": samples}),
        encoding="utf-8",
    )
    outputs = tmp_path / "o.json"
    outputs.write_text(json.dumps({"outputs": {f"q{i}": "A." for i in range(3)}}), "utf-8")
    argv = [str(dataset), "--outputs", str(outputs), "-m", "llm-as-judge"]
    argv += ["--base-url", openai_server.url, "--no-cache", "-f", "md", "-o", os.devnull]
    argv += ["--also", f"junit={tmp_path / 'r.xml'}"]
    try:
        assert _preloads(monkeypatch, argv) == [["md", "junit"]]
    finally:
        registry.reset()


DEFERRED_PROBE = """
import json
from assay.report import model
from assay.cli.run_report import preload
before = model.Report.__pydantic_complete__
preload([]).join(60)
built = [name for name, value in vars(model).items()
         if isinstance(value, type) and issubclass(value, model.StrictModel)
         and not value.__pydantic_complete__]
print(json.dumps({"before": before, "not built after": built}))
"""


def test_preload_builds_the_deferred_report_models() -> None:
    """The report models build their validators on first use (a judge run's first request
    does not wait for them); the preload builds them while the run waits on replies."""
    result = run_probe(DEFERRED_PROBE)
    assert result == {"before": False, "not built after": []}
