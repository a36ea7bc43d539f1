"""What a file is, by its bytes rather than its name.

Why: students rename files ("essay.docx" that Word saved as RTF, a ``.doc`` that is really a
``.docx``, a phone photo named ``essay.pdf``), and a reader chosen by the extension then fails
with a parser's message or, worse, reads nothing. Every document is read as what its bytes
say it is, and the name is only a hint for the formats that have no signature (plain text,
Markdown, HTML).

Two stages, both bounded:

* :func:`magic` looks at the first bytes only (no parsing), so the caller can decide cheaply
  whether a file is plain text it may decode in its own process or something for the worker;
* :func:`sniff` (in the worker) looks inside containers: a ZIP's member names (from the central
  directory, after the member count is checked against the limit) tell DOCX, PPTX, ODF and
  Pages apart; an OLE2 file's directory tells ``.doc``, ``.ppt`` and a password-protected
  Office file (an ``EncryptedPackage`` stream) apart.
"""

from __future__ import annotations

import zipfile
from io import BytesIO

from doccheck.errors import ExtractionError, ExtractionLimitExceeded
from doccheck.extract._read_limits import ExtractionLimits

__all__ = ["IMAGE_TYPES", "LOCKED_OFFICE", "magic", "sniff"]

OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
ZIP_MAGIC = b"PK\x03\x04"
#: Pseudo-type of an OLE2 file holding an ``EncryptedPackage``: a password-protected .docx/.pptx/.xlsx.
LOCKED_OFFICE = "locked-office"
#: Pseudo-type of an OLE2 file that is neither a Word nor a PowerPoint document (Excel, MSI, ...).
OTHER_OLE = "ole"
#: Pseudo-type of a ZIP that is no document we know (an .xlsx, a zip of files, an .epub...).
OTHER_ZIP = "zip"

#: Image extensions: recognised (and said plainly: no machine-readable text), never read.
IMAGE_TYPES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".tif", ".tiff", ".heic", ".heif", ".webp", ".bmp"})

_IMAGE_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", ".png"),
    (b"\xff\xd8\xff", ".jpg"),
    (b"GIF87a", ".gif"),
    (b"GIF89a", ".gif"),
    (b"II*\x00", ".tiff"),
    (b"MM\x00*", ".tiff"),
    (b"BM", ".bmp"),
)
_HEIC_BRANDS = (b"heic", b"heix", b"hevc", b"hevx", b"heim", b"heis", b"mif1", b"msf1", b"avif")


def magic(data: bytes) -> str | None:
    """The type the first bytes name (``".pdf"``, ``".rtf"``, ``".png"``, ``"zip"``, ``"ole"``...), or None.

    None means no signature: plain text, Markdown, HTML, or bytes of no known kind, judged by
    the name. ``"zip"`` and ``"ole"`` are containers that :func:`sniff` tells apart.
    """
    head = data[:1024]
    if head.lstrip(b"\x00\t\n\r ")[:5].startswith(b"%PDF") or (b"%PDF-" in head and head.startswith(b"\x1b%-12345X")):
        return ".pdf"
    if data.startswith(OLE_MAGIC):
        return OTHER_OLE
    if data.startswith((ZIP_MAGIC, b"PK\x05\x06")) or (
        data[:2] == b"PK" and data.rfind(b"PK\x05\x06", max(0, len(data) - 65_557)) >= 0
    ):
        return OTHER_ZIP
    if data.lstrip(b"\xef\xbb\xbf\t\n\r ")[:5] == b"{\\rtf":
        return ".rtf"
    for prefix, ext in _IMAGE_MAGIC:
        if data.startswith(prefix):
            return ext
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return ".webp"
    if data[4:8] == b"ftyp" and data[8:12] in _HEIC_BRANDS:
        return ".heic"
    return None


def sniff(data: bytes, limits: ExtractionLimits) -> str | None:
    """The document type of ``data`` (an extension, or a pseudo-type of this module), None when unsigned."""
    kind = magic(data)
    if kind == OTHER_ZIP:
        return _zip_kind(data, limits)
    if kind == OTHER_OLE:
        return _ole_kind(data)
    return kind


def declared_zip_members(data: bytes) -> int:
    """Entry count from the end-of-central-directory record (zip64 too), 0 when not found.

    Read before ``zipfile`` builds a ZipInfo for every entry: 50 MB of central directory is
    a million entries, which would cost seconds and hundreds of MB before any check.
    """
    at = data.rfind(b"PK\x05\x06", max(0, len(data) - 65_557))
    if at < 0 or at + 22 > len(data):
        return 0
    count = int.from_bytes(data[at + 10 : at + 12], "little")
    if count == 0xFFFF:
        at64 = data.rfind(b"PK\x06\x06", max(0, at - 65_536), at)
        if at64 >= 0 and at64 + 40 <= len(data):
            count = int.from_bytes(data[at64 + 32 : at64 + 40], "little")
    return count


def _zip_kind(data: bytes, limits: ExtractionLimits) -> str:
    declared = declared_zip_members(data)
    if declared > limits.max_zip_members:
        raise ExtractionLimitExceeded(f"the zip lists {declared} parts, over the limit of {limits.max_zip_members}")
    try:
        with zipfile.ZipFile(BytesIO(data)) as archive:
            names = archive.namelist()
            if len(names) > limits.max_zip_members:
                raise ExtractionLimitExceeded(
                    f"the zip lists {len(names)} parts, over the limit of {limits.max_zip_members}"
                )
            mimetype = _odf_mimetype(archive, names)
    except ExtractionError:
        raise
    except MemoryError:
        raise
    except Exception:  # noqa: BLE001 - BadZipFile, NotImplementedError (a zip version, a method), RuntimeError...
        raise ExtractionError("not a readable document (damaged: not a zip archive)") from None
    members = set(names)
    if "[Content_Types].xml" in members:
        if any(n.startswith("word/") for n in names):
            return ".docx"
        if any(n.startswith("ppt/") for n in names):
            return ".pptx"
        return OTHER_ZIP
    if mimetype is not None:
        if mimetype.startswith("application/vnd.oasis.opendocument.text"):
            return ".odt"
        return OTHER_ZIP
    if any(n.startswith("Index/") and n.endswith(".iwa") for n in names) or "index.xml" in members:
        return ".pages"
    return OTHER_ZIP


def _odf_mimetype(archive: zipfile.ZipFile, names: list[str]) -> str | None:
    """The ODF ``mimetype`` member (stored first, uncompressed, a few dozen bytes), or None."""
    if "mimetype" not in names:
        return None
    info = archive.getinfo("mimetype")
    if info.file_size > 200:
        return None
    with archive.open(info) as handle:
        return handle.read(201).decode("ascii", "replace").strip()


def _ole_kind(data: bytes) -> str:
    """``.doc``, ``.ppt``, :data:`LOCKED_OFFICE` or :data:`OTHER_OLE`, from the OLE directory's names."""
    from doccheck.extract._ole import stream_names

    names = {name.lower() for name in stream_names(data)}
    if "encryptedpackage" in names:
        return LOCKED_OFFICE
    if "worddocument" in names:
        return ".doc"
    if "powerpoint document" in names:
        return ".ppt"
    return OTHER_OLE
