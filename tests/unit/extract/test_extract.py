"""doccheck.extract: the shared word-count and extraction rules."""

from __future__ import annotations

import io

import pytest

from doccheck.extract import (
    SUPPORTED_TYPES,
    ExtractionError,
    UnsupportedFileType,
    content_type_for,
    count_words,
    extract_text,
    words_of,
)


def _docx_bytes(paragraphs: list[str]) -> bytes:
    import docx

    d = docx.Document()
    for p in paragraphs:
        d.add_paragraph(p)
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def _pdf_bytes(text: str) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.multi_cell(0, 8, text)
    return bytes(pdf.output())


@pytest.mark.parametrize(
    ("text", "n"),
    [("", 0), ("one", 1), ("Don't stop -- well-known words.", 4), ("a_b c", 3), ("  \n\t ", 0), ("été 2024 ok", 3)],
)
def test_count_words(text: str, n: int) -> None:
    assert count_words(text) == n


def test_words_of_lowercases() -> None:
    assert words_of("The CAT, the hat.") == ["the", "cat", "the", "hat"]


def test_content_type_for() -> None:
    assert content_type_for("A.PDF") == "application/pdf"
    assert content_type_for("x.md") == "text/markdown"
    assert content_type_for("x.htm") == "text/html"
    assert content_type_for("x.exe") is None
    assert content_type_for("noext") is None
    assert set(SUPPORTED_TYPES) == {".txt", ".md", ".html", ".htm", ".docx", ".pdf", ".doc", ".odt", ".ott", ".rtf",
                                    ".pptx", ".pages"}  # fmt: skip


def test_txt_and_md() -> None:
    assert extract_text("héllo world".encode(), "a.txt") == "héllo world"
    assert extract_text(b"\xef\xbb\xbf# Title\nbody", "a.md") == "# Title\nbody"
    assert extract_text("hi there".encode("utf-16"), "a.txt") == "hi there"


def test_txt_invalid_utf8_is_extraction_error() -> None:
    with pytest.raises(ExtractionError, match="UTF-8"):
        extract_text(b"\xff\xfe\xfd"[1:] + b"\x80abc", "a.txt")


def test_txt_with_nul_is_refused() -> None:
    with pytest.raises(ExtractionError, match="NUL"):
        extract_text(b"abc\x00def", "a.txt")


def test_html_skips_script_and_style() -> None:
    html = b"<html><head><title>T</title><style>p{}</style></head><body><p>Hello &amp; bye</p><script>x=1</script><p>two</p></body></html>"
    text = extract_text(html, "page.html")
    assert "Hello & bye" in text and "two" in text
    assert "x=1" not in text and "p{}" not in text
    assert count_words(text) == 3


def test_docx_roundtrip() -> None:
    data = _docx_bytes(["First paragraph here.", "Second one."])
    text = extract_text(data, "essay.docx")
    assert "First paragraph here." in text and "Second one." in text
    assert count_words(text) == 5


def test_pdf_roundtrip() -> None:
    text = extract_text(_pdf_bytes("The quick brown fox jumps over the lazy dog."), "r.pdf")
    assert count_words(text) == 9


@pytest.mark.parametrize("name", ["bad.docx", "bad.pdf"])
def test_corrupt_binary_documents(name: str) -> None:
    with pytest.raises(ExtractionError) as info:
        extract_text(b"this is not a real document", name)
    assert not isinstance(info.value, UnsupportedFileType)


@pytest.mark.parametrize("name", ["x.exe", "x", "x.ppt", ""])
def test_unsupported(name: str) -> None:
    with pytest.raises(UnsupportedFileType, match="unsupported format"):
        extract_text(b"abc", name)


def test_html_table_cells_are_separate_words() -> None:
    html = (
        b"<table><tr><td>alpha</td><td>beta</td></tr><tr><th>gamma</th></tr></table><ul><li>one</li><li>two</li></ul>"
    )
    assert extract_text(html, "t.html").split() == ["alpha", "beta", "gamma", "one", "two"]
