"""Large JSONL and JSON datasets kept on disk: validated once, then read back sample by sample.

A 1,000,000-sample dataset is about 2 GB as pydantic objects. Here the file is read once,
every sample validated as :func:`assay.data.dataset.read_dataset` would, and only where each sample
is (a JSONL line's offset, 8 bytes; a JSON document's element's byte span, 16 bytes, found by
:mod:`assay.data.json_items`) and a hash of each id (8 bytes, for the duplicate check) are kept;
a JSONL file's offsets and every file's hashes in temporary files (:mod:`assay.data.spill_log`),
so memory does not grow with the file. The samples are then parsed again each time the run walks
them. Anything unusual (an invalid line, a duplicate id or even a hash collision, an odd line
break, a document shape the scan does not take) makes :func:`stream_samples` or
:func:`stream_document` return None, and the caller loads the file whole, which reports the
problem exactly as before; a JSONL file too large to be read whole has its problem named by a
second pass instead (:func:`explain_jsonl_dataset`).
"""

from __future__ import annotations

import itertools
import json
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn, overload

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
from assay.data.spill_log import SpillLog, duplicate_hash, has_duplicates
from assay.errors import DatasetError, NotIndexable, UnusualLineBreaks

STREAM_MIN_BYTES = 8 * 1024 * 1024  # smaller files are simply loaded whole
PARSE_GROUP = 256  # lines of a large JSONL dataset parsed in one call as a run reads them


def is_large(path: Path) -> bool:
    """Whether a file is big enough to be kept on disk (and not past the size limit)."""
    size = _size(path)
    return size is not None and STREAM_MIN_BYTES <= size <= MAX_DATASET_BYTES


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None


def stream_samples(path: Path) -> JsonlSamples | None:
    """The samples of a large JSONL file, left on disk; None: load the file whole.

    A JSONL file over the size a file read whole may have (:data:`MAX_DATASET_BYTES`) is read
    only this way, so when the index cannot take it, :func:`explain_jsonl_dataset` says why.
    """
    size = _size(path)
    if size is None or size < STREAM_MIN_BYTES:
        return None
    samples = JsonlSamples.from_file(path)
    if samples is None and size > MAX_DATASET_BYTES:
        explain_jsonl_dataset(path)
    return samples


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


class IndexedSamples(Sequence[Sample]):
    """Samples left in a file, parsed and validated each time they are read; subclasses say
    where each sample's text is (:meth:`_texts` in file order, :meth:`_text_at` by index)."""

    def __init__(
        self,
        path: Path,
        id_hashes: SpillLog,
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
        offsets: SpillLog,
        id_hashes: SpillLog,
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
        offsets, hashes = SpillLog(), SpillLog()
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
        if not len(offsets) or has_duplicates(hashes):
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
        id_hashes: SpillLog,
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
        spans, hashes = array("q"), SpillLog()
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
        if scan.kind != "array" or not len(hashes) or has_duplicates(hashes):
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


def explain_jsonl_dataset(path: Path) -> NoReturn:
    """Why a JSONL dataset too large to read whole cannot be read a line at a time: the first
    bad line, or a repeated id, named with the file, sample and field as the whole-file reader
    names them (:class:`DatasetError`)."""
    hashes = SpillLog()
    try:
        for number, _, line in iter_entries(path, first_offset(path)):
            value = parse_jsonl_line(line, number, path, DatasetError)
            try:
                checked = _checked_value(value)
            except (DatasetError, ValidationError):  # the whole-file reader's words for it
                dataset_from_data({"name": path.stem, "samples": [value]}, source=str(path))
                raise
            if checked is None:
                raise DatasetError(_TOO_LARGE + "; a conversation is read whole", file=str(path))
            hashes.append(hash(checked[0]))
    except UnusualLineBreaks:
        raise DatasetError(
            _TOO_LARGE + "; lines must end with \\n or \\r\\n", file=str(path)
        ) from None
    except UnicodeDecodeError as exc:
        raise DatasetError(f"not UTF-8 text ({exc.reason})", file=str(path)) from None
    repeated = duplicate_hash(hashes)
    if repeated is not None:
        _name_duplicate(path, repeated)
    raise DatasetError(_TOO_LARGE, file=str(path))


_TOO_LARGE = f"file is over {MAX_DATASET_BYTES} bytes, the most read whole"


def _name_duplicate(path: Path, repeated: int) -> None:
    """Raise for the id that hashes to ``repeated`` when two lines have it (a 64-bit hash
    collision of two different ids returns: such a file cannot be indexed)."""
    seen: dict[str, int] = {}
    for number, _, line in iter_entries(path, first_offset(path)):
        checked = _checked(line, number, path)
        if checked is None or hash(checked[0]) != repeated:
            continue
        if checked[0] in seen:
            raise DatasetError(
                f"duplicate id {checked[0]!r} (first used at line {seen[checked[0]]}, "
                f"repeated at line {number})",
                file=str(path),
                sample=checked[0],
                field="id",
            )
        seen[checked[0]] = number
