"""Read a Tez bundle from a directory or a ``.tez`` zip, defensively.

Bundles come from other people, so every path is checked before it is used: zip entries with
absolute or ``..`` paths, symlinks leaving the bundle, files over the size caps and text that is
not UTF-8 are refused with a :class:`~assay.errors.TezError` naming the file. The manifest is
read leniently (deviations become warnings, see :mod:`assay.tez.manifest`).
"""

from __future__ import annotations

import hashlib
import os
import stat
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from assay.bounded import loads_json
from assay.errors import TezError
from assay.tez.manifest import ItemEntry, declared_extension_ids, item_entries, manifest_warnings
from assay.tez.records import EVAL_EXTENSION_IDS, STANDARD_EXTENSION_ID

MiB = 1024 * 1024
SYNTHESIS_IDS = ("tez.md", "synthesis")
TEXT_SUFFIXES = {
    ".md", ".markdown", ".txt", ".json", ".yaml", ".yml", ".csv", ".tsv", ".html", ".htm",
    ".xml", ".py", ".js", ".ts", ".java", ".go", ".rs", ".c", ".h", ".cpp", ".rb", ".sh",
    ".sql", ".toml", ".ini", ".cfg", ".rst", ".tex", ".eml", ".vtt", ".srt",
}  # fmt: skip
TEXT_MIMES = {"application/json", "application/xml", "application/yaml", "application/x-yaml"}


@dataclass(frozen=True, slots=True)
class Limits:
    """Caps that keep a hostile bundle from exhausting memory."""

    max_file_bytes: int = 32 * MiB
    max_total_bytes: int = 256 * MiB
    max_entries: int = 10_000


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
    _reader: _Reader | None = None

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
        return self._reader.read(safe_relpath(rel, what="path"))

    def read_text(self, rel: str) -> str:
        return decode_utf8(self.read_bytes(rel), f"{self.source}:{rel}")


def safe_relpath(raw: str, *, what: str) -> str:
    """A normalised relative POSIX path, or TezError when it could leave the bundle."""
    if not isinstance(raw, str) or not raw.strip():
        raise TezError(f"{what} is empty")
    if "\x00" in raw or "\\" in raw:
        raise TezError(f"{what} '{raw!s}' contains a NUL or backslash; refusing it")
    posix = PurePosixPath(raw)
    if posix.is_absolute() or (posix.parts and ":" in posix.parts[0]):
        raise TezError(f"{what} '{raw}' is absolute; bundle paths must be relative")
    parts = [p for p in posix.parts if p not in ("", ".")]
    if ".." in parts:
        raise TezError(f"{what} '{raw}' climbs out of the bundle with '..'; refusing it")
    if not parts:
        raise TezError(f"{what} '{raw}' names no file")
    return "/".join(parts)


