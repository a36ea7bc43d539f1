"""Every format a student hands in (issue 41): read by its bytes, its known text and word count,
the unreadable said with its reason, the hostile variants refused within the limits.

Files come from ``tests/generated_documents.py`` (written from the formats' specifications, so
the text each holds is known). Extraction runs through the real worker pool.
"""

from __future__ import annotations

import time

import pytest

from doccheck.extract import (
    ExtractionError,
    ExtractionLimitExceeded,
    ExtractionLimits,
    ImageOnlyPdf,
    ImageWithoutText,
    PasswordProtected,
    UnsupportedFileType,
    count_words,
    extract,
)
from doccheck.extract._parse import parse
from doccheck.extract._sniff import magic
from tests import generated_documents as gen

ESSAY = [
    "The industrial revolution changed how people worked and lived.",
    "Factories drew workers from the countryside into crowded towns, a well-known shift.",
]
ESSAY_WORDS = sum(count_words(p) for p in ESSAY)  # 9 + 13


@pytest.mark.parametrize(
    ("name", "data", "read_as"),
    [
        ("essay.odt", gen.odt_paragraphs(ESSAY), ".odt"),
        ("essay.ott", gen.odt_paragraphs(ESSAY), ".odt"),
        ("essay.pptx", gen.pptx([[ESSAY[0]], [ESSAY[1]]]), ".pptx"),
        ("essay.rtf", gen.rtf(f"{ESSAY[0]}\\par {{\\i {ESSAY[1]}}}\\par"), ".rtf"),
        ("essay.doc", gen.word97("\r".join(ESSAY) + "\r"), ".doc"),
        ("essay.pages", gen.pages(gen.pdf_text(ESSAY)), ".pages"),
        ("essay.pdf", gen.pdf_text(ESSAY), ".pdf"),
    ],
)
def test_each_format_reads_its_known_text(name: str, data: bytes, read_as: str) -> None:
    found = extract(data, name)
    assert count_words(found.text) == ESSAY_WORDS
    assert "industrial revolution" in found.text and "well-known shift" in found.text
    assert found.read_as == read_as and not found.misnamed


def test_odt_reads_spans_spaces_tables_and_notes_but_not_comments() -> None:
    body = (
        '<text:h>Title</text:h><text:p>one<text:s text:c="3"/>two<text:tab/>three<text:line-break/>four '
        "<text:span>five</text:span>six<text:note><text:note-citation>1</text:note-citation>"
        "<text:note-body><text:p>noted</text:p></text:note-body></text:note>"
        "<office:annotation><text:p>teacher comment</text:p></office:annotation></text:p>"
        "<table:table><table:table-row><table:table-cell><text:p>a</text:p></table:table-cell>"
        "<table:table-cell><text:p>b</text:p></table:table-cell></table:table-row></table:table>"
        "<text:tracked-changes><text:changed-region><text:deletion><text:p>deleted</text:p></text:deletion>"
        "</text:changed-region></text:tracked-changes>"
    )
    text = extract(gen.odt(body), "x.odt").text
    assert text.split() == ["Title", "one", "two", "three", "four", "fivesix", "noted", "a", "b"]


def test_pptx_slides_in_presentation_order_not_file_order() -> None:
    data = gen.pptx([["first file"], ["second file"], ["third file"]], order=[2, 0, 1])
    assert extract(data, "deck.pptx").text.split() == ["third", "file", "first", "file", "second", "file"]


def test_rtf_code_pages_unicode_fields_and_skipped_destinations() -> None:
    body = ("caf\\'e9 \\u8364? \\uc2\\u8212xx end\\par {\\field{\\*\\fldinst PAGE}{\\fldrslt 7}}\\par "
            "{\\pict 0123abcd}{\\*\\annotation teacher}\\line tab\\tab stop")  # fmt: skip
    assert extract(gen.rtf(body), "r.rtf").text.split() == ["café", "€", "—", "end", "7", "tab", "stop"]


def test_doc_pieces_fields_footnotes_and_no_comments() -> None:
    data = gen.word97("Plain start, then Ελληνικά.\rPage \x13 PAGE \x143\x15 of.\r", footnotes="A footnote.\r",
                      comments="teacher comment\r", unicode_from=10)  # fmt: skip
    assert extract(data, "w.doc").text.split() == ["Plain", "start,", "then", "Ελληνικά.", "Page", "3", "of.", "A",
                                                   "footnote."]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "data", "read_as"),
    [
        ("essay.docx", gen.rtf("saved as RTF by TextEdit"), ".rtf"),
        ("essay.doc", gen.pptx([["really slides"]]), ".pptx"),
        ("essay.pdf", gen.odt_paragraphs(["an odt named pdf"]), ".odt"),
        ("essay.txt", gen.pdf_text(["a pdf named txt"]), ".pdf"),
    ],
)
def test_a_misnamed_file_is_read_as_what_it_is(name: str, data: bytes, read_as: str) -> None:
    found = extract(data, name)
    assert found.read_as == read_as and found.misnamed
    assert count_words(found.text) >= 2


