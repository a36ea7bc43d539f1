"""Crafted documents for the extraction tests: hostile ones (bombs) and exact-text ones.

Generated at test time (never committed) from raw OOXML and PDF syntax, so each file is
exactly the attack it names: a small DOCX whose document.xml inflates to hundreds of MB,
a small PDF whose pages all share one multi-MB content stream, tables nested past any
sensible depth. The exact-text builders make DOCX parts python-docx cannot write
(footnotes, text boxes with their VML fallback, tracked deletions, comments).
"""

from __future__ import annotations

import io
import zipfile
import zlib

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
MC = "http://schemas.openxmlformats.org/markup-compatibility/2006"
WPS = "http://schemas.microsoft.com/office/word/2010/wordprocessingShape"
V = "urn:schemas-microsoft-com:vml"
_REL_T = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"

CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/word/document.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
    "</Types>"
)
ROOT_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    f'<Relationship Id="rId1" Type="{_REL_T}/officeDocument" Target="word/document.xml"/>'
    "</Relationships>"
)
DOC_OPEN = f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="{W}" xmlns:r="{R}" xmlns:mc="{MC}" xmlns:wps="{WPS}" xmlns:v="{V}"><w:body>'
DOC_CLOSE = "</w:body></w:document>"


def para(text: str) -> str:
    return f'<w:p><w:r><w:t xml:space="preserve">{text}</w:t></w:r></w:p>'


def docx_package(body_xml: str, parts: dict[str, tuple[str, str]] | None = None, *,
                 dangling: tuple[str, ...] = ()) -> bytes:  # fmt: skip
    """A .docx from a body and extra parts ``{"word/footnotes.xml": (rel type suffix, xml)}``.

    ``dangling`` adds relationships to parts that are not in the zip (Word opens such files;
    python-docx raised KeyError on them).
    """
    parts = parts or {}
    rels = ['<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">']  # fmt: skip
    for i, (name, (rel_type, _)) in enumerate(sorted(parts.items()), start=10):
        rels.append(f'<Relationship Id="rId{i}" Type="{_REL_T}/{rel_type}" Target="{name.removeprefix("word/")}"/>')
    for i, target in enumerate(dangling, start=100):
        rels.append(f'<Relationship Id="rId{i}" Type="{_REL_T}/image" Target="{target}"/>')
    rels.append("</Relationships>")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", CONTENT_TYPES)
        z.writestr("_rels/.rels", ROOT_RELS)
        z.writestr("word/_rels/document.xml.rels", "".join(rels))
        z.writestr("word/document.xml", DOC_OPEN + body_xml + DOC_CLOSE)
        for name, (_, xml) in parts.items():
            z.writestr(name, xml)
    return buf.getvalue()


def docx_bomb(inflated_bytes: int = 200 * 1024 * 1024, *, one_text_node: bool = False) -> bytes:
    """A DOCX of a few hundred KB whose document.xml inflates to ``inflated_bytes``.

    Paragraphs of "lorem " (many small elements), or with ``one_text_node`` a single
    ``w:t`` holding it all (a parser must then hold it in memory at once).
    """
    chunk = ("lorem " * 10_000) if one_text_node else (para("lorem ipsum dolor sit amet") * 500)
    data = chunk.encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr("[Content_Types].xml", CONTENT_TYPES)
        z.writestr("_rels/.rels", ROOT_RELS)
        with z.open("word/document.xml", "w", force_zip64=True) as part:
            part.write(DOC_OPEN.encode())
            if one_text_node:
                part.write(b"<w:p><w:r><w:t>")
            written = 0
            while written < inflated_bytes:
                part.write(data)
                written += len(data)
            if one_text_node:
                part.write(b"</w:t></w:r></w:p>")
            part.write(DOC_CLOSE.encode())
    return buf.getvalue()


def nested_tables(depth: int, text: str = "deep") -> str:
    """Body XML: ``depth`` tables each inside the single cell of the one above, text at the bottom."""
    xml = para(text)
    for _ in range(depth):
        xml = f"<w:tbl><w:tr><w:tc>{xml}</w:tc></w:tr></w:tbl><w:p/>"
    return xml


def pdf_shared_stream(pages: int = 40, stream_bytes: int = 8 * 1024 * 1024, *, via_form: bool = False) -> bytes:
    """A small PDF whose ``pages`` pages all draw one Flate content stream of ``stream_bytes``.

    With ``via_form`` the big stream is a form XObject that each page's tiny content invokes.
    """
    line = b"BT /F1 12 Tf 72 712 Td (lorem ipsum dolor) Tj ET\n"
    content = line * (stream_bytes // len(line))
    packed = zlib.compress(content, 9)
    kids = " ".join(f"{6 + i} 0 R" for i in range(pages))
    form = b"/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< "
        + (form if via_form else b"")
        + b"/Length %d /Filter /FlateDecode >>\nstream\n" % len(packed)
        + packed
        + b"\nendstream",
        b"<< /Length 8 >>\nstream\n/X1 Do\n\nendstream",
    ]
    contents = b"5 0 R" if via_form else b"4 0 R"
    for _ in range(pages):
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> "
                       b"/XObject << /X1 4 0 R >> >> /Contents " + contents + b" >>")  # fmt: skip
    return _pdf_file(objects, header=b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")


def pdf_slow_page(draws: int = 2000, form_bytes: int = 1024 * 1024) -> bytes:
    """A few KB whose one page draws a 1 MB form ``draws`` times: slow to read with little memory.

    The form holds only unpainted paths (``m l h n``: parsed, never kept), so PDFium spends ~14 ms
    of CPU per draw without growing; 2,000 draws run past the 20 s limits. No size limit sees
    it (one page, one 1 MB stream): only the worker's time limits stop it.
    """
    form = zlib.compress(b"0 0 m 100 100 l 200 0 l h n\n" * (form_bytes // 28), 9)
    page = zlib.compress(b"q /X1 Do Q\n" * draws, 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [5 0 R] /Count 1 >>",
        b"<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] /Length %d /Filter /FlateDecode >>\nstream\n" % len(form)
        + form
        + b"\nendstream",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(page) + page + b"\nendstream",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /X1 3 0 R >> >> "
        b"/Contents 4 0 R >>",
    ]
    return _pdf_file(objects)


def _pdf_file(objects: list[bytes], header: bytes = b"%PDF-1.4\n") -> bytes:
    """A PDF of ``objects`` (numbered from 1, the first the catalog) with its cross-reference table."""
    out = io.BytesIO()
    out.write(header)
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()
