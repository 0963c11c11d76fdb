"""Write eval records into a bundle: schema-checked first, then atomically, manifest untouched.

Files (vendor id, the default)::

    extensions/com.ragu.eval-metrics/manifest.json        the extension manifest (seed 004)
    extensions/com.ragu.eval-metrics/eval-metrics.json    the latest query + session aggregate
    extensions/com.ragu.eval-metrics/records/<query_id>.json   assay's addition: one record per
                                                          query, each with the aggregate as of it

or, with ``tezit-eval``, ``extensions/tezit-eval/{manifest.json,tezit-eval.json}`` holding a
session report in the enterprise schema's shape. A bundle never receives both ids. Every
document is validated against its shipped schema before anything is written; a directory
bundle gets the whole extension folder swapped in by rename, a ``.tez`` zip is rebuilt in a
temporary file and renamed over the original. ``manifest.json`` is copied byte for byte. The
documents themselves are built in :mod:`assay.tez.documents`.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
import time
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.errors import TezError
from assay.tez.bundle import Bundle
from assay.tez.documents import prior_records, tezit_report, vendor_records
from assay.tez.extension import RECORDS_DIR, STANDARD_FILE, VENDOR_FILE, read_eval_state
from assay.tez.records import (
    STANDARD_EXTENSION_ID,
    STANDARD_MANIFEST,
    VENDOR_EXTENSION_ID,
    VENDOR_MANIFEST,
    Evaluator,
)
from assay.tez.schemas import (
    ENTERPRISE_SCHEMA,
    EXTENSION_MANIFEST_SCHEMA,
    VENDOR_SCHEMA,
    check_document,
)
from assay.tez.scoring import TurnScore


@dataclass(slots=True)
class WritePlan:
    """Documents to write into one extension folder, already validated."""

    extension_id: str
    files: dict[str, dict[str, Any]]
    drop_records: bool = False
    warnings: list[str] = field(default_factory=list)

    def paths(self) -> list[str]:
        return [f"extensions/{self.extension_id}/{rel}" for rel in self.files]


# --------------------------------------------------------------------------- plans


def _refuse_incomplete(bundle: Bundle) -> None:
    """Writing is strict: a bundle whose manifest names item files that are absent is broken,
    and records written into it would cite items nobody can check."""
    missing = [i for i in bundle.items.values() if i.file is not None and i.size is None]
    if missing:
        item = missing[0]
        raise TezError(
            f"context item '{item.id}' points to '{item.file}', which is missing; "
            "refusing to write eval records into an incomplete bundle",
            file=str(bundle.source),
        )


def _refuse_other(bundle: Bundle, writing: str) -> None:
    other = STANDARD_EXTENSION_ID if writing == VENDOR_EXTENSION_ID else VENDOR_EXTENSION_ID
    if other in bundle.eval_extensions:
        where = " and ".join(bundle.eval_extensions[other])
        raise TezError(
            f"bundle already carries {other} ({where}); a bundle must not hold both eval "
            f"extension ids, so {writing} is not written (remove {other} first or write {other})",
            file=str(bundle.source),
        )


def plan_vendor(
    bundle: Bundle,
    session_id: str,
    scores: Sequence[TurnScore],
    evaluator: Evaluator,
    *,
    replace: bool = False,
) -> WritePlan:
    """Validated documents for the vendor extension (nothing is written here)."""
    _refuse_other(bundle, VENDOR_EXTENSION_ID)
    _refuse_incomplete(bundle)
    if not scores:
        raise TezError("nothing to write: the session has no scored turns")
    state = read_eval_state(bundle)
    prior = prior_records(state, session_id, {s.turn.query_id for s in scores}, replace=replace)
    records = vendor_records(session_id, scores, evaluator, prior)
    files: dict[str, dict[str, Any]] = {"manifest.json": VENDOR_MANIFEST.model_dump(mode="json")}
    for record in [*prior, *records]:
        name = f"{RECORDS_DIR}/{_record_name(record.query_id)}.json"
        if name in files:
            raise TezError(
                f"query ids collide on the record file name {name}", sample=record.query_id
            )
        files[name] = record.to_json()
    files[VENDOR_FILE] = records[-1].to_json()
    plan = WritePlan(VENDOR_EXTENSION_ID, files, drop_records=True, warnings=list(state.warnings))
    _validate(plan)
    return plan


def plan_tezit(
    bundle: Bundle,
    session_id: str,
    scores: Sequence[TurnScore],
    *,
    model: str,
    evaluated_at: str | None = None,
) -> WritePlan:
    _refuse_other(bundle, STANDARD_EXTENSION_ID)
    _refuse_incomplete(bundle)
    if (
        isinstance(bundle.manifest.get("extensions"), dict)
        and STANDARD_EXTENSION_ID in bundle.manifest["extensions"]
    ):
        raise TezError(
            "manifest.json already holds an inline tezit-eval entry; assay does not rewrite the "
            "manifest, so it will not add a second tezit-eval copy beside it",
            file=str(bundle.source),
        )
    report, vacuous = tezit_report(session_id, scores, model=model, evaluated_at=evaluated_at)
    plan = WritePlan(
        STANDARD_EXTENSION_ID,
        {
            "manifest.json": STANDARD_MANIFEST.model_dump(mode="json"),
            STANDARD_FILE: report.to_json(),
        },
    )
    if vacuous:
        plan.warnings.append(
            "tezit-eval requires every metric; undefined ones were written as the vacuous 1.0: "
            + ", ".join(vacuous)
        )
    _validate(plan)
    return plan


def _record_name(query_id: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in query_id).lstrip(".")
    if not safe:
        raise TezError(f"query_id {query_id!r} cannot be used as a file name")
    return safe


def _validate(plan: WritePlan) -> None:
    for rel, doc in plan.files.items():
        target = f"extensions/{plan.extension_id}/{rel}"
        if rel == "manifest.json":
            check_document(doc, EXTENSION_MANIFEST_SCHEMA, target=target)
        elif plan.extension_id == VENDOR_EXTENSION_ID:
            check_document(doc, VENDOR_SCHEMA, target=target)
        else:
            check_document(doc, ENTERPRISE_SCHEMA, target=target)


def write_json_atomic(path: Path, doc: object) -> None:
    """A standalone JSON document written through a temporary file and a rename."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(_dumps(doc))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _dumps(doc: object) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


