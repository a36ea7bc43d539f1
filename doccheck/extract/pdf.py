"""The text of a PDF with pypdf, after checking what reading it would cost.

pypdf's text extraction re-interprets a page's content stream for each page that draws it,
so a 31 KB file whose 40 pages share one 8 MB stream costs 40 x 8 MB of interpretation.
Before extracting anything we count pages, cross-reference objects and the content bytes
every page would interpret, its content streams and the form XObjects its resources name (a
shared stream counts once per page, decoded once), and refuse past
:mod:`doccheck.extract.limits`. Whatever is left (forms nested in forms, one form drawn many
times, a slow but small file) is stopped by the worker's time and memory limits.
"""

from __future__ import annotations

import io
import logging
from typing import Any

from doccheck.extract.errors import ExtractionError, ExtractionLimitExceeded
from doccheck.extract.limits import ExtractionLimits, mib


def pdf_to_text(data: bytes, limits: ExtractionLimits) -> str:
    """Page texts joined by newlines, or :class:`ExtractionError` with the reason."""
    if not data.lstrip()[:5].startswith(b"%PDF"):
        raise ExtractionError("not a PDF file (missing %PDF header)")
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise ExtractionError("encrypted PDF files are not supported")
        objects = sum(len(ids) for ids in reader.xref.values()) + len(getattr(reader, "xref_objStm", {}))
        if objects > limits.max_pdf_objects:
            raise ExtractionLimitExceeded(f"the PDF has {objects} objects, over the limit of {limits.max_pdf_objects}")
        pages = len(reader.pages)
        if pages > limits.max_pdf_pages:
            raise ExtractionLimitExceeded(f"the PDF has {pages} pages, over the limit of {limits.max_pdf_pages}")
        _check_content_bytes(reader, limits)
        texts = []
        size = 0
        for page in reader.pages:
            text = page.extract_text() or ""
            size += len(text)
            if size > limits.max_text_chars:
                raise ExtractionLimitExceeded(f"the PDF holds over {limits.max_text_chars} characters of text")
            texts.append(text)
    except ExtractionError:
        raise
    except MemoryError:
        raise  # the worker reports it and retires (its heap may be in any state)
    except (PdfReadError, Exception) as exc:  # noqa: BLE001 - pypdf raises many kinds on broken files
        raise ExtractionError(f"not a readable PDF file ({type(exc).__name__})") from None
    return "\n".join(texts).strip()


def _check_content_bytes(reader: Any, limits: ExtractionLimits) -> None:
    """Sum the decoded content bytes each page interprets (its content streams and the form
    XObjects its resources name); refuse past the limit, naming the page."""
    from pypdf.generic import ArrayObject, IndirectObject

    sizes: dict[tuple[int, int], int] = {}
    total = 0
    for number, page in enumerate(reader.pages, start=1):
        raw = page.get("/Contents")
        refs = list(raw) if isinstance(raw, ArrayObject) else ([raw] if raw is not None else [])
        refs += _form_xobjects(page)
        for ref in refs:
            if isinstance(ref, IndirectObject):
                key = (ref.idnum, ref.generation)
                if key not in sizes:
                    sizes[key] = _decoded_size(ref.get_object())
                total += sizes[key]
            else:
                total += _decoded_size(ref)
            if total > limits.max_pdf_content_bytes:
                raise ExtractionLimitExceeded(
                    f"the PDF's page content passes {mib(limits.max_pdf_content_bytes)} at page {number} "
                    f"(a stream shared by pages counts for each)"
                )


def _form_xobjects(page: Any) -> list[Any]:
    """The form XObjects a page's resources name: pypdf interprets their content for text too."""
    resources = page.get("/Resources")
    resources = resources.get_object() if resources is not None else None
    xobjects = resources.get("/XObject") if resources is not None else None
    xobjects = xobjects.get_object() if xobjects is not None else None
    if xobjects is None or not hasattr(xobjects, "values"):
        return []
    return [ref for ref in xobjects.values() if ref.get_object().get("/Subtype") == "/Form"]


def _decoded_size(stream: Any) -> int:
    get_data = getattr(stream, "get_data", None)
    return len(get_data()) if get_data is not None else 0
