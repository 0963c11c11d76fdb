"""Loading a golden dataset and a saved-outputs file: whole, or, for a large JSONL file, indexed
on disk and read back as the run needs it.

A JSONL or JSON file of 8 MB or more is indexed (:mod:`assay.data.dataset_stream`,
:mod:`assay.data.outputs_stream`): every line or entry is checked first, as reading it whole would
check it, and only where each one is and a hash of its id are kept. Anything the index cannot
take (an invalid entry, a duplicate id, an odd line break, a conversation) makes it step aside,
and the file is read whole, which reports the problem with the file, sample and field exactly as
for a small file.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from assay.data.dataset import Dataset, read_dataset
from assay.data.dataset_stream import stream_document, stream_samples
from assay.data.outputs import Output, read_outputs
from assay.data.outputs_stream import stream_outputs


def load_dataset(path: str | Path) -> Dataset:
    """Load a dataset from ``.yml``/``.yaml``, ``.json`` or ``.jsonl`` (one sample per line)."""
    path = Path(path)
    if path.suffix.lower() == ".jsonl":
        samples = stream_samples(path)
        if samples is not None:
            return Dataset.model_construct(name=path.stem, samples=samples)  # type: ignore[arg-type]
    if path.suffix.lower() == ".json":
        document = stream_document(path)
        if document is not None:
            return document
    return read_dataset(path)


def load_outputs(path: str | Path) -> Mapping[str, Output]:
    """Load a saved-outputs file into ``{sample_id: Output}``."""
    path = Path(path)
    if path.suffix.lower() in (".jsonl", ".json"):
        streamed = stream_outputs(path)
        if streamed is not None:
            return streamed
    return read_outputs(path)
