"""A folder of documents read and cut into chunks along its own structure.

Markdown is cut at its headings, HTML at its ``h1``-``h6`` elements (scripts and styles
dropped), plain text at its blank lines. A section longer than the chunk limit is split at
paragraph breaks, then at sentence ends, so a chunk stays one readable passage. Every chunk
has a stable id, ``<document path>#<n>``, which the generated samples cite as their graded
relevance. A file that cannot be read (too large, not UTF-8, unreadable) is skipped with a
reason the command prints; it never stops the run.
"""

from __future__ import annotations

import logging
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Final

from assay.data.documents import read_text
from assay.data.fileio import is_dir, is_file
from assay.errors import InputError, UsageError

TEXT_SUFFIXES: Final = frozenset({".md", ".markdown", ".txt", ".text", ".html", ".htm"})
PDF_SUFFIX: Final = ".pdf"  # read with pypdf, the optional 'pdf' extra
MAX_DOCUMENT_BYTES: Final = 2 * 1024 * 1024  # one document; a corpus of books wants PDF chunking
MAX_DOCUMENTS: Final = 10_000
MIN_CHUNK_CHARS: Final = 40  # a heading alone, or a line of navigation, is no passage
DEFAULT_CHUNK_CHARS: Final = 1200

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class Chunk:
    """One passage of one document: its id, where it sits, and its text."""

    id: str
    document: str
    title: str
    text: str


@dataclass(frozen=True)
class Corpus:
    """The chunks of every readable document, in path order, and the files left out."""

    chunks: tuple[Chunk, ...]
    documents: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]  # (path, reason)

    def chunk(self, chunk_id: str) -> Chunk:
        for chunk in self.chunks:
            if chunk.id == chunk_id:
                return chunk
        raise KeyError(chunk_id)


class _DocumentError(InputError):
    """A document that cannot be read (internal: it becomes a skipped file)."""


def read_corpus(root: Path, *, max_chars: int = DEFAULT_CHUNK_CHARS) -> Corpus:
    """Every document under ``root`` (a folder, or one file) chunked; a usage error when none
    can be read, naming the folder."""
    if is_file(root):
        paths, base = [root], root.parent
    elif is_dir(root):
        paths, base = _document_paths(root), root
    else:
        raise UsageError(f"--from {root}: no such file or folder")
    chunks: list[Chunk] = []
    documents: list[str] = []
    skipped: list[tuple[str, str]] = []
    for path in paths:
        name = path.relative_to(base).as_posix()
        try:
            found = _document_chunks(path, name, max_chars)
        except _DocumentError as exc:
            skipped.append((name, exc.detail))
            continue
        if not found:
            skipped.append((name, "no passage of text long enough to ask about"))
            continue
        documents.append(name)
        chunks.extend(found)
    if not chunks:
        raise UsageError(f"--from {root}: no readable documents ({_suffix_list()})")
    return Corpus(tuple(chunks), tuple(documents), tuple(skipped))


def _suffix_list() -> str:
    return ", ".join(sorted(TEXT_SUFFIXES | {PDF_SUFFIX}))


def _document_paths(root: Path) -> list[Path]:
    """Files with a known suffix under ``root``, sorted; links to folders are not followed."""
    found: list[Path] = []
    for folder, names, files in os.walk(root, followlinks=False):
        names[:] = sorted(n for n in names if not n.startswith("."))
        for name in sorted(files):
            path = Path(folder) / name
            known = path.suffix.lower() in TEXT_SUFFIXES or path.suffix.lower() == PDF_SUFFIX
            if known and not name.startswith("."):
                found.append(path)
            if len(found) > MAX_DOCUMENTS:
                raise UsageError(f"--from {root}: more than {MAX_DOCUMENTS} documents")
    return found


def _document_chunks(path: Path, name: str, max_chars: int) -> list[Chunk]:
    """The chunks of one file (a PDF page by page, other documents by their markup)."""
    if path.suffix.lower() == PDF_SUFFIX:
        _check_file(path)
        return chunks_of(name, pdf_sections(path), max_chars)
    return chunk_document(name, path.suffix.lower(), _read(path), max_chars=max_chars)


def pdf_sections(path: Path) -> list[tuple[str, str]]:
    """``("page <n>", text)`` per page of a PDF, through pypdf (the ``pdf`` extra)."""
    try:
        import pypdf  # optional and heavy: only a corpus with a PDF in it loads it
    except ImportError:
        raise _DocumentError("reading PDF needs the pdf extra: pip install 'assay[pdf]'") from None
    try:
        with _quiet("pypdf"):
            reader = pypdf.PdfReader(str(path))
            if reader.is_encrypted:
                raise _DocumentError("the PDF is encrypted")
            pages = [page.extract_text() or "" for page in reader.pages]
    except _DocumentError:
        raise
    except Exception as exc:  # pypdf raises many kinds of error on a damaged file
        raise _DocumentError(f"not a readable PDF ({type(exc).__name__})") from None
    return [(f"page {number}", text) for number, text in enumerate(pages, start=1)]


