"""Read the files of a Tez bundle, a directory or a ``.tez`` zip, under size caps.

Every read goes through a :class:`Reader`, which refuses what a hostile bundle could use against
the reader: paths that climb out or are absolute, symlinks leaving the bundle, zip slip,
encrypted or duplicate entries, and files or totals over the :class:`Limits`.
"""

from __future__ import annotations

import os
import stat
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from assay.errors import TezError

MiB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Limits:
    """Caps that keep a hostile bundle from exhausting memory."""

    max_file_bytes: int = 32 * MiB
    max_total_bytes: int = 256 * MiB
    max_entries: int = 10_000
    max_depth: int = 64  # folders within folders: deeper is refused, not walked


def safe_relpath(raw: str, *, what: str, file: str | None = None) -> str:
    """A normalised relative POSIX path, or TezError when it could leave the bundle; ``file``
    (the bundle's manifest, say) is named in the error."""
    if not isinstance(raw, str) or not raw.strip():
        raise TezError(f"{what} is empty", file=file)
    if "\x00" in raw or "\\" in raw:
        raise TezError(f"{what} '{raw!s}' contains a NUL or backslash; refusing it", file=file)
    posix = PurePosixPath(raw)
    if posix.is_absolute() or (posix.parts and ":" in posix.parts[0]):
        raise TezError(f"{what} '{raw}' is absolute; bundle paths must be relative", file=file)
    parts = [p for p in posix.parts if p not in ("", ".")]
    if ".." in parts:
        raise TezError(f"{what} '{raw}' climbs out of the bundle with '..'; refusing it", file=file)
    if not parts:
        raise TezError(f"{what} '{raw}' names no file", file=file)
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


class Reader:
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


def walk_files(root: Path, *, max_depth: int, label: str) -> Iterator[str]:
    """The relative POSIX paths of the files under ``root``, symlinked folders not followed.

    A stack, not recursion: Python 3.11's ``os.walk`` recursed per folder, so 1,500 nested
    folders ended in RecursionError. A folder deeper than ``max_depth`` is a TezError.
    """
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        if depth > max_depth:
            raise TezError(f"folders nested deeper than {max_depth} levels", file=label)
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name, reverse=True)
        except OSError as exc:
            raise TezError(f"cannot list a folder ({exc.strerror or exc})", file=label) from None
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append((Path(entry.path), depth + 1))
            elif not entry.is_symlink() or not Path(entry.path).is_dir():
                yield Path(entry.path).relative_to(root).as_posix()


class DirReader(Reader):
    def __init__(self, root: Path, limits: Limits) -> None:
        super().__init__(str(root), limits)
        self.root = root
        self.real_root = root.resolve()
        self._names = tuple(sorted(self._walk()))

    def _walk(self) -> Iterator[str]:
        walked = walk_files(self.root, max_depth=self.limits.max_depth, label=self.label)
        for count, rel in enumerate(walked, start=1):
            if count > self.limits.max_entries:
                raise TezError(
                    f"bundle has more than {self.limits.max_entries} files", file=self.label
                )
            yield rel

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


class ZipReader(Reader):
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


class PrefixedReader(Reader):
    """A zip whose bundle sits in one top-level folder."""

    def __init__(self, inner: Reader, prefix: str) -> None:
        super().__init__(inner.label, inner.limits)
        self.inner = inner
        self.prefix = prefix

    def names(self) -> tuple[str, ...]:
        cut = len(self.prefix) + 1
        return tuple(n[cut:] for n in self.inner.names() if n.startswith(self.prefix + "/"))

    def read(self, rel: str) -> bytes:
        return self.inner.read(f"{self.prefix}/{rel}")
