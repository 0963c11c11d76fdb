"""Peak memory of ``assay run`` as the dataset grows, per system-under-test path.

    python scripts/memory_growth.py --sizes 5000 20000 --paths http python outputs

Each run is a fresh ``assay`` process (JSON report, run store on) against a loopback HTTP
system under test, a Python callable, or a saved-outputs file; its peak resident set size
comes from the kernel (``wait4``). Flat memory means the per-sample growth between sizes is
small next to the size of one sample's row in the store.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

from runner.sut_server import SutServer, write_dataset  # noqa: E402

PYTHON_SUT = "def answer(sample):\n    return 'answer ' + sample.input['qid']\n"


def peak_rss_mb(args: list[str], cwd: Path) -> float:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{cwd}"}
    process = subprocess.Popen(
        [sys.executable, "-m", "assay", *args], cwd=cwd, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"assay {' '.join(args)} failed: {process.stderr.read().decode()[-400:]}")
    return usage.ru_maxrss / 1024


def measure(path_kind: str, size: int, url: str, work: Path) -> float:
    dataset = work / f"d{size}.json"
    ids = write_dataset(dataset, size)
    common = [str(dataset), "-q", "-f", "json", "-o", str(work / "r.json")]
    common += ["--store", str(work / f"{path_kind}{size}.db")]
    if path_kind == "http":
        return peak_rss_mb(["run", *common, "--sut-url", url], work)
    if path_kind == "python":
        (work / "memsut.py").write_text(PYTHON_SUT, encoding="utf-8")
        return peak_rss_mb(["run", *common, "--sut", "memsut:answer"], work)
    outputs = work / f"o{size}.json"
    outputs.write_text(json.dumps({"outputs": {i: f"answer {i}" for i in ids}}), "utf-8")
    return peak_rss_mb(["run", *common, "--outputs", str(outputs)], work)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[5000, 20000])
    parser.add_argument("--paths", nargs="+", default=["http", "python", "outputs"])
    options = parser.parse_args()
    with SutServer() as server, tempfile.TemporaryDirectory() as folder:
        for kind in options.paths:
            peaks = [measure(kind, size, server.url, Path(folder)) for size in options.sizes]
            shown = ", ".join(f"{s}: {p:.0f} MB" for s, p in zip(options.sizes, peaks))
            growth = (peaks[-1] - peaks[0]) * 1024 / max(1, options.sizes[-1] - options.sizes[0])
            print(f"{kind:8} {shown}; {growth:.2f} KB per extra sample")


if __name__ == "__main__":
    main()
