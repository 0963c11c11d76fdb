"""Runs cases START.. of one surface in this process; ``fuzz.__main__`` watches it.

The index of the case being run is written to PROGRESS before each case, so the watcher knows
which case a crash or a hang happened on. The summary is one JSON line on stdout.
"""

from __future__ import annotations

import json
import os
import random
import struct
import sys
import tempfile
from collections import Counter
from pathlib import Path

from fuzz.surfaces import SURFACES


def main(surface: str, seed: int, start: int, stop: int, progress: str) -> None:
    from assay.errors import AssayError

    run = SURFACES[surface]
    untyped: Counter[str] = Counter()
    examples: dict[str, int] = {}
    counts = Counter[str]()
    fd = os.open(progress, os.O_WRONLY)
    with tempfile.TemporaryDirectory() as folder:
        for index in range(start, stop):
            os.pwrite(fd, struct.pack("<q", index), 0)
            rng = random.Random(f"{seed}:{surface}:{index}")
            try:
                run(rng, Path(folder))
                counts["ok"] += 1
            except AssayError:
                counts["typed"] += 1
            except Exception as exc:  # what the fuzzer is here to find
                name = type(exc).__name__
                untyped[name] += 1
                examples.setdefault(name, index)
            if (index - start) % 1000 == 999:  # a running total survives a later crash
                _summary(counts, untyped, examples)
    _summary(counts, untyped, examples)


def _summary(counts: Counter[str], untyped: Counter[str], examples: dict[str, int]) -> None:
    """One cumulative JSON line; the watcher keeps the last one a worker printed."""
    print(json.dumps({"counts": counts, "untyped": untyped, "examples": examples}), flush=True)


if __name__ == "__main__":
    surface, seed, start, stop, progress = sys.argv[1:6]
    main(surface, int(seed), int(start), int(stop), progress)
