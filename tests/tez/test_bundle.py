"""Reading bundles: the official ones leniently, hostile ones with clear errors."""

from __future__ import annotations

import json
import os
import shutil
import stat
import zipfile
from pathlib import Path
from typing import Any

import pytest

from assay.errors import TezError
from assay.tez.bundle import Limits, open_bundle, safe_relpath
from tez.helpers import zip_dir


def test_official_bundles_load_with_their_schema_deviations_reported(bundles_dir: Path) -> None:
    tip = open_bundle(bundles_dir / "tip-compliance")
    assert tip.bundle_id == "tip-compliance-test-2026-02"
    assert len(tip.items) == 6
    assert any("context.items.2.type" in w and "transcript" in w for w in tip.warnings)
    # the item whose file name breaks {item-id}.{ext}: resolved through its file field
    assert tip.items["term-sheet"].file == "context/term-sheet-summary.md"
    assert "TAMARIND-4" in (tip.items["incident-runbook"].text or "")
    assert tip.synthesis_file == "tez.md" and tip.synthesis_text
    interop = open_bundle(bundles_dir / "interop-level-3")
    assert any(w.startswith("manifest.json: extensions:") for w in interop.warnings)
    assert set(interop.items) == {
        "market-landscape",
        "technical-assessment",
        "financial-projections",
        "founder-memo",
        "ops-runbook",
    }
    assert interop.items["ops-runbook"].integrity_ok is None  # no declared hash: nothing to verify


def test_sha256_and_declared_hash(bundle_copy: Any) -> None:
    import hashlib

    path = bundle_copy()
    data = (path / "context" / "market-report.md").read_bytes()
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["context"]["items"][0]["hash"] = "sha256:" + hashlib.sha256(data).hexdigest()
    manifest["context"]["items"][1]["hash"] = "sha256:" + "0" * 64
    (path / "manifest.json").write_text(json.dumps(manifest))
    loaded = open_bundle(path)
    assert loaded.items["market-report"].integrity_ok is True
    assert loaded.items["financial-model"].integrity_ok is False
    assert any("declared hash" in w for w in loaded.warnings)


def test_synthesis_path_comes_from_the_manifest(bundle_copy: Any) -> None:
    path = bundle_copy()
    (path / "tez.md").rename(path / "analysis.md")
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["synthesis"]["file"] = "analysis.md"
    (path / "manifest.json").write_text(json.dumps(manifest))
    loaded = open_bundle(path)
    assert loaded.synthesis_file == "analysis.md"
    assert loaded.is_synthesis_id("analysis.md") and loaded.is_synthesis_id("tez.md")


def test_synthesis_falls_back_to_synthesis_md(bundle_copy: Any) -> None:
    path = bundle_copy()
    (path / "tez.md").rename(path / "synthesis.md")
    loaded = open_bundle(path)
    assert loaded.synthesis_file == "synthesis.md"
    assert any("missing; using 'synthesis.md'" in w for w in loaded.warnings)


def test_missing_item_file_is_a_warning_not_a_failure(bundle_copy: Any) -> None:
    path = bundle_copy()
    (path / "context" / "customer-data.md").unlink()
    loaded = open_bundle(path)
    assert loaded.items["customer-data"].text is None
    assert any("customer-data" in w and "missing" in w for w in loaded.warnings)


@pytest.mark.parametrize(
    "raw",
    ["../etc/passwd", "/etc/passwd", "context/../../x", "C:/windows/x", "a\\..\\b", "", "a\x00b"],
)
def test_safe_relpath_refuses_escapes(raw: str) -> None:
    with pytest.raises(TezError):
        safe_relpath(raw, what="path")


def test_safe_relpath_normalises() -> None:
    assert safe_relpath("./context//a.md", what="p") == "context/a.md"


# --------------------------------------------------------------------------- hostile zips


def _zip(path: Path, entries: dict[str, bytes], *, symlink: str | None = None) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
        if symlink:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, "/etc/passwd")
    return path


def _bundle_entries(bundles_dir: Path) -> dict[str, bytes]:
    root = bundles_dir / "interop-level-3"
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    "evil", ["../evil.txt", "/abs/evil.txt", "context/../../evil.txt", "C:\\evil.txt"]
)
def test_zip_slip_entry_is_refused(evil: str, bundles_dir: Path, tmp_path: Path) -> None:
    archive = _zip(tmp_path / "slip.tez", {**_bundle_entries(bundles_dir), evil: b"x"})
    with pytest.raises(TezError, match=r"zip slip|absolute|climbs|backslash"):
        open_bundle(archive)


def test_zip_symlink_entry_is_refused(bundles_dir: Path, tmp_path: Path) -> None:
    archive = _zip(tmp_path / "link.tez", _bundle_entries(bundles_dir), symlink="context/link.md")
    with pytest.raises(TezError, match="symlink"):
        open_bundle(archive)


def test_zip_bomb_is_refused_by_declared_and_actual_size(bundles_dir: Path, tmp_path: Path) -> None:
    entries = _bundle_entries(bundles_dir)
    entries["context/market-landscape.md"] = b"a" * (3 * 1024 * 1024)  # compresses to a few KiB
    archive = _zip(tmp_path / "bomb.tez", entries)
    assert archive.stat().st_size < 200_000
    with pytest.raises(TezError, match="over the per-file limit"):
        open_bundle(archive, limits=Limits(max_file_bytes=1024 * 1024))
    with pytest.raises(TezError, match="total limit"):
        open_bundle(archive, limits=Limits(max_total_bytes=2 * 1024 * 1024))


