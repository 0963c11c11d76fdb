"""Large JSONL and JSON saved-outputs files kept on disk: checked once, then looked up by id.

The file is read once and every entry checked as :func:`assay.data.outputs.read_outputs` would;
what is kept is the ids' hashes and where each entry is: a JSONL line's offset (16 bytes an
entry, in temporary files: :mod:`assay.data.spill_log`), or a JSON document entry's number and
byte span (32 bytes, in memory; found by :mod:`assay.data.json_items`). Outputs saved in the
dataset's order are read line after line (each lookup tries the line after the last one read);
any other lookup finds the entry by hash in a sorted index (built in memory when first needed),
reads it and checks its id. Anything unusual (an invalid entry, a duplicate id or a hash
collision, an odd line break, a document shape the scan does not take) makes
:func:`stream_outputs` return None, and the caller loads the file whole, which reports the
problem exactly as before; a JSONL file too large to be read whole has its problem named by a
second pass instead (:func:`explain_jsonl_outputs`).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from assay.data.documents import (
    MAX_DATASET_BYTES,
    LineParser,
    parse_jsonl_line,
    parse_jsonl_lines,
)
from assay.data.json_items import ItemScan, SpanReader, parse_item
from assay.data.jsonl_lines import LineReader, first_offset, iter_entries
from assay.data.outputs import Output, check_jsonl_entry, coerce_output, parse_retrieved
from assay.data.spill_log import SpillLog, duplicate_hash, has_duplicates, same_order
from assay.errors import (
    AssayError,
    NotIndexable,
    OutputsError,
    UnusualLineBreaks,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

STREAM_MIN_BYTES = 8 * 1024 * 1024  # smaller files are simply loaded whole
KEEP_BUDGET = 16 * 1024 * 1024  # bytes of lines (plus ENTRY_COST each) whose outputs are kept
ENTRY_COST = 160  # about what an Output and its dict slot take beyond the line's own text
ESTIMATE_BLOCK = 1 << 16  # bytes read to estimate a file's line count for the keep budget
GUESS_SLACK = 64  # lookups stop trying the next line once it missed this many more than it hit


def stream_outputs(path: Path) -> IndexedOutputs | None:
    """The saved outputs of a large JSONL or JSON file, left on disk; None: load it whole.

    A JSONL file over the size a file read whole may have (:data:`MAX_DATASET_BYTES`) is read
    only this way, so when the index cannot take it, :func:`explain_jsonl_outputs` says why.
    """
    try:
        size = path.stat().st_size
    except OSError:
        return None
    if size < STREAM_MIN_BYTES:
        return None
    if path.suffix.lower() == ".json":
        return DocumentOutputs.from_file(path) if size <= MAX_DATASET_BYTES else None
    outputs = JsonlOutputs.from_file(path)
    if outputs is None and size > MAX_DATASET_BYTES:
        explain_jsonl_outputs(path)
    return outputs


def _plain(value: Any) -> tuple[str, str] | None:
    """The id and text of the common line, ``{"id": "...", "output": "..."}``; else None."""
    if type(value) is dict and len(value) == 2:
        sample_id, text = value.get("id"), value.get("output")
        if type(sample_id) is str and sample_id and type(text) is str:
            return sample_id, text
    return None


def _entry(value: Any) -> tuple[str, Output]:
    """A line's id and output, checked as :func:`load_outputs` checks them (ValueError if not)."""
    plain = _plain(value)
    if plain is not None:
        return plain[0], Output(plain[1])
    ranked = _ranked(value)
    if ranked is not None:
        return ranked
    if not isinstance(value, Mapping):
        raise ValueError("not an object")
    sample_id = value.get("id")
    if isinstance(sample_id, bool) or not isinstance(sample_id, (str, int)) or str(sample_id) == "":
        raise ValueError("no id")
    text = value.get("output")
    if len(value) == 2 and type(text) is str:  # {"id", "output": text}: the common line
        return str(sample_id), Output(text)
    return str(sample_id), coerce_output({k: v for k, v in value.items() if k != "id"})


