"""Read a Tez bundle from a directory or a ``.tez`` zip, defensively.

Bundles come from other people, so every path is checked before it is used: zip entries with
absolute or ``..`` paths, symlinks leaving the bundle, files over the size caps and text that is
not UTF-8 are refused with a :class:`~assay.errors.TezError` naming the file. The manifest is
read leniently (deviations become warnings, see :mod:`assay.tez.manifest`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from assay.data.bounded import loads_json
from assay.data.fileio import is_dir, is_file
from assay.errors import TezError
from assay.tez.manifest import ItemEntry, declared_extension_ids, item_entries, manifest_warnings
from assay.tez.readers import (
    DirReader,
    Limits,
    PrefixedReader,
    Reader,
    ZipReader,
    decode_utf8,
    safe_relpath,
)
from assay.tez.records import EVAL_EXTENSION_IDS, STANDARD_EXTENSION_ID

SYNTHESIS_IDS = ("tez.md", "synthesis")
TEXT_SUFFIXES = {
    ".md", ".markdown", ".txt", ".json", ".yaml", ".yml", ".csv", ".tsv", ".html", ".htm",
    ".xml", ".py", ".js", ".ts", ".java", ".go", ".rs", ".c", ".h", ".cpp", ".rb", ".sh",
    ".sql", ".toml", ".ini", ".cfg", ".rst", ".tex", ".eml", ".vtt", ".srt",
}  # fmt: skip
TEXT_MIMES = {"application/json", "application/xml", "application/yaml", "application/x-yaml"}


@dataclass(frozen=True, slots=True)
class ContextItem:
    """One context item: manifest fields plus its text when it is a readable text file."""

    id: str
    type: str
    title: str
    file: str | None
    text: str | None
    size: int | None
    sha256: str | None
    declared_hash: str | None

    @property
    def integrity_ok(self) -> bool | None:
        """``None`` when no hash is declared (nothing to verify), else whether it matches."""
        if not self.declared_hash or self.sha256 is None:
            return None
        algo, _, digest = self.declared_hash.partition(":")
        return algo == "sha256" and digest == self.sha256


@dataclass(slots=True)
class Bundle:
    """A loaded bundle. ``files`` lists every regular file, relative to the bundle root."""

    source: Path
    kind: Literal["directory", "zip"]
    root_prefix: str
    manifest: dict[str, Any]
    manifest_bytes: bytes
    bundle_id: str
    synthesis_file: str | None
    synthesis_text: str | None
    items: dict[str, ContextItem]
    files: tuple[str, ...]
    warnings: list[str] = field(default_factory=list)
    eval_extensions: dict[str, list[str]] = field(default_factory=dict)
    _reader: Reader | None = None

    @property
    def limits(self) -> Limits:
        return self._reader.limits if self._reader is not None else Limits()

    def item(self, item_id: str) -> ContextItem | None:
        return self.items.get(item_id)

    def is_synthesis_id(self, item_id: str) -> bool:
        """``[[tez.md]]``, ``[[synthesis]]`` or the manifest's synthesis file name."""
        names = {*SYNTHESIS_IDS}
        if self.synthesis_file:
            names.add(PurePosixPath(self.synthesis_file).name)
        return item_id in names

    def read_bytes(self, rel: str) -> bytes:
        """Bytes of a bundle file (size-capped, path-checked)."""
        if self._reader is None:  # pragma: no cover - always set by open_bundle
            raise TezError("bundle is closed", file=str(self.source))
        return self._reader.read(safe_relpath(rel, what="path", file=str(self.source)))

    def read_text(self, rel: str) -> str:
        return decode_utf8(self.read_bytes(rel), f"{self.source}:{rel}")


# --------------------------------------------------------------------------- loading


def is_text_file(path: str, mime: str | None) -> bool:
    if mime and (mime.startswith("text/") or mime in TEXT_MIMES):
        return True
    return PurePosixPath(path).suffix.lower() in TEXT_SUFFIXES


def _open_reader(source: Path, limits: Limits) -> tuple[Reader, Literal["directory", "zip"], str]:
    """A reader of the bundle at ``source``, its kind, and the top-level folder of a zip whose
    bundle sits in one (else "")."""
    reader: Reader
    if is_dir(source):
        reader = DirReader(source, limits)
        kind: Literal["directory", "zip"] = "directory"
    elif is_file(source):
        reader = ZipReader(source, limits)
        kind = "zip"
    else:
        raise TezError("no such bundle (expected a directory or a .tez file)", file=str(source))
    names = reader.names()
    if "manifest.json" in names:
        return reader, kind, ""
    tops = {n.split("/", 1)[0] for n in names}
    if kind == "zip" and len(tops) == 1 and f"{next(iter(tops))}/manifest.json" in names:
        prefix = next(iter(tops))
        return PrefixedReader(reader, prefix), kind, prefix
    raise TezError("bundle has no manifest.json at its root", file=str(source))


