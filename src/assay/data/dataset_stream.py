"""Large JSONL and JSON datasets kept on disk: validated once, then read back sample by sample.

A 1,000,000-sample dataset is about 2 GB as pydantic objects. Here the file is read once,
every sample validated as :func:`assay.data.dataset.read_dataset` would, and only where each sample
is (a JSONL line's offset, 8 bytes; a JSON document's element's byte span, 16 bytes, found by
:mod:`assay.data.json_items`) and a hash of each id (8 bytes, for the duplicate check) are kept. The
samples are then parsed again each time the run walks them. Anything unusual (an invalid line,
a duplicate id or even a hash collision, an odd line break, a document shape the scan does not
take) makes :func:`stream_samples` or :func:`stream_document` return None, and the caller loads
the file whole, which reports the problem exactly as before.
"""

from __future__ import annotations

import itertools
import json
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, overload

from pydantic import ValidationError

from assay.data.dataset import (
    Dataset,
    Sample,
    built_sample,
    dataset_from_data,
    is_plain_sample,
    normalise_tags,
)
from assay.data.documents import MAX_DATASET_BYTES, parse_jsonl_line, parse_jsonl_lines
from assay.data.json_items import ItemScan, SpanReader
from assay.data.jsonl_lines import LineReader, first_offset, iter_entries
from assay.errors import DatasetError, NotIndexable, UnusualLineBreaks

STREAM_MIN_BYTES = 8 * 1024 * 1024  # smaller files are simply loaded whole
PARSE_GROUP = 256  # lines of a large JSONL dataset parsed in one call as a run reads them


def is_large(path: Path) -> bool:
    """Whether a file is big enough to be kept on disk (and not past the size limit)."""
    try:
        size = path.stat().st_size
    except OSError:
        return False
    return STREAM_MIN_BYTES <= size <= MAX_DATASET_BYTES


def stream_samples(path: Path) -> JsonlSamples | None:
    """The samples of a large JSONL file, left on disk; None: load the file whole."""
    return JsonlSamples.from_file(path) if is_large(path) else None


def stream_document(path: Path) -> Dataset | None:
    """A large JSON dataset document with its samples left on disk; None: load it whole.

    The document's other members (name, metrics, gate...) are validated with its first sample
    as :func:`assay.data.dataset.dataset_from_data` validates the whole document.
    """
    scanned = DocumentSamples.scan(path) if is_large(path) else None
    if scanned is None:
        return None
    samples, header, first = scanned
    try:
        head = dataset_from_data({**header, "samples": [first]}, source=str(path))
    except DatasetError:
        return None
    return head.model_copy(update={"samples": samples})


def has_duplicates(hashes: array[int]) -> bool:
    """Whether two of the 64-bit hashes are equal (a duplicate, or a collision)."""
    import numpy as np

    ordered = np.sort(np.frombuffer(hashes, dtype=np.int64))
    return bool(ordered.size > 1 and (ordered[1:] == ordered[:-1]).any())


class IndexedSamples(Sequence[Sample]):
    """Samples left in a file, parsed and validated each time they are read; subclasses say
    where each sample's text is (:meth:`_texts` in file order, :meth:`_text_at` by index)."""

    def __init__(
        self,
        path: Path,
        id_hashes: array[int],
        metadata_keys: frozenset[str] = frozenset(),
        tags: frozenset[str] = frozenset(),
    ) -> None:
        self.path = path
        self.id_hashes = id_hashes  # hash(id) per sample, in file order
        # Every key any sample's metadata has: a walk looking for one no sample has is skipped.
        self.metadata_keys = metadata_keys
        self.tags = tags  # every cohort tag a sample carries, seen by the checking pass

    def _texts(self) -> Iterator[str]:
        raise NotImplementedError

    def _text_at(self, index: int) -> str:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self.id_hashes)

    def __iter__(self) -> Iterator[Sample]:
        try:
            for text in self._texts():
                yield self._read(text)
        except (UnusualLineBreaks, UnicodeDecodeError, OSError):
            raise self._changed() from None

    @overload
    def __getitem__(self, index: int) -> Sample: ...

    @overload
    def __getitem__(self, index: slice) -> list[Sample]: ...

    def __getitem__(self, index: int | slice) -> Sample | list[Sample]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        try:
            text = self._text_at(index)
        except (UnicodeDecodeError, OSError):
            raise self._changed() from None
        return self._read(text)

    def _read(self, text: str) -> Sample:
        try:
            return _sample(text, 0, self.path)
        except (DatasetError, ValidationError):
            raise self._changed() from None

    def _changed(self) -> DatasetError:
        return DatasetError("the file changed while the run read it", file=str(self.path))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r}, {len(self)} samples)"


