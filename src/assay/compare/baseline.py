"""Baselines: the report a run is compared against, pinned per dataset.

``assay baseline set REPORT`` copies the report into ``.assay/baselines/<slug>.report.json``
and writes a pointer ``.assay/baselines/<slug>.json`` (``assay.baseline.v1``) next to it, so
the baseline survives the original file being deleted and can be committed to the
repository. ``--compare`` accepts ``baseline`` (that pointer), ``latest`` (the newest other
run of the dataset in the run store) or a path to a report JSON.
"""

from __future__ import annotations

import hashlib
import os
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from assay.compare.streamed_report import (
    StreamedReport,
    refuse_repeated,
    stream_report_file,
    stream_stored_report,
)
from assay.data.bounded import loads_json
from assay.data.documents import read_text
from assay.data.fileio import exists, is_file, write_atomic
from assay.errors import InputError, StoreError, UsageError
from assay.report.model import Report
from assay.store.project import project_dir
from assay.store.runs import RunStore
from assay.store.schema import store_path as default_store

BASELINE_SCHEMA: Final = "assay.baseline.v1"
BASELINE_DIR_ENV = "ASSAY_BASELINE_DIR"
DEFAULT_BASELINE_DIR = Path(".assay") / "baselines"


class BaselineSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run_id: str
    finished_at: str
    macro_f1: float | None
    pass_rate: float | None
    total_samples: int
    total_executions: int
    total_failures: int = Field(
        description="errors recorded (rows that could not be scored); the v1 name, kept"
    )
    repetitions: int
    failed_rows: int | None = Field(
        default=None, description="executions scored below a threshold (absent before v2 reports)"
    )
    errored_rows: int | None = Field(
        default=None, description="executions that errored (absent before v2 reports)"
    )


class BaselinePointer(BaseModel):
    """Which report is the baseline of one dataset (``assay.baseline.v1``)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal["assay.baseline.v1"] = BASELINE_SCHEMA
    dataset: str
    report_path: str = Field(description="the pinned copy, relative to the pointer's folder")
    report_sha256: str
    source: str = Field(description="where the report was taken from (a path or 'run:<id>')")
    set_at: str
    summary: BaselineSummary

    def describe(self, path: Path) -> str:
        """One line for ``assay baseline show`` (raw: the caller escapes it for the terminal)."""
        s, number = self.summary, _number
        return (
            f"{self.dataset}: run {s.run_id} finished {s.finished_at}; "
            f"macro-F1 {number(s.macro_f1)}, pass-rate {number(s.pass_rate)}, "
            f"{s.total_samples} samples x {s.repetitions} reps, {_counts(s)}; "
            f"set {self.set_at} from {self.source} ({path})"
        )


def _counts(summary: BaselineSummary) -> str:
    """'N failed, M errored' (a pointer written before v2 knows only its errors)."""
    if summary.failed_rows is None or summary.errored_rows is None:
        return f"{summary.total_failures} errored"
    return f"{summary.failed_rows} failed, {summary.errored_rows} errored"


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def baseline_dir(root: Path | None = None) -> Path:
    """``$ASSAY_BASELINE_DIR``, else ``<root>/.assay/baselines``, else the project's
    ``.assay/baselines`` (see :mod:`assay.store.project`)."""
    configured = os.environ.get(BASELINE_DIR_ENV)
    if configured:
        return Path(configured)
    if root is not None:
        return root / DEFAULT_BASELINE_DIR
    return project_dir().absolute() / DEFAULT_BASELINE_DIR.name


_SLUG_CHARS = 80  # file names stay far below every file system's limit (255 bytes)


def slug(dataset: str) -> str:
    """A file-name-safe form of a dataset name, one per name: a name that is safe as it is
    stays as it is; any other (unsafe characters made '_', or cut to 80 characters) gets a
    short hash of the whole name, so 'a/b' and 'a_b' never share a baseline."""
    cleaned = _legacy_slug(dataset)[:_SLUG_CHARS]
    if cleaned == dataset:
        return cleaned
    digest = hashlib.sha256(dataset.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{cleaned}-{digest}"


def _legacy_slug(dataset: str) -> str:
    """The slug before names got a hash (baselines pinned then are still found)."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", dataset).lstrip(".")
    return cleaned or "dataset"


