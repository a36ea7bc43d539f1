"""Small generators of every format doccheck reads (issue 41), exact-text and hostile variants.

Written from the formats' specifications (ODF 1.2, ECMA-376 PresentationML, RTF 1.9,
[MS-CFB] and [MS-DOC]) so the tests know the text each file holds, and so each hostile file
is exactly the attack it names (a zip-bomb ODT, RTF groups nested 100,000 deep, an OLE file
whose sector chain loops, a PPTX listing 10,000 slides). Nothing here is committed as a binary.
"""

from __future__ import annotations

import io
import struct
import zipfile
from xml.sax.saxutils import escape

# --- ODT ---------------------------------------------------------------------------------

_ODT_OPEN = (
    '<?xml version="1.0" encoding="UTF-8"?><office:document-content '
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:dc="http://purl.org/dc/elements/1.1/" office:version="1.2"><office:body><office:text>'
)
_ODT_CLOSE = "</office:text></office:body></office:document-content>"


def odt(body_xml: str, *, mimetype: str = "application/vnd.oasis.opendocument.text") -> bytes:
    """An .odt whose ``office:text`` holds ``body_xml`` (the ``mimetype`` member first, stored)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(zipfile.ZipInfo("mimetype"), mimetype, compress_type=zipfile.ZIP_STORED)
        z.writestr("content.xml", _ODT_OPEN + body_xml + _ODT_CLOSE)
        z.writestr(
            "META-INF/manifest.xml",
            '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"/>',
        )
    return buf.getvalue()


def odt_paragraphs(paragraphs: list[str]) -> bytes:
    return odt("".join(f"<text:p>{escape(p)}</text:p>" for p in paragraphs))


def odt_bomb(inflated_bytes: int = 200 * 1024 * 1024) -> bytes:
    """An .odt of a few hundred KB whose content.xml inflates to ``inflated_bytes``."""
    data = ("<text:p>lorem ipsum dolor sit amet</text:p>" * 2000).encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.text")
        with z.open("content.xml", "w", force_zip64=True) as part:
            part.write(_ODT_OPEN.encode())
            written = 0
            while written < inflated_bytes:
                part.write(data)
                written += len(data)
            part.write(_ODT_CLOSE.encode())
    return buf.getvalue()


# --- PPTX --------------------------------------------------------------------------------

_P = "http://schemas.openxmlformats.org/presentationml/2006/main"
_A = "http://schemas.openxmlformats.org/drawingml/2006/main"
_R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
_PPTX_TYPES = (
    '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="xml" ContentType="application/xml"/></Types>'
)


def _slide(paragraphs: list[str]) -> str:
    body = "".join(f"<a:p><a:r><a:t>{escape(p)}</a:t></a:r></a:p>" for p in paragraphs)
    return (f'<p:sld xmlns:p="{_P}" xmlns:a="{_A}"><p:cSld><p:spTree><p:sp><p:txBody>{body}</p:txBody></p:sp>'
            "</p:spTree></p:cSld></p:sld>")  # fmt: skip


def pptx(slides: list[list[str]], *, order: list[int] | None = None, listed: int | None = None) -> bytes:
    """A .pptx whose slide *i* holds ``slides[i]``; ``order`` is the presentation order of the slide
    files (default: as given); ``listed`` lists that many slide ids (the 10,000-slide attack) although
    only ``slides`` exist as parts."""
    order = order if order is not None else list(range(len(slides)))
    count = listed if listed is not None else len(order)
    ids = "".join(
        f'<p:sldId id="{256 + i}" r:id="rId{100 + (order[i] if i < len(order) else i)}"/>' for i in range(count)
    )
    presentation = f'<p:presentation xmlns:p="{_P}" xmlns:r="{_R}"><p:sldIdLst>{ids}</p:sldIdLst></p:presentation>'
    rels = "".join(
        f'<Relationship Id="rId{100 + i}" Type="{_R}/slide" Target="slides/slide{i + 1}.xml"/>'
        for i in range(len(slides))
    )
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", _PPTX_TYPES)
        z.writestr("ppt/presentation.xml", presentation)
        z.writestr("ppt/_rels/presentation.xml.rels", f'<Relationships xmlns="{_PKG_REL}">{rels}</Relationships>')
        for i, paragraphs in enumerate(slides):
            z.writestr(f"ppt/slides/slide{i + 1}.xml", _slide(paragraphs))
    return buf.getvalue()


# --- RTF ---------------------------------------------------------------------------------


def rtf(body: str) -> bytes:
    """An RTF document with a font and colour table (not text) around ``body`` (raw RTF)."""
    return ("{\\rtf1\\ansi\\ansicpg1252\\deff0{\\fonttbl{\\f0\\fswiss Helvetica;}}{\\colortbl;\\red255\\green0\\blue0;}"
            "{\\*\\generator Test 1.0;}{\\info{\\title Not Body Text}}\\f0\\fs24 " + body + "}").encode("latin-1")  # fmt: skip


def rtf_nested(depth: int) -> bytes:
    return b"{\\rtf1\\ansi " + b"{" * depth + b"deep" + b"}" * depth + b"}"


# --- OLE2 (MS-CFB) and Word 97 (MS-DOC) ---------------------------------------------------

_SECTOR = 512
_FREE, _END, _FATSECT = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD
_NOSTREAM = 0xFFFFFFFF


def ole(streams: dict[str, bytes], *, loop_stream: str | None = None) -> bytes:
    """A version-3 compound file holding ``streams`` at its root (each padded to 4 KiB so that all
    live in the FAT, none in the mini stream). ``loop_stream``: that stream's last sector points
    back to its first (a FAT loop)."""
    names = sorted(streams, key=lambda n: (len(n), n.upper()))
    padded = {
        n: streams[n] + b"\x00" * (max(4096, -(-len(streams[n]) // _SECTOR) * _SECTOR) - len(streams[n])) for n in names
    }
    data_sectors = sum(len(b) // _SECTOR for b in padded.values())
    dir_sectors = -(-(len(names) + 1) // 4)
    fat_sectors = 1
    while fat_sectors * 128 < fat_sectors + dir_sectors + data_sectors:
        fat_sectors += 1
    fat = [_FATSECT] * fat_sectors
    first_dir = len(fat)
    fat += [first_dir + i + 1 for i in range(dir_sectors - 1)] + [_END]
    starts: dict[str, int] = {}
    for n in names:
        count = len(padded[n]) // _SECTOR
        starts[n] = len(fat)
        fat += [starts[n] + i + 1 for i in range(count - 1)] + [_END]
        if n == loop_stream:
            fat[-1] = starts[n]
    fat += [_FREE] * (fat_sectors * 128 - len(fat))
    entries = [_dir_entry("Root Entry", 5, child=1 if names else _NOSTREAM, start=_END, size=0)]
    for i, n in enumerate(names):
        right = i + 2 if i + 1 < len(names) else _NOSTREAM
        entries.append(_dir_entry(n, 2, right=right, start=starts[n], size=len(padded[n])))
    entries += [_empty_entry()] * (dir_sectors * 4 - len(entries))
    difat = list(range(fat_sectors)) + [_FREE] * (109 - fat_sectors)
    header = (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 16 + struct.pack("<HHHHH", 0x3E, 3, 0xFFFE, 9, 6)
              + b"\x00" * 6 + struct.pack("<IIIIIIIII", 0, fat_sectors, first_dir, 0, 4096, _END, 0, _END, 0)
              + struct.pack("<109I", *difat))  # fmt: skip
    body = struct.pack(f"<{len(fat)}I", *fat) + b"".join(entries) + b"".join(padded[n] for n in names)
    return header + body


def _dir_entry(name: str, kind: int, *, child: int = _NOSTREAM, right: int = _NOSTREAM, start: int, size: int) -> bytes:
    encoded = (name + "\x00").encode("utf-16-le")
    return (encoded.ljust(64, b"\x00") + struct.pack("<HBB", len(encoded), kind, 1)
            + struct.pack("<III", _NOSTREAM, right, child) + b"\x00" * 16 + struct.pack("<I", 0) + b"\x00" * 16
            + struct.pack("<IQ", start, size))  # fmt: skip


def _empty_entry() -> bytes:
    return (
        b"\x00" * 64
        + struct.pack("<HBB", 0, 0, 0)
        + struct.pack("<III", _NOSTREAM, _NOSTREAM, _NOSTREAM)
        + b"\x00" * 48
    )


def word97(main: str, *, footnotes: str = "", comments: str = "", encrypted: bool = False,
           unicode_from: int | None = None, loop: bool = False) -> bytes:  # fmt: skip
    """A Word 97 .doc: ``main`` (+ footnote and annotation stories) through a piece table in ``1Table``.

    The text is stored as an 8-bit (cp1252) piece, and from character ``unicode_from`` on as a
    UTF-16 piece, so both piece kinds are read. Paragraph marks are ``\\r`` as Word writes them."""
    stories = [main, footnotes, "", "", comments]
    text = "".join(stories)
    split = len(text) if unicode_from is None else unicode_from
    fib = bytearray(1024)
    struct.pack_into("<HH", fib, 0, 0xA5EC, 0xC1)
    struct.pack_into("<H", fib, 0x0A, 0x0200 | (0x0100 if encrypted else 0))
    struct.pack_into("<H", fib, 32, 14)
    struct.pack_into("<H", fib, 62, 22)
    for i, story in enumerate(stories):
        struct.pack_into("<I", fib, 76 + 4 * i, len(story))
    struct.pack_into("<H", fib, 152, 93)
    narrow = text[:split].encode("cp1252")
    wide_at = 1024 + len(narrow) + (len(narrow) % 2)
    wide = text[split:].encode("utf-16-le")
    word = bytes(fib) + narrow + b"\x00" * (wide_at - 1024 - len(narrow)) + wide
    cps = [0, split, len(text)] if split < len(text) else [0, len(text)]
    fcs = [(1024 * 2) | 0x40000000, wide_at][: len(cps) - 1]
    plc = struct.pack(f"<{len(cps)}I", *cps) + b"".join(struct.pack("<HIH", 0, fc, 0) for fc in fcs)
    clx = b"\x02" + struct.pack("<I", len(plc)) + plc
    struct.pack_into("<II", fib, 154 + 33 * 8, 0, len(clx))
    word = bytes(fib) + word[1024:]
    return ole({"WordDocument": word, "1Table": clx}, loop_stream="WordDocument" if loop else None)


def locked_office() -> bytes:
    """What Office writes for a password-protected .docx: an OLE file with an EncryptedPackage."""
    return ole({"EncryptionInfo": b"\x04\x00\x04\x00" + b"\x00" * 200, "EncryptedPackage": b"\x00" * 5000})


# --- Pages, images, PDFs --------------------------------------------------------------------


def pages(preview_pdf: bytes | None) -> bytes:
    """An iWork .pages zip (``Index/Document.iwa``), with ``QuickLook/Preview.pdf`` when given."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("Index/Document.iwa", b"\x00\x01\x02 protobuf, not read")
        z.writestr("Metadata/Properties.plist", "<plist/>")
        if preview_pdf is not None:
            z.writestr("QuickLook/Preview.pdf", preview_pdf)
    return buf.getvalue()


def png(width: int = 4, height: int = 4) -> bytes:
    """A valid grey PNG (a 'photo': no text at all)."""
    import zlib

    raw = b"".join(b"\x00" + b"\x80" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))  # fmt: skip


def pdf_text(paragraphs: list[str], *, user_password: str | None = None) -> bytes:
    """A text PDF (fpdf2), locked with ``user_password`` when given."""
    from fpdf import FPDF

    doc = FPDF()
    doc.add_page()
    doc.set_font("helvetica", size=11)
    for paragraph in paragraphs:
        doc.multi_cell(0, 6, paragraph)
        doc.ln(3)
    if user_password is not None:
        doc.set_encryption(owner_password="owner-" + user_password, user_password=user_password)
    return bytes(doc.output())


def pdf_image_only() -> bytes:
    """A one-page PDF whose page is a picture (a scan): no text layer."""
    from fpdf import FPDF

    doc = FPDF()
    doc.add_page()
    doc.image(io.BytesIO(png(40, 40)), x=10, y=10, w=100)
    return bytes(doc.output())