def test_zip_that_lies_about_its_size_is_refused(bundles_dir: Path, tmp_path: Path) -> None:
    entries = _bundle_entries(bundles_dir)
    big = b"b" * (2 * 1024 * 1024)
    entries["context/ops-runbook.md"] = big
    archive = _zip(tmp_path / "liar.tez", entries)
    with zipfile.ZipFile(archive) as zf:
        info = zf.getinfo("context/ops-runbook.md")
    data = bytearray(archive.read_bytes())
    small = (100).to_bytes(4, "little")
    local = info.header_offset  # local header: uncompressed size at +22
    assert data[local : local + 4] == b"PK\x03\x04"
    data[local + 22 : local + 26] = small
    name = info.filename.encode()
    central = data.find(b"PK\x01\x02")
    while central != -1:  # central directory entry of that file: uncompressed size at +24
        if data[central + 46 : central + 46 + len(name)] == name:
            data[central + 24 : central + 28] = small
            break
        central = data.find(b"PK\x01\x02", central + 4)
    archive.write_bytes(bytes(data))
    with zipfile.ZipFile(archive) as zf:
        assert zf.getinfo("context/ops-runbook.md").file_size == 100  # the lie is in place
    # declared 100 bytes passes the cap, but the bytes do not match what was declared
    with pytest.raises(TezError, match=r"ops-runbook\.md: cannot decompress"):
        open_bundle(archive, limits=Limits(max_file_bytes=1024 * 1024))


def test_not_a_zip(tmp_path: Path) -> None:
    path = tmp_path / "x.tez"
    path.write_bytes(b"this is not a zip")
    with pytest.raises(TezError, match="not a readable"):
        open_bundle(path)


def test_huge_file_in_a_directory_bundle(bundle_copy: Any) -> None:
    path = bundle_copy()
    target = path / "context" / "market-report.md"
    with target.open("r+b") as handle:  # sparse: 40 MiB on paper, nothing on disk
        handle.truncate(40 * 1024 * 1024)
    with pytest.raises(TezError, match="over the per-file limit"):
        open_bundle(path)


def test_invalid_utf8_item_names_file_and_offset(bundle_copy: Any) -> None:
    path = bundle_copy()
    target = path / "context" / "founder-interview.md"
    target.write_bytes(b"# Interview\nvalid start \xff\xfe broken")
    with pytest.raises(TezError, match=r"founder-interview\.md.*not valid UTF-8.*offset 24"):
        open_bundle(path)


def test_invalid_utf8_in_zip(bundles_dir: Path, tmp_path: Path) -> None:
    entries = _bundle_entries(bundles_dir)
    entries["tez.md"] = b"\xc3\x28 not utf-8"
    with pytest.raises(TezError, match=r"tez\.md.*not valid UTF-8"):
        open_bundle(_zip(tmp_path / "bad.tez", entries))


def test_manifest_pointing_outside_the_bundle(bundle_copy: Any) -> None:
    path = bundle_copy()
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["context"]["items"][0]["file"] = "../../../etc/passwd"
    (path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(TezError, match="climbs out"):
        open_bundle(path)


@pytest.mark.skipif(os.name == "nt", reason="symlinks")
def test_symlink_leaving_a_directory_bundle(bundle_copy: Any, tmp_path: Path) -> None:
    path = bundle_copy()
    secret = tmp_path / "secret.md"
    secret.write_text("secret")
    target = path / "context" / "market-report.md"
    target.unlink()
    target.symlink_to(secret)
    with pytest.raises(TezError, match="outside the bundle"):
        open_bundle(path)


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "JSON object"),
        (b'{"tezit_version": "2.0"}', "major version"),
    ],
)
def test_bad_manifests(bundle_copy: Any, content: bytes, match: str) -> None:
    path = bundle_copy()
    (path / "manifest.json").write_bytes(content)
    with pytest.raises(TezError, match=match):
        open_bundle(path)


def test_no_manifest(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    with pytest.raises(TezError, match=r"no manifest\.json"):
        open_bundle(tmp_path / "b")
    with pytest.raises(TezError, match="no such bundle"):
        open_bundle(tmp_path / "missing")


def test_zip_of_official_bundle_loads_like_the_directory(bundles_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "b"
    shutil.copytree(bundles_dir / "interop-level-3", copy)
    archive = zip_dir(copy, tmp_path / "b.tez")
    assert set(open_bundle(archive).items) == set(open_bundle(copy).items)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda m: "{not json", "not valid JSON"),
        (lambda m: [1, 2], "must be a JSON object"),
        (lambda m: {**m, "tezit_version": "2.0"}, "tezit_version '2.0' has an unsupported"),
        (
            lambda m: m["context"]["items"][0].update(file="../../etc/passwd") or m,
            "file '../../etc/passwd' climbs out of the bundle",
        ),
        (
            lambda m: m["context"]["items"][0].update(file="/etc/passwd") or m,
            "file '/etc/passwd' is absolute",
        ),
        (lambda m: m["synthesis"].update(file="a\\b.md") or m, "synthesis.file 'a\\b.md' contains"),
    ],
)
def test_every_manifest_error_names_the_bundle(bundle_copy: Any, change: Any, problem: str) -> None:
    path = bundle_copy()
    manifest = change(json.loads((path / "manifest.json").read_text()))
    text = manifest if isinstance(manifest, str) else json.dumps(manifest)
    (path / "manifest.json").write_text(text)
    with pytest.raises(TezError) as raised:
        open_bundle(path)
    assert str(raised.value).startswith(f"{path}:manifest.json: "), str(raised.value)
    assert problem in str(raised.value)