def load_report(path: Path) -> Report:
    """Read and validate a report JSON; malformed or foreign documents raise InputError."""
    text = read_text(Path(path), InputError)
    data = loads_json(text, lambda m: InputError(m, file=str(path)))
    if not isinstance(data, dict):
        raise InputError("a report must be a JSON object", file=str(path))
    version = data.get("schema_version")
    if version not in ("assay.report.v1", "assay.report.v2"):
        raise InputError(
            f"unsupported schema_version {version!r}; expected 'assay.report.v2' (or v1)",
            file=str(path),
            field="schema_version",
        )
    try:
        report = Report.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise InputError(
            f"not a valid assay report: {first['msg']}", file=str(path), field=where
        ) from None

    seen: set[tuple[str, int]] = set()
    for row in report.rows:
        refuse_repeated(row, seen, str(path))
    return report


def _summary(report: Report) -> BaselineSummary:
    return BaselineSummary(
        run_id=report.run.run_id,
        finished_at=report.run.finished_at,
        macro_f1=report.summary.macro_f1,
        pass_rate=report.summary.pass_rate,
        total_samples=report.summary.total_samples,
        total_executions=report.summary.total_executions,
        total_failures=report.summary.sut_errors + report.summary.metric_errors,
        repetitions=report.run.repetitions,
        failed_rows=report.summary.failed_rows,
        errored_rows=report.summary.errored_rows,
    )


def set_baseline(
    report: Report, *, source: str, root: Path | None = None
) -> tuple[Path, BaselinePointer]:
    """Pin ``report`` as its dataset's baseline; returns the pointer path and pointer."""
    folder = baseline_dir(root)
    name = slug(report.dataset.name)
    body = report.model_dump_json(indent=2) + "\n"
    copy = folder / f"{name}.report.json"
    write_atomic(copy, body)
    pointer = BaselinePointer(
        dataset=report.dataset.name,
        report_path=copy.name,
        report_sha256=hashlib.sha256(body.encode("utf-8")).hexdigest(),
        source=source,
        set_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        summary=_summary(report),
    )
    path = folder / f"{name}.json"
    write_atomic(path, pointer.model_dump_json(indent=2) + "\n")
    return path, pointer


def read_pointer(dataset: str, *, root: Path | None = None) -> tuple[Path, BaselinePointer] | None:
    """The dataset's pointer, or None when no baseline was set (a pointer of another
    dataset, pinned under an older slug shared by both, is not this dataset's)."""
    folder = baseline_dir(root)
    path = folder / f"{slug(dataset)}.json"
    if not path.is_file():
        path = folder / f"{_legacy_slug(dataset)}.json"
        if len(path.name) > 255 or not path.is_file():
            return None
    pointer = _read_pointer_file(path)
    return (path, pointer) if pointer.dataset == dataset else None


def _read_pointer_file(path: Path) -> BaselinePointer:
    """One pointer file, read as UTF-8 under the input size cap; InputError naming it."""
    text = read_text(path, InputError)
    try:
        return BaselinePointer.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise InputError(
            f"not a valid baseline pointer: {first['msg']}", file=str(path), field=where
        ) from None


def list_pointers(*, root: Path | None = None) -> list[tuple[Path, BaselinePointer]]:
    folder = baseline_dir(root)
    found = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        if path.name.endswith(".report.json"):
            continue
        try:
            found.append((path, _read_pointer_file(path)))
        except InputError:  # a damaged pointer is not listed; reading its dataset names it
            continue
    return found


def load_baseline(dataset: str, *, root: Path | None = None) -> Report | None:
    """The pinned baseline report of ``dataset``; None when none is set."""
    path = baseline_report_path(dataset, root=root)
    return None if path is None else load_report(path)


