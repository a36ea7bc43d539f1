"""What text a .docx has (docs/extraction.md): every story once, merged cells once, no revisions or comments."""

from __future__ import annotations

import io
import zipfile

import docx
import pytest

from doccheck.extract import ExtractionError, count_words, extract_text
from tests.hostile_documents import MC, W, docx_package, nested_tables, para


def _save(document: docx.document.Document) -> bytes:
    buf = io.BytesIO()
    document.save(buf)
    return buf.getvalue()


def _words(data: bytes) -> int:
    return count_words(extract_text(data, "t.docx"))


def test_merged_cells_count_once() -> None:
    """The bug of issue 13: python-docx's row.cells repeats a merged cell per spanned grid column."""
    d = docx.Document()
    table = d.add_table(rows=3, cols=4)
    table.cell(0, 0).merge(table.cell(0, 3)).text = "one two three"  # across 4 columns
    table.cell(1, 0).merge(table.cell(2, 0)).text = "four five"  # down 2 rows
    table.cell(1, 1).text = "six"
    data = _save(d)
    legacy = sum(count_words(c.text) for row in docx.Document(io.BytesIO(data)).tables[0].rows for c in row.cells)
    assert legacy > 6  # what the old extractor counted
    assert _words(data) == 6


def test_text_only_in_tables_is_not_empty() -> None:
    d = docx.Document()
    d.add_table(rows=1, cols=2).rows[0].cells[1].text = "only in a table"
    assert _words(_save(d)) == 4


def test_nested_tables_in_place_once() -> None:
    body = nested_tables(3, "bottom words") + para("after")
    text = extract_text(docx_package(body), "n.docx")
    assert count_words(text) == 3
    assert text.index("bottom") < text.index("after")


def test_headers_and_footers_once_each() -> None:
    d = docx.Document()
    d.add_paragraph("Body text here.")
    d.sections[0].header.paragraphs[0].text = "Header words"
    d.sections[0].footer.paragraphs[0].text = "Footer"
    d.add_section()  # the second section links to the first header: still counted once
    text = extract_text(_save(d), "h.docx")
    assert count_words(text) == 6
    assert text.count("Header words") == 1


def test_footnotes_endnotes_counted_comments_not() -> None:
    notes = (f'<w:footnotes xmlns:w="{W}"><w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p>'
             f'</w:footnote><w:footnote w:id="1">{para("a footnote")}</w:footnote></w:footnotes>')  # fmt: skip
    ends = f'<w:endnotes xmlns:w="{W}"><w:endnote w:id="1">{para("an endnote here")}</w:endnote></w:endnotes>'
    comments = f'<w:comments xmlns:w="{W}"><w:comment w:id="0">{para("reviewer says no")}</w:comment></w:comments>'
    data = docx_package(
        para("Body"),
        {
            "word/footnotes.xml": ("footnotes", notes),
            "word/endnotes.xml": ("endnotes", ends),
            "word/comments.xml": ("comments", comments),
        },  # fmt: skip
    )
    text = extract_text(data, "f.docx")
    assert "a footnote" in text and "an endnote here" in text and "reviewer" not in text
    assert count_words(text) == 1 + 2 + 3


def test_text_box_counted_once_not_its_fallback() -> None:
    box = (f'<w:p><w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:drawing><wps:txbx><w:txbxContent>'
           f'{para("boxed words")}</w:txbxContent></wps:txbx></w:drawing></mc:Choice><mc:Fallback><w:pict>'
           f'<v:textbox><w:txbxContent>{para("boxed words")}</w:txbxContent></v:textbox></w:pict></mc:Fallback>'
           f'</mc:AlternateContent></w:r></w:p>')  # fmt: skip
    assert _words(docx_package(para("Body") + box)) == 3
    glued = box.replace("<w:p><w:r><mc:", "<w:p><w:r><w:t>Before</w:t></w:r><w:r><mc:", 1)
    assert extract_text(docx_package(glued), "g.docx").split() == ["Before", "boxed", "words"]


def test_revisions_and_field_codes() -> None:
    body = ('<w:p><w:r><w:t>kept</w:t></w:r><w:del w:id="1"><w:r><w:delText>deleted words</w:delText></w:r></w:del>'
            '<w:ins w:id="2"><w:r><w:t xml:space="preserve"> inserted</w:t></w:r></w:ins>'
            '<w:moveFrom w:id="3"><w:r><w:t>moved</w:t></w:r></w:moveFrom>'
            '<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText> PAGE </w:instrText></w:r>'
            '<w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t xml:space="preserve"> 7</w:t></w:r>'
            '<w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>')  # fmt: skip
    text = extract_text(docx_package(body), "r.docx")
    assert text.split() == ["kept", "inserted", "7"]


def test_tabs_breaks_and_non_breaking_hyphen() -> None:
    body = (
        "<w:p><w:r><w:t>well</w:t><w:noBreakHyphen/><w:t>known</w:t><w:tab/><w:t>a</w:t><w:br/><w:t>b</w:t></w:r></w:p>"
    )
    assert extract_text(docx_package(body), "t.docx").split() == ["well-known", "a", "b"]


def test_dangling_relationship_is_not_fatal() -> None:
    """The 'not a readable .docx file (KeyError)' class: a relationship to a part the zip lacks."""
    data = docx_package(para("Still readable"), dangling=("media/image1.png", "../NULL"))
    with pytest.raises(KeyError):
        docx.Document(io.BytesIO(data))  # python-docx loads every part and fails
    assert _words(data) == 2


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"PK\x03\x04 truncated", "not a zip"),
        (docx_package(para("x")).replace(b"word/document.xml", b"word/documenX.xml"), "no main document"),
        (docx_package("<w:p><w:r><w:t>unclosed</w:r></w:p>"), "document.xml is not well-formed"),
    ],
)
def test_broken_docx_names_the_reason(data: bytes, reason: str) -> None:
    with pytest.raises(ExtractionError, match=reason):
        extract_text(data, "b.docx")


def test_entities_are_not_expanded() -> None:
    """A DTD with entities (billion laughs) is neither loaded nor expanded."""
    laughs = (f'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "lol lol lol lol lol lol lol lol lol lol">'
              f'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><w:document xmlns:w="{W}" xmlns:mc="{MC}"><w:body>'
              f'<w:p><w:r><w:t>&b;</w:t></w:r></w:p><w:p><w:r><w:t>visible</w:t></w:r></w:p></w:body></w:document>')  # fmt: skip
    data = docx_package("")  # a package whose document.xml is replaced below
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(buf, "w") as dst:
        for item in src.infolist():
            dst.writestr(item, laughs if item.filename == "word/document.xml" else src.read(item))
    assert extract_text(buf.getvalue(), "e.docx") == "visible"  # never the 100 x "lol" expansion