def _ranked(value: object) -> tuple[str, Output] | None:
    """The id and output of a ranking line, ``{"id", "output", "retrieved": [ids]}``, read as
    :func:`coerce_output` reads it; None for any other line (or a bad ranking: coerce_output
    then says why)."""
    if type(value) is not dict or len(value) != 3:
        return None
    sample_id, text, ids = value.get("id"), value.get("output"), value.get("retrieved")
    if (
        type(sample_id) is not str
        or not sample_id
        or type(text) is not str
        or type(ids) is not list
    ):
        return None
    try:
        return sample_id, Output(text, parse_retrieved(ids))
    except ValueError:
        return None


def _entry_id(value: Any) -> str:
    """:func:`_entry`'s id alone: the common line is checked without building its output."""
    plain = _plain(value)
    return plain[0] if plain is not None else _entry(value)[0]


class IndexedOutputs(Mapping[str, Output]):
    """``{sample_id: Output}`` over a file, each output read when it is asked for.

    What is kept is the sorted hashes of the ids and, for each, where its entry is (a
    *locator*: a JSONL line's offset, a document entry's number); subclasses read the entry
    at a locator (:meth:`_entry_at`) and list the ids in file order (:meth:`_ids`).
    """

    def __init__(self, path: Path, hashes: Any, locators: Any) -> None:
        self.path = path
        self._hashes = hashes  # sorted numpy int64 array of hash(id) (see _index)
        self._locators = locators  # where the entry of each hash is
        self._next = -1  # the locator of the entry after the last one read (-1: none read yet)
        self._hits = self._misses = 0  # lookups found on that next entry, and not

    def _index(self) -> tuple[Any, Any]:
        """The sorted hashes and, in their order, the locators (a subclass may build them at
        the first lookup that needs them)."""
        return self._hashes, self._locators

    @property
    def id_hashes(self) -> npt.NDArray[np.int64]:
        """The ids' hashes, sorted."""
        hashes: npt.NDArray[np.int64] = self._index()[0]
        return hashes

    def _entry_at(self, locator: int) -> tuple[str, Output, int]:
        """The id and output of the entry at ``locator``, and the next entry's locator."""
        raise NotImplementedError

    def _ids(self) -> Iterator[str]:
        raise NotImplementedError

    def __getitem__(self, sample_id: str) -> Output:
        if self._guessing():
            guessed = self._guessed(sample_id)
            if guessed is not None:
                return guessed
        key = hash(sample_id)
        hashes, locators = self._index()
        at = int(hashes.searchsorted(key))
        if at == len(hashes) or int(hashes[at]) != key:
            raise KeyError(sample_id)
        try:
            found, output, following = self._entry_at(int(locators[at]))
        except (ValueError, AssayError, OSError, RecursionError):  # incl. UnicodeDecodeError
            raise self._changed() from None
        if found != sample_id:  # another id with the same hash: this one has no output
            raise KeyError(sample_id)
        self._next = following
        return output

    def outputs_of(self, sample_ids: Sequence[str]) -> list[Output | None]:
        """Each id's output, None where it has none, in order (a lookup per id; subclasses may
        read a run of consecutive entries at once)."""
        return [self.get(sample_id) for sample_id in sample_ids]

    def _guessing(self) -> bool:
        """Whether lookups try the entry after the last one read first (see _guessed)."""
        return self._next >= 0 and self._misses <= self._hits + GUESS_SLACK

    def _guessed(self, sample_id: str) -> Output | None:
        """The output of the entry after the one read last, when it is ``sample_id``'s; else
        None.

        Saved outputs are usually written in dataset order, so most lookups are the next entry
        and need no search. Ids are unique in the file (see the ``from_file`` methods), so an
        entry with this id is the one the search would find. Files in another order stop
        guessing after ``GUESS_SLACK`` misses more than hits.
        """
        try:
            found, output, following = self._entry_at(self._next)
        except (ValueError, AssayError, OSError, RecursionError, IndexError):  # the end, ...
            found = None
        if found != sample_id:
            self._misses += 1
            return None
        self._hits += 1
        self._next = following
        return output

    def _changed(self) -> OutputsError:
        return OutputsError("the file changed while the run read it", file=str(self.path))

    def __len__(self) -> int:
        return len(self.id_hashes)

    def __iter__(self) -> Iterator[str]:
        """The ids, in file order."""
        try:
            yield from self._ids()
        except (UnusualLineBreaks, AssayError, ValueError, OSError, RecursionError):
            raise self._changed() from None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r}, {len(self)} outputs)"


