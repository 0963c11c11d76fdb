"""Progress on stderr: plain lines when stderr is not a terminal, the rich bar on one."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import subprocess
import textwrap
import time
from pathlib import Path

from assay.data.results import ExecutionResult, ScoreResult
from assay.engine.progress import Counts, LineSchedule, Progress, progress_line, progress_mode
from engine.procs import assay_command, assay_env, run_assay

LINE = re.compile(
    r"^assay: progress (\d+)/(\d+) executions \((\d+)%\), (\d+) failed, (\d+) errored, \d+ s$"
)

SLOW_SUT = """
import time

def answer(sample_input):
    time.sleep(0.15)
    number = int(sample_input["n"])
    if number % 10 == 3:
        raise RuntimeError("boom")
    return "yes" if number % 10 != 7 else "no"
"""


def _result(sample: str, value: float | None, error: str | None = None) -> ExecutionResult:
    return ExecutionResult(sample, 0, {"exact-match": ScoreResult(value, error=error)})


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_lines_come_every_tenth_and_every_ten_seconds_never_in_the_first_second() -> None:
    clock, out = FakeClock(), io.StringIO()
    progress = Progress("lines", stream=out, clock=clock)
    with progress.session(lambda: 100):
        for i in range(100):
            clock.now += 0.5 if i < 40 else 0.02  # 20 s for the first 40, then fast
            progress.advance([_result(str(i), 1.0 if i % 4 else 0.0)])
    lines = out.getvalue().splitlines()
    done = [int(LINE.match(line).group(1)) for line in lines]  # type: ignore[union-attr]
    # 0.5 s apart: one line each time a tenth is crossed (10, 20, 30, 40); then the run speeds
    # up to 0.02 s apart, so the next tenths wait out the one-line-a-second limit; the end
    # is always shown.
    assert done[:4] == [10, 20, 30, 40]
    assert done[-1] == 100 and len(done) == len(set(done))
    last = LINE.match(lines[-1])
    assert last is not None and last.group(3) == "100" and last.group(4) == "25"
    assert "\r" not in out.getvalue()


def test_a_slow_run_with_no_new_tenth_still_reports_every_ten_seconds() -> None:
    schedule = LineSchedule(started=0.0, last_at=0.0)
    assert not schedule.due(1, 1000, 0.5)  # the first second stays quiet
    assert not schedule.due(1, 1000, 9.0)  # 0.1 % done, under 10 s
    assert schedule.due(2, 1000, 10.0)  # 10 s passed
    schedule.mark(2, 10.0)
    assert not schedule.due(3, 1000, 15.0)
    assert schedule.due(100, 1000, 15.0)  # a tenth crossed
    schedule.mark(100, 15.0)
    assert not schedule.due(100, 1000, 20.0)  # nothing new, under 10 s since the last line
    assert schedule.due(100, 1000, 25.0)  # nothing new, but 10 s passed: the run is alive


def test_the_heartbeat_prints_while_no_execution_finishes() -> None:
    out = io.StringIO()
    progress = Progress("lines", stream=out, tick_s=0.02)
    progress.schedule.every_s, progress.schedule.quiet_s = 0.1, 0.0
    with progress.session(lambda: 5):
        deadline = time.monotonic() + 10
        while not out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.02)
    lines = out.getvalue().splitlines()
    assert lines and lines[0].startswith("assay: progress 0/5 executions (0%), 0 failed, 0 errored")
    stopped = out.getvalue()
    time.sleep(0.3)
    assert out.getvalue() == stopped  # the heartbeat ends with the session


def test_a_run_over_within_a_second_prints_nothing() -> None:
    clock, out = FakeClock(), io.StringIO()
    progress = Progress("lines", stream=out, clock=clock)
    with progress.session(lambda: 5):
        for i in range(5):
            clock.now += 0.1
            progress.advance([_result(str(i), 1.0)])
    assert out.getvalue() == ""


def test_counts_use_the_two_words_and_the_thresholds() -> None:
    counts = Counts()
    counts.add(_result("a", 0.6), {"exact-match": 0.7})
    counts.add(_result("b", None, error="no score"), None)
    counts.add(_result("c", 0.6), None)
    assert (counts.done, counts.failed, counts.errored) == (3, 1, 1)
    assert progress_line(counts, 0, 2.4) == "assay: progress 3 executions, 1 failed, 1 errored, 2 s"


def test_modes() -> None:
    assert progress_mode(quiet=True) == "off"
    assert progress_mode(quiet=False, stream=io.StringIO()) == "lines"


def _slow_project(tmp_path: Path, samples: int = 20) -> Path:
    rows = [
        {"id": f"s{i:02d}", "input": {"n": i}, "expected_output": "yes"} for i in range(samples)
    ]
    dataset = {"schema_version": "assay.dataset.v1", "name": "slow", "samples": rows}
    (tmp_path / "d.json").write_text(json.dumps(dataset), encoding="utf-8")
    (tmp_path / "slow_bot.py").write_text(textwrap.dedent(SLOW_SUT), encoding="utf-8")
    return tmp_path


def test_a_non_terminal_gets_plain_lines_with_the_run_counts(tmp_path: Path) -> None:
    folder = _slow_project(tmp_path)
    args = ["run", "d.json", "--sut", "slow_bot:answer", "-m", "exact-match"]
    args += ["--concurrency", "1", "--no-store", "-o", "report.json", "-f", "json"]
    done = run_assay(args, cwd=folder)
    assert done.returncode == 1, done.stderr  # two samples errored, two failed
    assert "\r" not in done.stderr
    lines = [LINE.match(x) for x in done.stderr.splitlines() if x.startswith("assay: progress")]
    assert lines and all(lines), done.stderr
    numbers = [(int(m.group(1)), int(m.group(2))) for m in lines if m]
    assert all(total == 20 for _, total in numbers)
    assert [n for n, _ in numbers] == sorted({n for n, _ in numbers})
    last = lines[-1]
    assert last is not None and last.group(1) == "20" and last.group(3) == "100"
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    assert int(last.group(4)) == report["summary"]["failed_rows"] == 2
    assert int(last.group(5)) == report["summary"]["errored_rows"] == 2
    # The gate names the errored rows as errors, not as failures.
    assert "gate: 2 errors recorded: the system under test or a metric could not" in done.stderr


def test_quiet_prints_no_progress(tmp_path: Path) -> None:
    folder = _slow_project(tmp_path, samples=10)
    args = ["run", "d.json", "--sut", "slow_bot:answer", "-m", "exact-match", "-q"]
    done = run_assay([*args, "--concurrency", "1", "--no-store", "-o", "r.md"], cwd=folder)
    assert done.returncode == 1 and "assay: progress" not in done.stderr


def test_a_terminal_gets_the_bar_and_no_plain_lines(tmp_path: Path) -> None:
    folder = _slow_project(tmp_path)
    args = ["run", "d.json", "--sut", "slow_bot:answer", "-m", "exact-match"]
    args += ["--concurrency", "1", "--no-store", "-o", "r.md"]
    main, child = pty.openpty()
    env = assay_env({"COLUMNS": "100", "TERM": "xterm"})
    proc = subprocess.Popen(
        assay_command(*args),
        cwd=folder,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=child,
    )
    os.close(child)
    seen = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(main)
    assert proc.wait(timeout=120) == 1
    text = seen.decode("utf-8", "replace")
    assert "scoring" in text, text
    assert "assay: progress" not in text


def test_each_of_several_systems_gets_its_own_plain_lines(tmp_path: Path) -> None:
    folder = _slow_project(tmp_path, samples=12)
    (folder / "other_bot.py").write_text("from slow_bot import answer\n", encoding="utf-8")
    args = ["run", "d.json", "--sut", "a=slow_bot:answer", "--sut", "b=other_bot:answer"]
    args += ["-m", "exact-match", "--concurrency", "1", "--no-store", "-o", "r.md"]
    done = run_assay(args, cwd=folder)
    assert done.returncode in (0, 1), done.stderr
    assert "\r" not in done.stderr
    lines = done.stderr.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("assay: running system")]
    assert len(starts) == 2, done.stderr
    for begin, end in ((starts[0], starts[1]), (starts[1], len(lines))):
        ours = [LINE.match(x) for x in lines[begin:end] if x.startswith("assay: progress")]
        assert ours and all(ours), done.stderr
        last = ours[-1]
        assert last is not None and last.group(1) == last.group(2) == "12"
        assert (last.group(4), last.group(5)) == ("1", "1")  # s07 answers "no"; s03 raises