def baseline_report_path(dataset: str, *, root: Path | None = None) -> Path | None:
    """Where the pinned baseline report of ``dataset`` is; None when none is set."""
    found = read_pointer(dataset, root=root)
    if found is None:
        return None
    path, pointer = found
    report_path = path.parent / pointer.report_path
    if not report_path.is_file():
        raise InputError(
            f"the baseline report {report_path} is missing; set the baseline again", file=str(path)
        )
    return report_path


def report_from_run(run_id: str, *, store_path: Path | None = None) -> Report:
    """The report of a run kept in the run store."""
    from assay.engine.rebuild import report_from_store  # numpy (the report's aggregates)

    path = Path(store_path or default_store())
    if not path.is_file():
        raise StoreError(f"no run store at {path}")
    store = RunStore(path)
    try:
        return report_from_store(store, run_id)
    finally:
        store.close()


def latest_report(
    dataset: str, *, exclude_run_id: str | None, store_path: Path | None = None
) -> Report | None:
    """The newest finished run of ``dataset`` in the run store, other than ``exclude_run_id``."""
    run_id = latest_run_id(dataset, exclude_run_id=exclude_run_id, store_path=store_path)
    return None if run_id is None else report_from_run(run_id, store_path=store_path)


def latest_run_id(
    dataset: str, *, exclude_run_id: str | None, store_path: Path | None = None
) -> str | None:
    """The id of the newest finished run of ``dataset``, other than ``exclude_run_id``."""
    path = store_path or default_store()
    if not Path(path).is_file():
        return None
    store = RunStore(path)
    try:
        row = store.db.execute(
            "SELECT run_id FROM runs "
            "WHERE dataset_name = ? AND status = 'finished' AND run_id != ? "
            "ORDER BY created_at DESC, rowid DESC LIMIT 1",
            (dataset, exclude_run_id or ""),
        ).fetchone()
    finally:
        store.close()
    return None if row is None else str(row[0])


def report_from_argument(target: str, *, store_path: Path | None = None) -> tuple[Report, str]:
    """A report from a path to a report JSON, else from a run id in the store."""
    path = Path(target)
    if is_file(path):
        return load_report(path), str(path)
    try:
        return report_from_run(target, store_path=store_path), f"run:{target}"
    except StoreError as exc:
        raise UsageError(f"{target!r} is neither a report file nor a stored run ({exc})") from None


def streamed_from_argument(
    target: str, *, store_path: Path | None = None
) -> tuple[StreamedReport, str]:
    """:func:`report_from_argument` with the rows streamed
    (:mod:`assay.compare.streamed_report`)."""
    path = Path(target)
    if is_file(path):
        return stream_report_file(path, load_report), str(path)
    try:
        streamed = stream_stored_report(Path(store_path or default_store()), target)
    except StoreError as exc:
        raise UsageError(f"{target!r} is neither a report file nor a stored run ({exc})") from None
    return streamed, f"run:{target}"


def resolve_reference(
    target: str,
    current: Report,
    *,
    root: Path | None = None,
    store_path: Path | None = None,
) -> StreamedReport | None:
    """The report named by ``--compare``: 'baseline', 'latest' or a path. None = not found.

    Its rows are streamed (:mod:`assay.compare.streamed_report`): a large reference is never held.
    """
    if target == "baseline":
        found = baseline_report_path(current.dataset.name, root=root)
        return None if found is None else stream_report_file(found, load_report)
    if target == "latest":
        run_id = latest_run_id(
            current.dataset.name, exclude_run_id=current.run.run_id, store_path=store_path
        )
        if run_id is None:
            return None
        return stream_stored_report(Path(store_path or default_store()), run_id)
    path = Path(target)
    if not exists(path):
        raise UsageError(
            f"--compare {target}: no such file (use 'baseline', 'latest' or a report JSON path)"
        )
    return stream_report_file(path, load_report)
