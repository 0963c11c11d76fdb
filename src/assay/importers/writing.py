"""Check an imported document with the loader assay itself uses, then write it.

An importer's output is validated exactly as ``assay validate`` / ``assay agreement`` would
read it (the dataset model and its rubric, the labels model, the outputs model), so a file
``assay import`` writes is always one assay accepts; a failure here is a bug in the importer
and is reported as one line, never written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from assay.calibration.documents import labels_from_data
from assay.data.dataset import dataset_from_data
from assay.data.fileio import write_atomic
from assay.data.outputs import OutputsDocument
from assay.errors import AssayError, ForeignFileError
from assay.importers.common import Imported
from assay.metrics.rubric import parse_rubric


def check(imported: Imported, source: str) -> None:
    """Raise ForeignFileError when the imported document is not one assay reads."""
    try:
        if imported.kind == "labels":
            labels_from_data(imported.document, source=source)
        else:
            dataset = dataset_from_data(imported.document, source=source)
            if dataset.rubric is not None:
                parse_rubric(dataset.rubric, where="rubric")
        for document in (imported.extra or {}).values():
            OutputsDocument.model_validate(document)
    except (AssayError, ValidationError) as exc:
        message = str(exc).splitlines()[0]
        raise ForeignFileError(
            f"the converted document is not valid: {message}", file=source
        ) from None


def render(document: dict[str, Any], path: Path | None) -> str:
    """YAML (the default, and for ``.yml`` / ``.yaml``) or JSON (for ``.json``)."""
    if path is not None and path.suffix.lower() == ".json":
        return json.dumps(document, ensure_ascii=False, indent=2) + "\n"
    import yaml  # PyYAML is needed only to write YAML

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    text: str = yaml.dump(document, Dumper=dumper, sort_keys=False, allow_unicode=True, width=100)
    return text


def write(document: dict[str, Any], path: Path) -> None:
    """Write ``document`` to ``path`` atomically in the format its extension names."""
    write_atomic(path, render(document, path))
