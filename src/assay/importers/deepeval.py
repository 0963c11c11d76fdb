"""DeepEval goldens (``EvaluationDataset.save_as(file_type="json")``) as an assay dataset, and
the answers some goldens already carry as a saved-outputs file.

DeepEval writes a JSON list of goldens: ``{input, expected_output, context, retrieval_context,
actual_output, tools_called, expected_tools, name, comments, source_file,
additional_metadata, custom_column_key_values}``. A golden becomes a sample named by ``name``
(else ``golden-<n>``) with ``input.question``, ``expected_output``, ``context`` and
``comments`` kept in metadata, ``additional_metadata`` merged into it, and ``expected_tools``
as ``metadata.trajectory.tools``. ``actual_output``, ``retrieval_context`` and
``tools_called`` are what the system answered: they go to the outputs document. Multi-turn
goldens (``scenario`` + ``turns``) have no single-answer form and are listed as not mapped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from assay.importers.common import (
    Imported,
    notes,
    parse_model,
    read_foreign,
    require_list,
    unique_id,
    unknown_keys,
)

_PROVENANCE = ("source_file",)  # where DeepEval's synthesizer found the golden: not carried


class ToolCall(BaseModel):
    """A DeepEval ``ToolCall`` (only its name and input parameters are read)."""

    model_config = ConfigDict(extra="ignore")

    name: str
    input_parameters: dict[str, Any] | None = None


class Golden(BaseModel):
    """A single-turn DeepEval golden."""

    model_config = ConfigDict(extra="allow")

    input: str
    expected_output: str | None = None
    actual_output: str | None = None
    context: list[str] | None = None
    retrieval_context: list[str] | None = None
    tools_called: list[ToolCall] | None = None
    expected_tools: list[ToolCall] | None = None
    name: str | None = None
    comments: str | None = None
    source_file: str | None = None
    additional_metadata: dict[str, Any] | None = None
    custom_column_key_values: dict[str, Any] | None = None


def import_goldens(path: Path) -> Imported:
    """The goldens file at ``path`` as an ``assay.dataset.v1`` document (+ outputs if any)."""
    source = str(path)
    raw = read_foreign(path)
    if isinstance(raw, dict) and "goldens" in raw:
        raw = raw["goldens"]
    rows = require_list(raw, source, "DeepEval goldens")
    samples: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    unmapped: list[str] = []
    seen: set[str] = set()
    for index, row in enumerate(rows):
        if isinstance(row, dict) and "turns" in row and "input" not in row:
            unmapped.append(f"golden {index}: a multi-turn (conversational) golden is not mapped")
            continue
        golden = parse_model(Golden, row, source, index)
        sid = unique_id(golden.name or f"golden-{index + 1}", seen)
        sample, notes_ = _sample(golden, sid)
        samples.append(sample)
        unmapped += notes_
        answer = _output(golden, sid)
        if answer is not None:
            outputs.append(answer)
    if not samples:
        require_list([], source, "single-turn DeepEval goldens")
    document = {"schema_version": "assay.dataset.v1", "name": path.stem, "samples": samples}
    extra = None
    if outputs:
        extra = {"outputs": {"schema_version": "assay.outputs.v1", "outputs": outputs}}
    return Imported("dataset", document, notes(unmapped), extra)


def _sample(golden: Golden, sid: str) -> tuple[dict[str, Any], list[str]]:
    """A golden as a sample, and notes on what it could not carry."""
    where = f"golden '{sid}'"
    unmapped = unknown_keys(golden, where)
    metadata: dict[str, Any] = {}
    if golden.context is not None:
        metadata["context"] = golden.context
    if golden.comments:
        metadata["comments"] = golden.comments
    if golden.expected_tools:
        metadata["trajectory"] = {"tools": [tool.name for tool in golden.expected_tools]}
        if any(tool.input_parameters for tool in golden.expected_tools):
            unmapped.append(f"{where}: field 'expected_tools[].input_parameters' is not mapped")
    for block in (golden.additional_metadata, golden.custom_column_key_values):
        for key, value in (block or {}).items():
            if key in metadata:
                unmapped.append(f"{where}: metadata key '{key}' clashes and is not mapped")
            else:
                metadata[key] = value
    unmapped += [
        f"{where}: field '{key}' is not mapped" for key in _PROVENANCE if getattr(golden, key)
    ]
    sample = {
        "id": sid,
        "input": {"question": golden.input},
        "expected_output": golden.expected_output,
        "metadata": metadata,
    }
    return sample, unmapped


def _output(golden: Golden, sid: str) -> dict[str, Any] | None:
    """What the system answered for this golden, as a saved-outputs entry (None when nothing)."""
    if golden.actual_output is None:
        return None
    entry: dict[str, Any] = {"id": sid, "output": golden.actual_output}
    if golden.retrieval_context:
        entry["contexts"] = golden.retrieval_context
    if golden.tools_called:
        entry["trajectory"] = {
            "tool_calls": [
                {"name": tool.name, "arguments": tool.input_parameters or {}}
                for tool in golden.tools_called
            ]
        }
    return entry