class KeptOutputs(IndexedOutputs):
    """The outputs of a file checked by the index pass and kept as it built them: lookups are
    a dict's, and no line is parsed again. ``id_hashes`` is kept for :func:`same_ids`."""

    def __init__(self, path: Path, hashes: npt.NDArray[np.int64], kept: dict[str, Output]) -> None:
        super().__init__(path, hashes, None)
        self._kept = kept

    def __getitem__(self, sample_id: str) -> Output:
        return self._kept[sample_id]

    def __contains__(self, sample_id: object) -> bool:
        return sample_id in self._kept

    def outputs_of(self, sample_ids: Sequence[str]) -> list[Output | None]:
        get = self._kept.get
        return [get(sample_id) for sample_id in sample_ids]

    def _ids(self) -> Iterator[str]:
        return iter(self._kept)


def _keeping(path: Path) -> dict[str, Output] | None:
    """An empty dict to keep a file's outputs in, or None when they would not fit the budget
    (the file's size plus ENTRY_COST a line, the lines counted in its first block and the rest
    estimated from it): then none are built beyond what checking needs. A file whose first
    block misleads is caught by the reader's running budget, which drops what it kept."""
    try:
        size = path.stat().st_size
        if size > KEEP_BUDGET:
            return None
        with path.open("rb") as handle:
            head = handle.read(ESTIMATE_BLOCK)
    except OSError:
        return None
    lines = head.count(b"\n") * size / max(1, len(head))
    return {} if size + lines * ENTRY_COST <= KEEP_BUDGET else None


def _sorted_index(hashes: Any, locators: Any) -> tuple[Any, Any] | None:
    """The hashes sorted and the locators in the same order; None if a hash repeats (a
    duplicate id, or a collision) or there are none."""
    import numpy as np

    keys = np.asarray(hashes, dtype=np.int64)
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    if ordered.size == 0 or bool((ordered[1:] == ordered[:-1]).any()):
        return None
    return ordered, np.asarray(locators, dtype=np.int64)[order]


class JsonlOutputs(IndexedOutputs):
    """Saved outputs in a JSONL file: an entry a line, located by the line's offset.

    The ids' hashes and the lines' offsets are kept in file order, on disk past a block
    (:class:`SpillLog`). Outputs saved in the dataset's order are read line after line and need
    no more; the sorted index is built in memory (16 bytes a line) only when a lookup is not
    the next line.
    """

    def __init__(self, path: Path, start: int, hashes: SpillLog, offsets: SpillLog) -> None:
        super().__init__(path, None, None)
        self.file_hashes = hashes  # hash(id) per line, in file order (see same_ids)
        self._offsets = offsets
        self._start = start
        self._next = start  # before any lookup, the entry "after the last one read" is the first
        self._reader = LineReader(path)

    @classmethod
    def from_file(cls, path: Path) -> IndexedOutputs | None:
        """Check every line and keep its offset; None when the file must be loaded whole.

        While the outputs read so far fit :data:`KEEP_BUDGET`, they are kept as built by the
        check, and a file that fits whole is answered from them (:class:`KeptOutputs`): each
        line is parsed once. Past the budget they are dropped and only offsets are kept.
        """
        start = first_offset(path)
        offsets, hashes = SpillLog(), SpillLog()
        kept = _keeping(path)
        budget = KEEP_BUDGET
        parse = LineParser(path, OutputsError)
        try:
            for number, offset, line in iter_entries(path, start):
                value = parse(line, number)
                offsets.append(offset)
                if kept is None:
                    hashes.append(hash(_entry_id(value)))
                    continue
                sample_id, output = _entry(value)
                hashes.append(hash(sample_id))
                kept[sample_id] = output
                budget -= len(line) + 1 + ENTRY_COST  # the line, its break, its output
                if budget < 0:
                    kept = None
        except (UnusualLineBreaks, UnicodeDecodeError, AssayError, ValueError, OSError):
            return None
        if not len(hashes) or has_duplicates(hashes):
            return None
        if kept is not None:
            return KeptOutputs(path, _sorted_hashes(hashes), kept)
        return cls(path, start, hashes, offsets)

    def _index(self) -> tuple[Any, Any]:
        if self._hashes is None:
            index = _sorted_index(self.file_hashes.to_array(), self._offsets.to_array())
            if index is None:  # the ids were unique when the file was read
                raise self._changed()
            self._hashes, self._locators = index
        return self._hashes, self._locators

    def __len__(self) -> int:
        return len(self.file_hashes)

    def _entry_at(self, locator: int) -> tuple[str, Output, int]:
        line, following = self._reader.line_and_next(locator)
        found, output = _entry(parse_jsonl_line(line, 0, self.path, OutputsError))
        return found, output, following

    def outputs_of(self, sample_ids: Sequence[str]) -> list[Output | None]:
        """:meth:`IndexedOutputs.outputs_of`, the ids that follow the last one read in the
        file (outputs saved in dataset order) read as one group and parsed in one call; the
        rest, from the first that does not follow, one by one."""
        found = self._following(sample_ids) if self._guessing() else []
        return found + [self.get(sample_id) for sample_id in sample_ids[len(found) :]]

    def _following(self, sample_ids: Sequence[str]) -> list[Output | None]:
        """The outputs of the leading ids whose entries are the lines after the last one read
        (see ``_guessed``); an empty list when the lines cannot be read or parsed as a group."""
        lines, ends, at = [], [], self._next
        try:
            for _ in sample_ids:
                line, at = self._reader.line_and_next(at)
                if not line:  # the end of the file, or a blank line
                    break
                lines.append(line)
                ends.append(at)
        except (ValueError, OSError):  # incl. UnicodeDecodeError: read them one by one
            pass
        values = parse_jsonl_lines(lines) if lines else None
        found: list[Output | None] = []
        for sample_id, value, end in zip(sample_ids, values or (), ends):
            try:
                entry_id, output = _entry(value)
            except (ValueError, AssayError):
                break
            if entry_id != sample_id:
                break
            found.append(output)
            self._next = end
        self._hits += len(found)
        return found

    def _ids(self) -> Iterator[str]:
        for number, _, line in iter_entries(self.path, self._start):
            yield _entry_id(parse_jsonl_line(line, number, self.path, OutputsError))