@contextmanager
def _quiet(name: str) -> Iterator[None]:
    """A library's log warnings held back while it reads (the skip reason says what failed;
    pypdf would otherwise print 'EOF marker not found' on stderr)."""
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def _check_file(path: Path) -> None:
    """A regular file within the size limit, else the reason it is skipped."""
    try:
        status = path.stat()
    except OSError as exc:
        raise _DocumentError(f"cannot read file ({exc.strerror or exc})") from None
    if not stat.S_ISREG(status.st_mode):  # a link to a device or a pipe: never read endlessly
        raise _DocumentError("not a regular file")
    if status.st_size > MAX_DOCUMENT_BYTES:
        raise _DocumentError(f"{status.st_size} bytes; the limit is {MAX_DOCUMENT_BYTES}")


def _read(path: Path) -> str:
    _check_file(path)
    try:
        return read_text(path, _DocumentError)
    except _DocumentError as exc:
        raise _DocumentError(exc.detail) from None


def chunk_document(name: str, suffix: str, text: str, *, max_chars: int) -> list[Chunk]:
    """The chunks of one document's text, cut by the structure its suffix implies."""
    if suffix in (".md", ".markdown"):
        sections = markdown_sections(text)
    elif suffix in (".html", ".htm"):
        sections = html_sections(text)
    else:
        sections = [("", text)]
    return chunks_of(name, sections, max_chars)


def chunks_of(name: str, sections: list[tuple[str, str]], max_chars: int) -> list[Chunk]:
    """Numbered chunks of a document's ``(title, body)`` sections (untitled: the file stem)."""
    stem = Path(name).stem
    chunks: list[Chunk] = []
    for title, body in sections:
        for piece in split_passage(body, max_chars):
            if len(piece) >= MIN_CHUNK_CHARS:
                chunk_id = f"{name}#{len(chunks) + 1}"
                chunks.append(Chunk(chunk_id, name, title or stem, piece))
    return chunks


def markdown_sections(text: str) -> list[tuple[str, str]]:
    """``(heading path, body)`` per Markdown section; headings in code fences are text."""
    sections: list[tuple[str, str]] = []
    path: list[tuple[int, str]] = []
    body: list[str] = []
    fenced = False

    def close() -> None:
        sections.append((" > ".join(title for _, title in path), "\n".join(body)))
        body.clear()

    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        heading = None if fenced else _HEADING.match(line)
        if heading is None:
            body.append(line)
            continue
        close()
        level = len(heading.group(1))
        path = [entry for entry in path if entry[0] < level] + [(level, heading.group(2))]
    close()
    return sections


class _HTMLSections(HTMLParser):
    """Collects ``(heading path, body)`` sections from HTML; script and style text dropped."""

    _HIDDEN = frozenset({"script", "style", "noscript", "template", "head"})
    _BLOCKS = frozenset({"p", "li", "div", "br", "tr", "pre", "section", "article", "dd", "dt"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: list[tuple[str, str]] = []
        self._path: list[tuple[int, str]] = []
        self._body: list[str] = []
        self._heading: tuple[int, list[str]] | None = None
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._HIDDEN:
            self._hidden += 1
        elif len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
            self._close()
            self._heading = (int(tag[1]), [])
        elif tag in self._BLOCKS:
            self._body.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._HIDDEN:
            self._hidden = max(0, self._hidden - 1)
        elif self._heading is not None and tag == f"h{self._heading[0]}":
            level, words = self._heading
            title = " ".join("".join(words).split())
            self._path = [e for e in self._path if e[0] < level] + [(level, title)]
            self._heading = None

    def handle_data(self, data: str) -> None:
        if self._hidden:
            return
        if self._heading is not None:
            self._heading[1].append(data)
        else:
            self._body.append(data)

    def _close(self) -> None:
        self.sections.append((" > ".join(t for _, t in self._path), "".join(self._body)))
        self._body = []

    def finish(self) -> list[tuple[str, str]]:
        self.close()
        self._close()
        return self.sections


def html_sections(text: str) -> list[tuple[str, str]]:
    """``(heading path, body)`` per HTML section (cut at ``h1``-``h6``)."""
    parser = _HTMLSections()
    parser.feed(text)
    return parser.finish()


def split_passage(body: str, max_chars: int) -> list[str]:
    """``body`` as passages of at most ``max_chars``: whole paragraphs where they fit, else
    sentences, else hard cuts; whitespace inside a paragraph is collapsed."""
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", body)]
    pieces: list[str] = []
    for paragraph in filter(None, paragraphs):
        if len(paragraph) <= max_chars:
            pieces.append(paragraph)
        else:
            pieces.extend(_long_paragraph(paragraph, max_chars))
    return _pack(pieces, max_chars)


def _long_paragraph(paragraph: str, max_chars: int) -> list[str]:
    """A paragraph over the limit, as sentences (a sentence over it cut at the limit)."""
    parts: list[str] = []
    for sentence in _SENTENCE_END.split(paragraph):
        while len(sentence) > max_chars:
            parts.append(sentence[:max_chars])
            sentence = sentence[max_chars:]
        if sentence:
            parts.append(sentence)
    return _pack(parts, max_chars, joiner=" ")


def _pack(parts: list[str], max_chars: int, joiner: str = "\n\n") -> list[str]:
    """Consecutive parts joined while the result stays within ``max_chars``."""
    packed: list[str] = []
    for part in parts:
        if packed and len(packed[-1]) + len(joiner) + len(part) <= max_chars:
            packed[-1] = packed[-1] + joiner + part
        else:
            packed.append(part)
    return packed
