"""Lenient reading of a Tez ``manifest.json``.

The official test bundles violate their own Level 3 schema (an item of type ``transcript``,
``extensions`` as an array), so a strict model is used only to *report* problems as warnings;
loading goes on with whatever ``context.items[*].id/file`` the manifest provides.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

ITEM_ID = r"^[a-z0-9](?:[a-z0-9._-]*[a-z0-9])?$"
BUNDLE_ID = r"^[a-z0-9](?:[a-z0-9-]{1,98}[a-z0-9])?$"

ItemType = Literal[
    "document", "email", "spreadsheet", "presentation", "image", "audio", "video", "code",
    "data", "webpage", "message", "note", "custom",
]  # fmt: skip


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Creator(_Closed):
    name: Annotated[str, Field(min_length=1)]
    id: str | None = None
    email: str | None = None
    org: str | None = None
    url: str | None = None


class _Synthesis(_Closed):
    title: Annotated[str, Field(min_length=1)]
    type: Literal[
        "general", "recommendation", "proposal", "analysis", "summary", "comparison", "review",
        "tutorial", "custom",
    ]  # fmt: skip
    file: str
    abstract: Annotated[str, Field(max_length=500)] | None = None
    language: str | None = None
    generated_at: str | None = None
    based_on_version: int | None = None
    staleness: dict[str, Any] | None = None


class _Item(_Closed):
    id: Annotated[str, Field(pattern=ITEM_ID)]
    type: ItemType
    title: str
    file: str | None
    source: str | None = None
    external_uri: str | None = None
    mime_type: str | None = None
    size_bytes: Annotated[int, Field(ge=0)] | None = None
    hash: Annotated[str, Field(pattern=r"^[a-z0-9]+(:[a-f0-9]+)$")] | None = None
    access: Literal["full", "interrogation_only", "summary_only"] | None = None
    linked_source: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None


class _Context(_Closed):
    scope: Literal["full", "focused", "private", "custom"]
    item_count: Annotated[int, Field(ge=0)]
    items: list[_Item]
    total_size_bytes: int | None = None


class StrictManifest(_Open):
    """Level 3 manifest constraints (tezit 1.2) used to report deviations."""

    tezit_version: Literal["1.2"]
    id: Annotated[str, Field(pattern=BUNDLE_ID)]
    version: Annotated[int, Field(ge=1)]
    created_at: str
    creator: _Creator
    synthesis: _Synthesis
    context: _Context
    profile: (
        Literal["knowledge", "messaging", "decision", "handoff", "learning", "negotiation"] | None
    ) = None
    extensions: dict[str, dict[str, Any]] | None = None


@dataclass(frozen=True, slots=True)
class ItemEntry:
    """What the reader needs from one ``context.items`` entry."""

    id: str
    file: str | None
    type: str
    title: str
    mime_type: str | None
    declared_hash: str | None


def manifest_warnings(manifest: Mapping[str, Any]) -> list[str]:
    """Schema deviations of ``manifest`` as readable one-liners (never raises)."""
    out: list[str] = []
    try:
        StrictManifest.model_validate(dict(manifest))
    except ValidationError as exc:
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"]) or "(root)"
            value = err.get("input")
            shown = f" (got {value!r})" if isinstance(value, (str, int, float)) else ""
            out.append(f"manifest.json: {where}: {err['msg']}{shown}")
    context = manifest.get("context")
    if isinstance(context, Mapping):
        items = context.get("items")
        count = context.get("item_count")
        if isinstance(items, list) and isinstance(count, int) and count != len(items):
            out.append(
                f"manifest.json: context.item_count is {count} but context.items lists {len(items)}"
            )
    return out


def item_entries(manifest: Mapping[str, Any]) -> tuple[list[ItemEntry], list[str]]:
    """Usable context items (first of duplicate ids wins) and warnings about skipped ones."""
    warnings: list[str] = []
    context = manifest.get("context")
    raw = context.get("items") if isinstance(context, Mapping) else None
    if not isinstance(raw, list):
        return [], ["manifest.json: context.items is missing or not a list; no context items"]
    seen: set[str] = set()
    entries: list[ItemEntry] = []
    for index, item in enumerate(raw):
        if not isinstance(item, Mapping) or not isinstance(item.get("id"), str) or not item["id"]:
            warnings.append(f"manifest.json: context.items[{index}] has no string id; skipped")
            continue
        item_id = item["id"]
        if item_id in seen:
            warnings.append(f"manifest.json: context item id '{item_id}' repeats; first one used")
            continue
        seen.add(item_id)
        file = item.get("file")
        if file is not None and not isinstance(file, str):
            warnings.append(f"manifest.json: context item '{item_id}': file is not a string")
            file = None
        entries.append(
            ItemEntry(
                id=item_id,
                file=file or None,
                type=str(item.get("type", "")),
                title=str(item.get("title", "")),
                mime_type=item.get("mime_type") if isinstance(item.get("mime_type"), str) else None,
                declared_hash=item.get("hash") if isinstance(item.get("hash"), str) else None,
            )
        )
    return entries, warnings


def declared_extension_ids(manifest: Mapping[str, Any]) -> list[str]:
    """Extension ids declared in the manifest, in object form or the array form seen in the wild."""
    raw = manifest.get("extensions")
    if isinstance(raw, Mapping):
        return [str(key) for key in raw]
    if isinstance(raw, list):
        return [
            str(e["id"]) for e in raw if isinstance(e, Mapping) and isinstance(e.get("id"), str)
        ]
    return []