class JsonlSamples(IndexedSamples):
    """The samples of a JSONL file: a line each, found by its offset."""

    def __init__(
        self,
        path: Path,
        start: int,
        offsets: array[int],
        id_hashes: array[int],
        metadata_keys: frozenset[str] = frozenset(),
        tags: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__(path, id_hashes, metadata_keys, tags)
        self._start = start
        self._offsets = offsets
        self._reader = LineReader(path)

    @classmethod
    def from_file(cls, path: Path) -> JsonlSamples | None:
        """Validate every line and keep its offset; None when the file must be loaded whole."""
        start = first_offset(path)
        offsets, hashes = array("q"), array("q")
        keys: set[str] = set()
        tags: set[str] = set()
        try:
            for number, offset, line in iter_entries(path, start):
                checked = _checked(line, number, path)
                if checked is None:  # a conversation expands into turns: load it whole
                    return None
                sample_id, metadata = checked
                offsets.append(offset)
                hashes.append(hash(sample_id))
                keys.update(metadata)
                if "tags" in metadata:
                    tags.update(normalise_tags(metadata["tags"]))
        except (UnusualLineBreaks, UnicodeDecodeError, DatasetError, ValidationError, OSError):
            return None
        if not offsets or has_duplicates(hashes):
            return None
        return cls(path, start, offsets, hashes, frozenset(keys), frozenset(tags))

    def _texts(self) -> Iterator[str]:
        for _, _, line in iter_entries(self.path, self._start):
            yield line

    def __iter__(self) -> Iterator[Sample]:
        """The samples in file order, a group of lines parsed at a time (lines the first pass
        checked one by one; anything unexpected reads the group a line at a time)."""
        texts = self._texts()
        try:
            while group := list(itertools.islice(texts, PARSE_GROUP)):
                values = parse_jsonl_lines(group)
                if values is None:
                    yield from map(self._read, group)
                else:
                    yield from map(self._value, values)
        except (UnusualLineBreaks, UnicodeDecodeError, OSError):
            raise self._changed() from None

    def _value(self, value: object) -> Sample:
        try:
            return _sample_value(value)
        except (DatasetError, ValidationError):
            raise self._changed() from None

    def _text_at(self, index: int) -> str:
        return self._reader.line_at(self._offsets[index])


class DocumentSamples(IndexedSamples):
    """The samples of a JSON dataset document (``{"name": ..., "samples": [...]}``): each
    element of ``samples`` found by its byte span, parsed with the stdlib decoder as when the
    document is read whole."""

    def __init__(
        self,
        path: Path,
        spans: array[int],
        id_hashes: array[int],
        metadata_keys: frozenset[str] = frozenset(),
        tags: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__(path, id_hashes, metadata_keys, tags)
        self._spans = spans  # start, end, start, end... byte offsets
        self._reader = SpanReader(path)

    @classmethod
    def scan(cls, path: Path) -> tuple[DocumentSamples, dict[str, Any], Any] | None:
        """Validate every sample and keep its span: the samples, the document's other members,
        and the first sample's value; None when the file must be loaded whole."""
        scan = ItemScan(path, "samples")
        spans, hashes = array("q"), array("q")
        keys: set[str] = set()
        tags: set[str] = set()
        first: Any = None
        try:
            for item in scan.items():
                checked = _checked_value(item.value)
                if checked is None:  # a conversation expands into turns: load it whole
                    return None
                first = item.value if first is None else first
                spans.extend((item.start, item.end))
                hashes.append(hash(checked[0]))
                keys.update(checked[1])
                if "tags" in checked[1]:
                    tags.update(normalise_tags(checked[1]["tags"]))
        except (NotIndexable, DatasetError, ValidationError):
            return None
        if scan.kind != "array" or not hashes or has_duplicates(hashes):
            return None
        found = cls(path, spans, hashes, frozenset(keys), frozenset(tags))
        return found, scan.header, first

    def _texts(self) -> Iterator[str]:
        spans, reader = self._spans, SpanReader(self.path)
        for index in range(0, len(spans), 2):
            yield reader.text(spans[index], spans[index + 1])

    def _text_at(self, index: int) -> str:
        return self._reader.text(self._spans[2 * index], self._spans[2 * index + 1])

    def _read(self, text: str) -> Sample:
        try:
            return _sample_value(json.loads(text))
        except (ValueError, RecursionError, DatasetError, ValidationError):
            raise self._changed() from None


def _checked(line: str, number: int, path: Path) -> tuple[str, dict[str, Any]] | None:
    """A line's sample id and metadata, once the line is known to validate as a sample; None
    for a conversation (``turns``).

    The common shape (a string or integer id, an object input, an expected output, an object
    metadata, nothing else) is valid by construction and is only looked at; anything else goes
    through the model, which raises for what it rejects.
    """
    return _checked_value(parse_jsonl_line(line, number, path, DatasetError))


def _checked_value(value: Any) -> tuple[str, dict[str, Any]] | None:
    """:func:`_checked` for a value already parsed."""
    if is_plain_sample(value):
        return str(value["id"]), value.get("metadata", {})
    sample = Sample.model_validate(value)
    return None if sample.turns else (sample.id, sample.metadata)


def _sample(line: str, number: int, path: Path) -> Sample:
    """One line's sample, validated as a sample of :class:`Dataset` is.

    A line of the common shape (:func:`~assay.data.dataset.is_plain_sample`) is valid by
    construction: it is built as validation would build it (the id as a string, the same fields
    set), without the model's walk over its values.
    """
    return _sample_value(parse_jsonl_line(line, number, path, DatasetError))


def _sample_value(value: Any) -> Sample:
    """:func:`_sample` for a value already parsed."""
    if is_plain_sample(value):
        return built_sample(value)
    return Sample.model_validate(value)