class DocumentOutputs(IndexedOutputs):
    """Saved outputs in a JSON ``outputs`` document, a list of entries with an ``id`` or a
    mapping of id to output: an entry located by its number in the file, read from its byte
    span (:mod:`assay.data.json_items`)."""

    def __init__(self, path: Path, hashes: Any, numbers: Any, spans: Any, *, keyed: bool) -> None:
        super().__init__(path, hashes, numbers)
        self._spans = spans  # start, end, start, end... byte offsets, in file order
        self._keyed = keyed  # the mapping form: a span is '"id": output'
        self._reader = SpanReader(path)

    @classmethod
    def from_file(cls, path: Path) -> IndexedOutputs | None:
        """Check every entry and keep its span; None when the file must be loaded whole.
        Outputs that fit :data:`KEEP_BUDGET` are kept as the check built them, as for JSONL."""
        scan = ItemScan(path, "outputs")
        spans, hashes = array("q"), array("q")
        kept = _keeping(path)
        budget = KEEP_BUDGET
        try:
            for item in scan.items():
                sample_id, output = _item_entry(item.key, item.value)
                hashes.append(hash(sample_id))
                spans.extend((item.start, item.end))
                if kept is not None:
                    kept[sample_id] = output
                    budget -= item.end - item.start + ENTRY_COST
                    kept = kept if budget >= 0 else None
        except (NotIndexable, AssayError, ValueError):
            return None
        index = _sorted_index(hashes, array("q", range(len(hashes))))
        if index is None:
            return None
        if kept is not None:
            return KeptOutputs(path, index[0], kept)
        return cls(path, *index, spans, keyed=scan.kind == "object")

    def _entry_at(self, locator: int) -> tuple[str, Output, int]:
        text = self._reader.text(self._spans[2 * locator], self._spans[2 * locator + 1])
        found, output = _item_entry(*parse_item(text, keyed=self._keyed))
        return found, output, locator + 1

    def _ids(self) -> Iterator[str]:
        for locator in range(len(self)):
            yield self._entry_at(locator)[0]


