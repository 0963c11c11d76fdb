"""The JSON view of a report, written as a stream: header indented, then one row per line.

A 100,000-sample report is ~100 MB of JSON; rendering it in one piece doubles peak memory.
Streaming row by row keeps the output byte-identical in content to ``model_dump_json`` (the same
keys and values) while holding one row's bytes at a time. One row per line is also what a
person wants when they grep or diff a report.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from assay.report.model import Report, Row

_ROW_SERIALIZER = Row.__pydantic_serializer__
_CHUNK = 512


def iter_json(report: Report, rows: Iterable[Row | bytes] | None = None) -> Iterator[bytes]:
    """The report's JSON, piece by piece.

    ``rows`` (e.g. streamed from the store) replace ``report.rows``; a row already encoded as
    JSON bytes (:func:`assay.engine.rebuild.row_json_from_store`) is written as it is.
    """
    rows = report.rows if rows is None else rows
    head = report.model_copy(update={"rows": []})
    text = head.__pydantic_serializer__.to_json(head, indent=2)
    marker = b'"rows": []\n}'
    if not text.endswith(marker):  # pragma: no cover - the model keeps rows last
        raise AssertionError("the report model must keep 'rows' as its last field")
    yield text[: -len(b"[]\n}")] + b"["
    buffer: list[bytes] = []
    separator = b"\n    "
    for row in rows:
        buffer.append(separator + (row if isinstance(row, bytes) else _ROW_SERIALIZER.to_json(row)))
        separator = b",\n    "
        if len(buffer) >= _CHUNK:
            yield b"".join(buffer)
            buffer.clear()
    if buffer:
        yield b"".join(buffer)
        yield b"\n  ]\n}\n"
    else:
        yield b"]\n}\n"
