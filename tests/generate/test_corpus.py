"""Reading a corpus: chunks follow the documents' structure; bad files are skipped, named."""

from __future__ import annotations

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
    (tmp_path / "notes.pdf").write_bytes(b"%PDF-1.4")  # not a text suffix: not read
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