# --------------------------------------------------------------------------- apply


def apply(bundle: Bundle, plan: WritePlan) -> list[str]:
    """Write a validated plan; returns the bundle-relative paths written."""
    _validate(plan)  # cheap, and guards plans built by hand
    if bundle.kind == "directory":
        _apply_directory(bundle, plan)
    else:
        _apply_zip(bundle, plan)
    return plan.paths()


def _apply_directory(bundle: Bundle, plan: WritePlan) -> None:
    root = bundle.source
    parent = root / "extensions"
    target = parent / plan.extension_id
    for path in (parent, target):
        if path.is_symlink():
            raise TezError("is a symlink; refusing to write through it", file=str(path))
    if target.is_dir():
        for path in target.rglob("*"):
            if path.is_symlink():
                raise TezError(
                    "is a symlink inside the extension folder; refusing to write", file=str(path)
                )
    parent.mkdir(exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{plan.extension_id}.", suffix=".tmp", dir=parent))
    backup: Path | None = None
    try:
        if target.exists():
            shutil.copytree(target, staging, dirs_exist_ok=True, symlinks=True)
            if plan.drop_records and (staging / RECORDS_DIR).exists():
                shutil.rmtree(staging / RECORDS_DIR)
        for rel, doc in plan.files.items():
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("w", encoding="utf-8") as handle:
                handle.write(_dumps(doc))
                handle.flush()
                os.fsync(handle.fileno())
        if target.exists():
            backup = parent / f".{plan.extension_id}.old-{os.getpid()}-{time.time_ns()}"
            os.rename(target, backup)
        os.rename(staging, target)
    except BaseException:
        if backup is not None and not target.exists():
            os.rename(backup, target)
            backup = None
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if backup is not None:
        shutil.rmtree(backup, ignore_errors=True)


def _apply_zip(bundle: Bundle, plan: WritePlan) -> None:
    source = bundle.source
    prefix = f"{bundle.root_prefix}/" if bundle.root_prefix else ""
    ext_dir = f"extensions/{plan.extension_id}/"
    replaced = {ext_dir + rel for rel in plan.files}
    fd, tmp = tempfile.mkstemp(prefix=f".{source.name}.", suffix=".tmp", dir=source.parent)
    os.close(fd)
    limit = bundle.limits.max_file_bytes
    try:
        with zipfile.ZipFile(source) as zin, zipfile.ZipFile(tmp, "w") as zout:
            for info in zin.infolist():
                rel = (
                    info.filename[len(prefix) :]
                    if info.filename.startswith(prefix)
                    else info.filename
                )
                if rel in replaced or (
                    plan.drop_records and rel.startswith(f"{ext_dir}{RECORDS_DIR}/")
                ):
                    continue
                with zin.open(info) as handle:
                    data = handle.read(limit + 1)
                if len(data) > limit:
                    raise TezError(
                        "entry grew past the size limit while copying", file=f"{source}:{rel}"
                    )
                zout.writestr(info, data)
            stamp = time.localtime()[:6]
            for rel, doc in plan.files.items():
                info = zipfile.ZipInfo(prefix + ext_dir + rel, date_time=stamp)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = (stat.S_IFREG | 0o644) << 16
                zout.writestr(info, _dumps(doc).encode("utf-8"))
        os.chmod(tmp, stat.S_IMODE(source.stat().st_mode))
        os.replace(tmp, source)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