def _item_entry(key: str | None, value: Any) -> tuple[str, Output]:
    """An ``outputs`` item's id and output, checked as :func:`load_outputs` checks them
    (ValueError if not; a conversation, which becomes one entry per turn, too). A list's
    entry (no key) carries its id; a mapping's member is keyed by it."""
    if key is None:
        return _entry(value)
    if key == "":
        raise ValueError("no id")
    if isinstance(value, Mapping) and "turns" in value and "output" not in value:
        raise ValueError("a conversation")
    return key, Output(value) if type(value) is str else coerce_output(value)


def same_ids(outputs: Mapping[str, Output], samples: Sequence[Any]) -> bool:
    """True when the outputs are an indexed file whose id hashes are the samples' (those of
    an indexed dataset, or of samples in memory hashed here), each once.

    Then every sample has its output and no output is unknown, unless two different ids
    collide on a 64-bit hash (about n / 2**64): such a sample's row would record "no saved
    output" as its error. False means: check id by id (``check_outputs_cover``). Outputs in
    the samples' order are compared line by line, from disk; in another order, the sorted
    hashes of both are compared in memory (8 bytes a line each).
    """
    if not isinstance(outputs, IndexedOutputs):
        return False
    import numpy as np

    theirs: SpillLog | npt.NDArray[np.int64] | None = getattr(samples, "id_hashes", None)
    if theirs is None:  # samples held in memory: hash their ids here (no line is read again)
        theirs = np.fromiter((hash(sample.id) for sample in samples), dtype=np.int64)
    in_file_order = getattr(outputs, "file_hashes", None)
    if isinstance(in_file_order, SpillLog) and same_order(in_file_order, theirs):
        return True
    mine = outputs.id_hashes
    every = theirs.to_array() if isinstance(theirs, SpillLog) else theirs
    return len(every) == len(mine) and bool(np.array_equal(np.sort(every), mine))


def _sorted_hashes(hashes: SpillLog) -> npt.NDArray[np.int64]:
    """The logged hashes, sorted, in memory."""
    import numpy as np

    return np.sort(hashes.to_array())


def explain_jsonl_outputs(path: Path) -> NoReturn:
    """Why a JSONL outputs file too large to read whole cannot be read a line at a time: the
    first bad line, or a repeated id, named with the file, sample and field as the whole-file
    reader names them (:class:`OutputsError`)."""
    hashes = SpillLog()
    try:
        for number, _, line in iter_entries(path, first_offset(path)):
            value = parse_jsonl_line(line, number, path, OutputsError)
            try:
                hashes.append(hash(_entry(value)[0]))
            except (ValueError, AssayError):
                raise _line_problem(value, number, path) from None
    except UnusualLineBreaks:
        raise OutputsError(
            _TOO_LARGE + "; lines must end with \\n or \\r\\n", file=str(path)
        ) from None
    except UnicodeDecodeError as exc:
        raise OutputsError(f"not UTF-8 text ({exc.reason})", file=str(path)) from None
    repeated = duplicate_hash(hashes)
    if repeated is not None:
        _name_duplicate(path, repeated)
    raise OutputsError(_TOO_LARGE, file=str(path))


_TOO_LARGE = f"file is over {MAX_DATASET_BYTES} bytes, the most read whole"


def _line_problem(value: object, number: int, path: Path) -> OutputsError:
    """What the whole-file reader says of a line :func:`_entry` refused (its own check); a line
    it takes (a conversation's replies) is one only the whole-file reader reads."""
    try:
        check_jsonl_entry(value, number, path)
    except OutputsError as exc:
        return exc
    return OutputsError(
        f"line {number}: {_TOO_LARGE}; a conversation is read whole", file=str(path)
    )


def _name_duplicate(path: Path, repeated: int) -> None:
    """Raise for the id that hashes to ``repeated`` when two lines have it (a 64-bit hash
    collision of two different ids returns: such a file cannot be indexed)."""
    seen: dict[str, int] = {}
    for number, _, line in iter_entries(path, first_offset(path)):
        sample_id = _entry_id(parse_jsonl_line(line, number, path, OutputsError))
        if hash(sample_id) != repeated:
            continue
        if sample_id in seen:
            raise OutputsError(
                f"duplicate id {sample_id!r} (line {seen[sample_id]} and line {number})",
                file=str(path),
                sample=sample_id,
                field="id",
            )
        seen[sample_id] = number
