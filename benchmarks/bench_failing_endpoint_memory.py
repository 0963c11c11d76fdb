"""Peak memory of ``assay run`` against endpoints that fail every request with a 1 MiB page.

A loopback server (its own process, asyncio) answers every POST with ``502 Bad Gateway`` and a
1 MiB HTML body. ``assay run`` scores N samples (default 10,000) through it twice: as the judge
endpoint (``llm-as-judge`` over saved outputs, no retries) and as the HTTP system under test
(``--sut-url``, ``exact-match``). Every sample ends as an errored row; the figure is the run's
peak resident memory (``ru_maxrss`` of the child), which must stay under 300 MB.

    python benchmarks/bench_failing_endpoint_memory.py [--samples 10000] [--src DIR]

``--src`` runs another source tree (an older checkout's ``src``) for a before/after figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = b"<html>" + b"x" * (1024 * 1024 - 6)
HEAD = b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n"


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            await reader.readexactly(length)
            writer.write(HEAD % len(PAGE) + PAGE)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


def _serve(ready: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    async def main() -> None:
        server = await asyncio.start_server(_handle, "127.0.0.1", 0, backlog=1024)
        ready.put(server.sockets[0].getsockname()[1])
        await server.serve_forever()

    asyncio.run(main())


def _inputs(directory: Path, count: int) -> tuple[Path, Path]:
    samples = [
        {"id": f"q{i:05d}", "input": {"question": f"Q{i}?"}, "expected_output": f"A{i}"}
        for i in range(count)
    ]
    dataset = directory / "dataset.json"
    document = {"schema_version": "assay.dataset.v1", "name": "failing", "samples": samples}
    dataset.write_text(json.dumps(document), encoding="utf-8")
    outputs = directory / "outputs.json"
    answers = {sample["id"]: f"answer {sample['id']}" for sample in samples}
    outputs.write_text(json.dumps({"outputs": answers}), encoding="utf-8")
    return dataset, outputs


def _run(src: Path, args: list[str], workdir: Path) -> tuple[float, float, int]:
    """(peak RSS in MB, wall seconds, exit code) of one ``assay run``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "OPENAI_"))}
    env |= {"PYTHONPATH": str(src), "OPENAI_API_KEY": "sk-bench", "ASSAY_PROVIDER_MAX_RETRIES": "0"}
    command = [sys.executable, "-m", "assay", "run", *args, "-q", "-f", "json"]
    command += ["--store", str(workdir / "runs.db"), "-o", str(workdir / "report.json")]
    started = time.perf_counter()
    child = subprocess.Popen(
        command, env=env, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(child.pid, 0)
    return usage.ru_maxrss / 1024, time.perf_counter() - started, os.waitstatus_to_exitcode(status)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--src", type=Path, default=ROOT / "src")
    options = parser.parse_args()
    ready: multiprocessing.Queue = multiprocessing.Queue()  # type: ignore[type-arg]
    server = multiprocessing.Process(target=_serve, args=(ready,), daemon=True)
    server.start()
    url = f"http://127.0.0.1:{ready.get(timeout=30)}/v1"
    print(f"{options.samples} samples, every request answered 502 with 1 MiB; src {options.src}")
    try:
        with tempfile.TemporaryDirectory() as scratch:
            workdir = Path(scratch)
            dataset, outputs = _inputs(workdir, options.samples)
            judge = [str(dataset), "--outputs", str(outputs), "--base-url", url, "--no-cache"]
            judge += ["--judge-model", "bench", "--metric", "llm-as-judge"]
            sut = [str(dataset), "--sut-url", url, "--metric", "exact-match"]
            for name, args in (("judge endpoint", judge), ("HTTP system under test", sut)):
                peak, wall, code = _run(options.src, args, workdir)
                print(f"  {name:24} peak RSS {peak:7.1f} MB   {wall:6.1f} s   exit {code}")
    finally:
        server.terminate()


if __name__ == "__main__":
    main()
