"""Apple Pages documents, through the PDF preview Pages embeds when it saved one.

A ``.pages`` file is a zip of Apple's private IWA (protobuf) parts; its text is not
documented. Pages '09 and later versions set to "include preview" keep a PDF rendering
(``QuickLook/Preview.pdf``, ``preview.pdf``): that PDF is read like any other, under the same
limits. Without it the file is said to be unsupported, with what to do (export as PDF or Word).
"""

from __future__ import annotations

from doccheck.errors import ExtractionError, UnsupportedFileType
from doccheck.extract._package import check_declared, open_package
from doccheck.extract._read_limits import ExtractionLimits

_PREVIEWS = ("QuickLook/Preview.pdf", "preview.pdf", "Preview.pdf")
NO_PREVIEW = "unsupported format: a .pages file without an embedded PDF preview (export it from Pages as PDF or Word)"


def pages_to_text(data: bytes, limits: ExtractionLimits) -> str:
    """The text of the embedded preview PDF, or :class:`UnsupportedFileType` when there is none."""
    with open_package(data, limits, ".pages") as archive:
        names = set(archive.namelist())
        preview = next((name for name in _PREVIEWS if name in names), None)
        if preview is None:
            raise UnsupportedFileType(NO_PREVIEW)
        info = archive.getinfo(preview)
        check_declared(info, limits)
        try:
            with archive.open(info) as handle:
                pdf = handle.read(limits.max_part_bytes + 1)
        except Exception as exc:  # noqa: BLE001 - zlib.error, BadZipFile...: this row's problem only
            raise ExtractionError(f"not a readable .pages file ({preview}: {type(exc).__name__})") from None
    if len(pdf) > limits.max_part_bytes:
        check_declared(info, limits)  # the declared size lied: refuse by the same rule
        raise ExtractionError(f"not a readable .pages file ({preview} is larger than it declares)")
    from doccheck.extract._pdf import pdf_to_text

    return pdf_to_text(pdf, limits)
