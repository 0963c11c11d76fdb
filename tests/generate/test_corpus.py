"""Reading a corpus: chunks follow the documents' structure; bad files are skipped, named."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.errors import UsageError
from assay.generate import corpus as corpus_module
from assay.generate.corpus import (
    chunk_document,
    html_sections,
    markdown_sections,
    read_corpus,
    split_passage,
)
from generate.conftest import DOCS


def test_markdown_is_cut_at_headings_with_their_path_and_not_inside_fences() -> None:
    text = "# Top\nintro\n## A\nfirst\n```\n# not a heading\n```\n### A1\ndeep\n## B\nsecond\n"
    sections = markdown_sections(text)
    titles = [title for title, _ in sections]
    assert titles == ["", "Top", "Top > A", "Top > A > A1", "Top > B"]
    assert "# not a heading" in dict(sections)["Top > A"]


def test_html_sections_drop_scripts_and_styles_and_unescape() -> None:
    html = (
        "<html><head><style>p{}</style><title>t</title></head><body><h1>Fares &amp; passes</h1>"
        "<p>One &lt;b&gt;</p><script>var x = 1;</script><h2>Kids</h2><p>Free</p></body></html>"
    )
    sections = [(t, " ".join(b.split())) for t, b in html_sections(html)]
    assert ("Fares & passes", "One <b>") in sections
    assert ("Fares & passes > Kids", "Free") in sections
    assert all("var x" not in body and "p{}" not in body for _, body in sections)


def test_long_passages_are_split_within_the_limit_and_lose_no_words() -> None:
    sentence = "The quick brown fox jumps over the lazy dog number {}. "
    body = "".join(sentence.format(i) for i in range(60)) + "\n\n" + "x" * 700
    pieces = split_passage(body, 300)
    assert all(len(piece) <= 300 for piece in pieces)
    assert "".join(pieces).replace(" ", "") == body.replace(" ", "").replace("\n", "")


def test_chunk_ids_number_the_document_passages() -> None:
    text = "# T\n" + "A passage that is long enough to be kept as a chunk.\n\n## U\nshort\n"
    chunks = chunk_document("d/x.md", ".md", text, max_chars=1200)
    assert [c.id for c in chunks] == ["d/x.md#1"]  # 'short' is under the minimum
    assert chunks[0].title == "T" and chunks[0].document == "d/x.md"


def test_the_example_corpus_reads_whole(tmp_path: Path) -> None:
    corpus = read_corpus(DOCS)
    assert len(corpus.documents) == 20 and not corpus.skipped
    assert len({c.id for c in corpus.chunks}) == len(corpus.chunks)
    assert all(c.id.split("#")[0] in corpus.documents for c in corpus.chunks)
    assert not any("tracking" in c.text for c in corpus.chunks)  # the <script> of an HTML page


def test_unreadable_files_are_skipped_with_a_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "good.md").write_text("# G\nA passage that is long enough to be kept here.\n")
    (tmp_path / "latin1.txt").write_bytes(
        "caf\xe9 au lait, a passage long enough to keep".encode("latin-1")
    )
    (tmp_path / "big.md").write_text("# B\n" + "word " * 100)
    (tmp_path / "empty.html").write_text("<html><body><script>x</script></body></html>")
    (tmp_path / "notes.doc").write_bytes(b"\xd0\xcf")  # not a known suffix: not read
    monkeypatch.setattr(corpus_module, "MAX_DOCUMENT_BYTES", 200)
    corpus = read_corpus(tmp_path)
    assert corpus.documents == ("good.md",)
    reasons = dict(corpus.skipped)
    assert set(reasons) == {"latin1.txt", "big.md", "empty.html"}
    assert "UTF-8" in reasons["latin1.txt"] and "limit" in reasons["big.md"]


def test_a_folder_with_nothing_readable_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no readable documents"):
        read_corpus(tmp_path)
    with pytest.raises(UsageError, match="no such file or folder"):
        read_corpus(tmp_path / "missing")


def test_a_link_to_a_device_is_skipped_not_read(tmp_path: Path) -> None:
    (tmp_path / "good.md").write_text("# G\nA passage that is long enough to be kept here.\n")
    (tmp_path / "zero.md").symlink_to("/dev/zero")
    corpus = read_corpus(tmp_path)
    assert dict(corpus.skipped) == {"zero.md": "not a regular file"}


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(), suffix=st.sampled_from([".md", ".html", ".txt"]), limit=st.integers(200, 2000)
)
def test_any_text_chunks_without_error_and_within_the_limit(
    text: str, suffix: str, limit: int
) -> None:
    for chunk in chunk_document("f" + suffix, suffix, text, max_chars=limit):
        assert len(chunk.text) <= limit and chunk.text.strip()


def _pdf(pages: list[str]) -> bytes:
    """A minimal PDF with one line of Helvetica text per page (offsets computed, not copied)."""
    count = len(pages)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids ["
        + b" ".join(f"{4 + 2 * i} 0 R".encode() for i in range(count))
        + f"] /Count {count} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for i, text in enumerate(pages):
        stream = f"BT /F1 11 Tf 40 700 Td ({text}) Tj ET".encode()
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {5 + 2 * i} 0 R "
            "/Resources << /Font << /F1 3 0 R >> >> >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def test_pdf_pages_become_chunks_and_a_damaged_pdf_is_skipped(tmp_path: Path) -> None:
    pytest.importorskip("pypdf")
    first = "The blue ferry leaves Pier 4 at 09:15 every weekday morning."
    second = "Tickets for the red ferry cost 6 euros for adults and 3 for children."
    (tmp_path / "ferry.pdf").write_bytes(_pdf([first, second]))
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\nnot really a pdf")
    corpus = read_corpus(tmp_path)
    assert [(c.id, c.title, c.text) for c in corpus.chunks] == [
        ("ferry.pdf#1", "page 1", first),
        ("ferry.pdf#2", "page 2", second),
    ]
    assert dict(corpus.skipped)["broken.pdf"].startswith(("not a readable PDF", "no passage"))


def test_without_the_pdf_extra_a_pdf_is_skipped_with_the_way_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pypdf", None)  # import pypdf raises ImportError
    (tmp_path / "good.md").write_text("# G\nA passage that is long enough to be kept here.\n")
    (tmp_path / "ferry.pdf").write_bytes(_pdf(["The blue ferry leaves Pier 4 at 09:15."]))
    corpus = read_corpus(tmp_path)
    assert "pip install 'assay[pdf]'" in dict(corpus.skipped)["ferry.pdf"]