def decode_utf8(data: bytes, label: str) -> str:
    """Strict UTF-8 (a leading BOM is dropped); the error names file and byte offset."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TezError(
            f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})", file=label
        ) from None
    return text[1:] if text.startswith("\ufeff") else text


# --------------------------------------------------------------------------- sources


class _Reader:
    """Reads files of one bundle with the size caps applied to every read."""

    def __init__(self, label: str, limits: Limits) -> None:
        self.label = label
        self.limits = limits
        self.total = 0

    def names(self) -> tuple[str, ...]:  # pragma: no cover - abstract
        raise NotImplementedError

    def read(self, rel: str) -> bytes:  # pragma: no cover - abstract
        raise NotImplementedError

    def _account(self, rel: str, size: int) -> None:
        if size > self.limits.max_file_bytes:
            raise TezError(
                f"file is {size} bytes, over the per-file limit of {self.limits.max_file_bytes}",
                file=f"{self.label}:{rel}",
            )
        self.total += size
        if self.total > self.limits.max_total_bytes:
            raise TezError(
                f"bundle content exceeds the total limit of {self.limits.max_total_bytes} bytes",
                file=self.label,
            )


class _DirReader(_Reader):
    def __init__(self, root: Path, limits: Limits) -> None:
        super().__init__(str(root), limits)
        self.root = root
        self.real_root = root.resolve()
        self._names = tuple(sorted(self._walk()))

    def _walk(self) -> Iterator[str]:
        count = 0
        for dirpath, dirnames, filenames in os.walk(self.root, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if not (Path(dirpath) / d).is_symlink())
            for name in filenames:
                count += 1
                if count > self.limits.max_entries:
                    raise TezError(
                        f"bundle has more than {self.limits.max_entries} files", file=self.label
                    )
                yield (Path(dirpath) / name).relative_to(self.root).as_posix()

    def names(self) -> tuple[str, ...]:
        return self._names

    def read(self, rel: str) -> bytes:
        path = self.root / rel
        try:
            real = path.resolve(strict=True)
        except (FileNotFoundError, RuntimeError):
            raise TezError("file not found in the bundle", file=f"{self.label}:{rel}") from None
        if not real.is_relative_to(self.real_root):
            raise TezError(
                "resolves outside the bundle (symlink); refusing to read it",
                file=f"{self.label}:{rel}",
            )
        info = real.stat()
        if not stat.S_ISREG(info.st_mode):
            raise TezError("is not a regular file", file=f"{self.label}:{rel}")
        self._account(rel, info.st_size)
        with real.open("rb") as handle:
            data = handle.read(self.limits.max_file_bytes + 1)
        if len(data) > self.limits.max_file_bytes:  # grew while reading
            raise TezError(
                "file grew past the per-file limit while reading", file=f"{self.label}:{rel}"
            )
        return data


class _ZipReader(_Reader):
    def __init__(self, path: Path, limits: Limits) -> None:
        super().__init__(str(path), limits)
        try:
            self.zf = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as exc:
            raise TezError(f"not a readable .tez (zip) archive: {exc}", file=str(path)) from None
        infos = self.zf.infolist()
        if len(infos) > limits.max_entries:
            raise TezError(
                f"archive has {len(infos)} entries, over {limits.max_entries}", file=self.label
            )
        self.infos: dict[str, zipfile.ZipInfo] = {}
        declared = 0
        for info in infos:
            name = self._check_entry(info)
            if name is None:
                continue
            if name in self.infos:
                raise TezError(
                    f"archive entry '{name}' appears twice; refusing it", file=self.label
                )
            if info.file_size > limits.max_file_bytes:
                raise TezError(
                    f"entry '{name}' declares {info.file_size} bytes, over the per-file limit of "
                    f"{limits.max_file_bytes}",
                    file=self.label,
                )
            declared += info.file_size
            self.infos[name] = info
        if declared > limits.max_total_bytes:
            raise TezError(
                f"archive declares {declared} bytes, over the total limit of "
                f"{limits.max_total_bytes}",
                file=self.label,
            )

    def _check_entry(self, info: zipfile.ZipInfo) -> str | None:
        raw = info.filename
        mode = (info.external_attr >> 16) & 0xFFFF
        if stat.S_ISLNK(mode):
            raise TezError(
                f"archive entry '{raw}' is a symlink; refusing the bundle", file=self.label
            )
        try:
            name = safe_relpath(raw.rstrip("/") or raw, what=f"archive entry '{raw}'")
        except TezError as exc:
            raise TezError(f"{exc} (zip slip)", file=self.label) from None
        if info.is_dir():
            return None
        if info.flag_bits & 0x1:
            raise TezError(f"archive entry '{name}' is encrypted", file=self.label)
        return name

    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self.infos))

    def read(self, rel: str) -> bytes:
        info = self.infos.get(rel)
        if info is None:
            raise TezError("file not found in the bundle", file=f"{self.label}:{rel}")
        self._account(rel, info.file_size)
        try:
            with self.zf.open(info) as handle:
                data = handle.read(self.limits.max_file_bytes + 1)
        except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as exc:
            raise TezError(f"cannot decompress: {exc}", file=f"{self.label}:{rel}") from None
        if len(data) > self.limits.max_file_bytes:
            raise TezError(
                f"decompresses past the per-file limit of {self.limits.max_file_bytes} bytes",
                file=f"{self.label}:{rel}",
            )
        return data


class _PrefixedReader(_Reader):
    """A zip whose bundle sits in one top-level folder."""

    def __init__(self, inner: _Reader, prefix: str) -> None:
        super().__init__(inner.label, inner.limits)
        self.inner = inner
        self.prefix = prefix

    def names(self) -> tuple[str, ...]:
        cut = len(self.prefix) + 1
        return tuple(n[cut:] for n in self.inner.names() if n.startswith(self.prefix + "/"))

    def read(self, rel: str) -> bytes:
        return self.inner.read(f"{self.prefix}/{rel}")


# --------------------------------------------------------------------------- loading


def is_text_file(path: str, mime: str | None) -> bool:
    if mime and (mime.startswith("text/") or mime in TEXT_MIMES):
        return True
    return PurePosixPath(path).suffix.lower() in TEXT_SUFFIXES


def open_bundle(path: str | Path, *, limits: Limits | None = None) -> Bundle:
    """Load a bundle directory or ``.tez`` zip; TezError for anything unsafe or unusable."""
    source = Path(path)
    limits = limits or Limits()
    reader: _Reader
    if source.is_dir():
        reader = _DirReader(source, limits)
        kind: Literal["directory", "zip"] = "directory"
    elif source.is_file():
        reader = _ZipReader(source, limits)
        kind = "zip"
    else:
        raise TezError("no such bundle (expected a directory or a .tez file)", file=str(source))
    prefix = ""
    names = reader.names()
    if "manifest.json" not in names:
        tops = {n.split("/", 1)[0] for n in names}
        if kind == "zip" and len(tops) == 1 and f"{next(iter(tops))}/manifest.json" in names:
            prefix = next(iter(tops))
            reader = _PrefixedReader(reader, prefix)
            names = reader.names()
        else:
            raise TezError("bundle has no manifest.json at its root", file=str(source))
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
    entry: ItemEntry, reader: _Reader, names: set[str], source: Path, warnings: list[str]
) -> ContextItem:
    if entry.file is None:
        warnings.append(
            f"context item '{entry.id}' has no file (external); only its id can be checked"
        )
        return ContextItem(
            entry.id, entry.type, entry.title, None, None, None, None, entry.declared_hash
        )
    rel = safe_relpath(entry.file, what=f"manifest.json: context item '{entry.id}' file")
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
    manifest: dict[str, Any], reader: _Reader, names: set[str], source: Path, warnings: list[str]
) -> tuple[str | None, str | None]:
    synthesis = manifest.get("synthesis")
    declared = synthesis.get("file") if isinstance(synthesis, dict) else None
    candidates = (
        [safe_relpath(declared, what="manifest.json: synthesis.file")]
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