@pytest.mark.parametrize(
    ("name", "data", "error", "words"),
    [
        ("photo.jpg", gen.png(), ImageWithoutText, "a photo or scan, e.g. handwriting"),
        ("essay.pdf", gen.png(), ImageWithoutText, "ask for a typed copy or review it by hand"),
        ("IMG_0001.HEIC", b"\x00\x00\x00\x18ftypheic" + bytes(64), ImageWithoutText, "image without machine-readable"),
        ("scan.pdf", gen.pdf_image_only(), ImageOnlyPdf, "image-only PDF"),
        ("locked.pdf", gen.pdf_text(ESSAY, user_password="secret"), PasswordProtected, "password-protected PDF"),
        ("locked.docx", gen.locked_office(), PasswordProtected, "password-protected Office document"),
        ("locked.doc", gen.word97("x\r", encrypted=True), PasswordProtected, "password-protected Word document"),
        ("old.ppt", gen.ole({"PowerPoint Document": b"x"}), UnsupportedFileType, "unsupported format: a PowerPoint"),
        ("book.xlsx", gen.pptx([]).replace(b"ppt/", b"xl//"), UnsupportedFileType, "unsupported format: a zip"),
        ("noview.pages", gen.pages(None), UnsupportedFileType, "without an embedded PDF preview"),
        ("tool.exe", b"MZ\x90\x00", UnsupportedFileType, "unsupported format: file type '.exe'"),
    ],
)
def test_the_unreadable_gives_its_reason(name: str, data: bytes, error: type[ExtractionError], words: str) -> None:
    with pytest.raises(error, match=words) as info:
        extract(data, name)
    assert type(info.value) is error


def test_a_pdf_with_only_an_owner_password_is_read() -> None:
    assert count_words(extract(gen.pdf_text(ESSAY, user_password=""), "open.pdf").text) == ESSAY_WORDS


def test_sniffing_reads_only_the_first_bytes() -> None:
    assert magic(b"%PDF-1.7\n") == ".pdf"
    assert magic(b"\xef\xbb\xbf{\\rtf1 x}") == ".rtf"
    assert magic(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == ".webp"
    assert magic(b"Just text") is None


# --- hostile variants: refused within the limits, fast ---------------------------------------


def _refused(data: bytes, name: str, limits: ExtractionLimits | None = None) -> tuple[str, float]:
    started = time.monotonic()
    with pytest.raises(ExtractionLimitExceeded) as info:
        extract(data, name, limits=limits or ExtractionLimits())
    return str(info.value), time.monotonic() - started


def test_zip_bomb_odt_is_refused() -> None:
    message, elapsed = _refused(gen.odt_bomb(64 * 1024 * 1024), "bomb.odt")
    assert "content.xml" in message and ("compressed over 200:1" in message or "inflates past" in message)
    assert elapsed < 5


def test_zip_bomb_odt_that_lies_about_its_size_stops_while_streaming() -> None:
    limits = ExtractionLimits(max_compression_ratio=10**9, max_part_bytes=8 * 1024 * 1024)
    message, elapsed = _refused(gen.odt_bomb(16 * 1024 * 1024), "bomb.odt", limits)
    assert message == "content.xml inflates past 8 MiB"
    assert elapsed < 5


def test_deeply_nested_rtf_groups_are_refused() -> None:
    message, elapsed = _refused(gen.rtf_nested(100_000), "deep.rtf")
    assert message == "the RTF file nests groups over 256 levels deep"
    assert elapsed < 2


def test_ole_with_a_fat_loop_is_refused() -> None:
    message, _ = _refused(gen.word97("looping text\r", loop=True), "loop.doc")
    assert "sector chain loops" in message


def test_pptx_listing_ten_thousand_slides_is_refused_before_reading_one() -> None:
    message, elapsed = _refused(gen.pptx([["one"]], listed=10_000), "huge.pptx")
    assert message == "the .pptx has 10000 slides, over the limit of 1000"
    assert elapsed < 2


def test_deep_odt_is_refused() -> None:
    body = "<text:p><text:span>" * 300 + "deep" + "</text:span>" * 300 + "</text:p>"
    message, _ = _refused(gen.odt(body), "deep.odt")
    assert message == "content.xml is nested over 256 levels deep"


def test_rtf_bin_payload_is_skipped_not_read() -> None:
    data = gen.rtf("before {\\bin12 {{{{{{{{{{{{} after")
    assert parse(data, "b.rtf", ExtractionLimits())[0].split() == ["before", "after"]
