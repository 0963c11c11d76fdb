"""Start-up imports: ``assay --help`` loads no heavy library (pydantic, numpy, rich, yaml, scipy,
the openai SDK), ``assay validate`` and a lexical run load no library they do not use, and
each command loads no other command's module.

Checked by module presence in a fresh interpreter, not by timing (benchmarks/bench_startup.py
times it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from openai_server import OpenAIServer

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
QUICKSTART = ROOT / "examples" / "quickstart"
HEAVY = ("pydantic", "numpy", "rich", "yaml", "scipy", "openai", "httpx", "regex", "sklearn")
NEVER_FOR_A_RUN = ("numpy", "scipy", "sklearn", "openai", "httpx", "rich", "torch")
COMMAND_MODULES = (
    "assay.cli.core",
    "assay.cli.run",
    "assay.cli.gate",
    "assay.cli.adversarial",
    "assay.cli.calibration",
    "assay.cli.providers",
    "assay.cli.tez",
    "assay.cli.view",
    "assay.compare.comparison",
)
PROBE = """
import contextlib, io, json, sys
from assay.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):
    main(sys.argv[2:])
print(json.dumps({"loaded": [m for m in json.loads(sys.argv[1]) if m in sys.modules],
                  "stdout": out.getvalue()}))
"""


def _probe(
    argv: list[str],
    watched: tuple[str, ...],
    cwd: Path,
    *,
    code: str = PROBE,
    env: dict[str, str] | None = None,
) -> dict[str, object]:
    """Run ``assay ARGV`` in a fresh interpreter under ``code`` (by default: which ``watched``
    modules it loaded, and its stdout); the probe's last line, as JSON."""
    if env is None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
        env["PYTHONPATH"] = str(SRC)
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(watched), *argv],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_help_imports_nothing_heavy(tmp_path: Path) -> None:
    result = _probe(["--help"], HEAVY + COMMAND_MODULES, tmp_path)
    assert result["loaded"] == []
    help_text = str(result["stdout"])
    assert "Usage:" in help_text and "run" in help_text


def test_validate_loads_only_what_a_dataset_check_needs(tmp_path: Path) -> None:
    dataset = str(QUICKSTART / "dataset.yml")
    result = _probe(["validate", dataset], NEVER_FOR_A_RUN + COMMAND_MODULES, tmp_path)
    assert result["loaded"] == ["assay.cli.core"]
    assert "ok (30 samples" in str(result["stdout"])


def test_lexical_run_loads_no_model_client_no_scipy_no_asyncio_and_no_other_command(
    tmp_path: Path,
) -> None:
    report = tmp_path / "report.json"
    argv = ["run", str(QUICKSTART / "dataset.yml"), "--outputs", str(QUICKSTART / "outputs.json")]
    argv += ["-m", "exact-match", "-q", "--no-store", "-f", "json", "-o", str(report)]
    watched = ("scipy", "sklearn", "openai", "httpx", "rich", "torch", "asyncio")
    watched += COMMAND_MODULES
    result = _probe(argv, watched, tmp_path)
    # numpy is the report's statistics (assay.report.aggregate/statistics); the mean's t
    # interval reads scipy's quantile from the table scripts/t_table.py writes (scipy.special
    # itself costs ~0.35 s of start-up).
    # Saved outputs are scored without an event loop, so asyncio (~55 ms) is not loaded either.
    assert result["loaded"] == ["assay.cli.run"]
    (metric,) = json.loads(report.read_text(encoding="utf-8"))["metrics"]
    assert metric["mean_ci"]["low"] < metric["mean"] < metric["mean_ci"]["high"]


def test_a_comparison_loads_no_scipy_stats(tmp_path: Path) -> None:
    """``assay compare`` and ``--compare``: the paired tests take Student's t tail and the
    binomial from scipy.special, the normal quantiles from the stdlib (scipy.stats: ~0.5 s)."""
    reports = []
    for name, outputs in (("before", "outputs.json"), ("after", "outputs.json")):
        report = tmp_path / f"{name}.json"
        argv = ["run", str(QUICKSTART / "dataset.yml"), "--outputs", str(QUICKSTART / outputs)]
        argv += ["-q", "--no-store", "-f", "json", "-o", str(report)]
        if reports:
            argv += ["--compare", str(reports[0])]
        assert _probe(argv, ("scipy.stats",), tmp_path)["loaded"] == []
        reports.append(report)
    assert "comparison" in json.loads(reports[1].read_text(encoding="utf-8"))
    compared = _probe(["compare", str(reports[1]), str(reports[0])], ("scipy.stats",), tmp_path)
    assert compared["loaded"] == [] and "pass" in str(compared["stdout"]).lower()


JUDGE_PROBE = """
import json, socket, sys
watched, first = json.loads(sys.argv[1]), []
connect = socket.socket.connect

def connect_and_note(self, address):
    if not first:
        first.append([m for m in watched if m in sys.modules])
    return connect(self, address)

socket.socket.connect = connect_and_note
from assay.cli import main
try:
    main(sys.argv[2:])
except SystemExit:
    pass
print(json.dumps({"at_first_request": first[0] if first else None}))
"""


def test_judge_run_sends_its_first_request_before_loading_numpy(
    openai_server: OpenAIServer, tmp_path: Path
) -> None:
    """numpy and scipy are for the report: they load while the judge's replies are awaited;
    PyYAML is for YAML files, and this run reads JSON. The openai SDK is never loaded."""
    samples = [
        {"id": f"q{i}", "input": {"question": f"Q{i}?"}, "expected_output": "A."} for i in range(3)
    ]
    dataset, outputs = tmp_path / "d.json", tmp_path / "o.json"
    dataset.write_text(
        json.dumps({"schema_version": "assay.dataset.v1", "name": "p", "samples": samples}),
        encoding="utf-8",
    )
    outputs.write_text(json.dumps({"outputs": {f"q{i}": "A." for i in range(3)}}), "utf-8")
    argv = ["run", str(dataset), "--outputs", str(outputs), "-m", "llm-as-judge", "-q"]
    argv += ["--base-url", openai_server.url, "--no-cache", "--store", str(tmp_path / "r.db")]
    argv += ["-f", "json", "-o", os.devnull]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "OPENAI_"))}
    env.update(PYTHONPATH=str(SRC), OPENAI_API_KEY="sk-test-not-a-key")
    watched = ("numpy", "scipy", "yaml", "sklearn", "openai", "httpx", "rich", "torch")
    watched += COMMAND_MODULES
    result = _probe(argv, watched, tmp_path, code=JUDGE_PROBE, env=env)
    # httpx is the provider transport (issue 33); importing it loads its own CLI's rich too.
    assert result == {"at_first_request": ["httpx", "rich", "assay.cli.run"]}
    assert openai_server.total_calls() == 3