def open_bundle(path: str | Path, *, limits: Limits | None = None) -> Bundle:
    """Load a bundle directory or ``.tez`` zip; TezError for anything unsafe or unusable."""
    source = Path(path)
    reader, kind, prefix = _open_reader(source, limits or Limits())
    names = reader.names()
    manifest_bytes = reader.read("manifest.json")
    manifest = _parse_manifest(manifest_bytes, f"{source}:manifest.json")
    warnings = manifest_warnings(manifest)
    _check_major_version(manifest, source)
    entries, item_warnings = item_entries(manifest)
    warnings += item_warnings
    name_set = set(names)
    items: dict[str, ContextItem] = {}
    for entry in entries:
        items[entry.id] = _load_item(entry, reader, name_set, source, warnings)
    synthesis_file, synthesis_text = _load_synthesis(manifest, reader, name_set, source, warnings)
    bundle_id = manifest.get("id") if isinstance(manifest.get("id"), str) else source.stem
    bundle = Bundle(
        source=source,
        kind=kind,
        root_prefix=prefix,
        manifest=manifest,
        manifest_bytes=manifest_bytes,
        bundle_id=str(bundle_id),
        synthesis_file=synthesis_file,
        synthesis_text=synthesis_text,
        items=items,
        files=names,
        warnings=warnings,
        _reader=reader,
    )
    bundle.eval_extensions = _find_eval_extensions(bundle)
    if all(ext in bundle.eval_extensions for ext in EVAL_EXTENSION_IDS):
        warnings.append(
            "bundle carries both com.ragu.eval-metrics and tezit-eval (it SHOULD NOT); "
            f"{STANDARD_EXTENSION_ID} is preferred when reading"
        )
    return bundle


def _parse_manifest(data: bytes, label: str) -> dict[str, Any]:
    text = decode_utf8(data, label)
    manifest = loads_json(text, lambda m: TezError(m, file=label))
    if not isinstance(manifest, dict):
        raise TezError("must be a JSON object", file=label)
    return manifest


def _check_major_version(manifest: dict[str, Any], source: Path) -> None:
    version = manifest.get("tezit_version")
    if isinstance(version, str) and version.split(".", 1)[0] not in ("1",):
        raise TezError(
            f"tezit_version {version!r} has an unsupported major version (assay reads 1.x)",
            file=f"{source}:manifest.json",
        )


def _load_item(
    entry: ItemEntry, reader: Reader, names: set[str], source: Path, warnings: list[str]
) -> ContextItem:
    if entry.file is None:
        warnings.append(
            f"context item '{entry.id}' has no file (external); only its id can be checked"
        )
        return ContextItem(
            entry.id, entry.type, entry.title, None, None, None, None, entry.declared_hash
        )
    manifest = f"{source}:manifest.json"
    rel = safe_relpath(entry.file, what=f"context item '{entry.id}' file", file=manifest)
    if rel not in names:
        warnings.append(f"context item '{entry.id}': file '{rel}' is missing from the bundle")
        return ContextItem(
            entry.id, entry.type, entry.title, rel, None, None, None, entry.declared_hash
        )
    data = reader.read(rel)
    digest = hashlib.sha256(data).hexdigest()
    text = decode_utf8(data, f"{source}:{rel}") if is_text_file(rel, entry.mime_type) else None
    if text is None:
        warnings.append(
            f"context item '{entry.id}' is not a text file; citations to it are checked for "
            "existence only"
        )
    item = ContextItem(
        entry.id, entry.type, entry.title, rel, text, len(data), digest, entry.declared_hash
    )
    if item.integrity_ok is False:
        warnings.append(f"context item '{entry.id}': content does not match its declared hash")
    return item


def _load_synthesis(
    manifest: dict[str, Any], reader: Reader, names: set[str], source: Path, warnings: list[str]
) -> tuple[str | None, str | None]:
    synthesis = manifest.get("synthesis")
    declared = synthesis.get("file") if isinstance(synthesis, dict) else None
    candidates = (
        [safe_relpath(declared, what="synthesis.file", file=f"{source}:manifest.json")]
        if isinstance(declared, str) and declared
        else []
    )
    candidates += [c for c in ("tez.md", "synthesis.md") if c not in candidates]
    for rel in candidates:
        if rel in names:
            if declared and rel != candidates[0]:
                warnings.append(f"synthesis file '{declared}' is missing; using '{rel}'")
            return rel, decode_utf8(reader.read(rel), f"{source}:{rel}")
    warnings.append("bundle has no synthesis file (manifest synthesis.file, tez.md, synthesis.md)")
    return None, None


def _find_eval_extensions(bundle: Bundle) -> dict[str, list[str]]:
    """Eval extension ids present, with where each was found (directory and/or manifest)."""
    found: dict[str, list[str]] = {}
    declared = declared_extension_ids(bundle.manifest)
    for ext in EVAL_EXTENSION_IDS:
        where = []
        if any(name.startswith(f"extensions/{ext}/") for name in bundle.files):
            where.append("directory")
        if ext in declared:
            where.append("manifest")
        if where:
            found[ext] = where
    return found
