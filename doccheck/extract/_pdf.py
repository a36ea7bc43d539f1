"""The text of a PDF: PDFium first, pypdf only where PDFium cannot open the file or crashes.

Why PDFium (pypdfium2: Chromium's PDF engine, Apache-2.0/BSD, no further dependencies): on
8-page essays it reads the same words for about a third of pypdf's CPU (docs/benchmarks.md),
and PDFs are most of a term. PDFium is not thread-safe: it runs only in the extraction
worker *processes* (:mod:`doccheck.extract._sandbox`), one document at a time each.

Bounds with PDFium: before any page is loaded, the page count, the object count and the
content bytes the pages would parse (a raw bound, :mod:`doccheck.extract._pdf_cost`, and the
exact count below only when that bound passes the limit); the characters as pages are read;
and the worker's wall-time, CPU and memory limits for whatever a page costs beyond that.
A user-password PDF is :class:`PasswordProtected`; pages that hold images and no text are an
:class:`ImageOnlyPdf` (a scan), said as such rather than counted as 0 words.

pypdf is the fallback for files PDFium refuses as damaged (it repairs some cross-reference
tables PDFium does not), and for files whose reading crashed PDFium's native code (the worker
died of a signal no limit explains: :mod:`doccheck.extract._sandbox` reads them again in a new
worker with :func:`pypdf_to_text`, once). Its text extraction re-interprets a page's content stream for each
page that draws it, so a 31 KB file whose 40 pages share one 8 MB stream costs 40 x 8 MB of
interpretation: before extracting anything it counts pages, cross-reference objects and the
content bytes every page would interpret (a shared stream counts once per page) and refuses
past :mod:`doccheck.extract._read_limits`.
"""

from __future__ import annotations

import io
import logging
from typing import Any

from doccheck.errors import ExtractionError, ExtractionLimitExceeded, ImageOnlyPdf, PasswordProtected
from doccheck.extract._read_limits import ExtractionLimits, mib

IMAGE_ONLY = (
    "image-only PDF (scanned pages without machine-readable text): no AI or similarity result; "
    "ask for a typed copy or review it by hand"
)
LOCKED = "password-protected PDF: ask the student for a copy without a password"


def pdf_to_text(data: bytes, limits: ExtractionLimits) -> str:
    """Page texts joined by newlines, or :class:`ExtractionError` with the reason."""
    if b"%PDF" not in data[:1024]:
        raise ExtractionError("not a PDF file (missing %PDF header)")
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if exc.err_code == pdfium.raw.FPDF_ERR_PASSWORD:
            raise PasswordProtected(LOCKED) from None
        return _pypdf_to_text(data, limits)  # damaged in a way pypdf may repair
    try:
        _check_cost(data, len(document), limits)
        return _pdfium_text(document, limits)
    finally:
        document.close()


def pypdf_to_text(data: bytes, limits: ExtractionLimits) -> str:
    """The text by pypdf alone: for a PDF whose reading crashed PDFium (the sandbox asks for it)."""
    if b"%PDF" not in data[:1024]:
        raise ExtractionError("not a PDF file (missing %PDF header)")
    return _pypdf_to_text(data, limits)


def _check_cost(data: bytes, pages: int, limits: ExtractionLimits) -> None:
    """Pages, objects, and the content bytes pages would parse (exactly, only when the raw bound says it may pass)."""
    from doccheck.extract._pdf_cost import raw_cost

    if pages > limits.max_pdf_pages:
        raise ExtractionLimitExceeded(f"the PDF has {pages} pages, over the limit of {limits.max_pdf_pages}")
    cost = raw_cost(data, pages, limits.max_pdf_content_bytes)
    if cost.objects > limits.max_pdf_objects:
        raise ExtractionLimitExceeded(f"the PDF has {cost.objects} objects, over the limit of {limits.max_pdf_objects}")
    if cost.maybe_over:
        from pypdf import PdfReader

        logging.getLogger("pypdf").setLevel(logging.ERROR)
        try:
            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted:  # PDFium opened it, so the empty user password does: streams need it
                _opens_without_password(reader)
            _check_content_bytes(reader, limits)
        except ExtractionError:
            raise
        except Exception:  # noqa: BLE001 - pypdf cannot walk this file: the OS limits still bound PDFium
            return


def _pdfium_text(document: Any, limits: ExtractionLimits) -> str:
    """Text of every page (PDFium's reading order), the page and character limits checked as it goes."""
    import pypdfium2 as pdfium

    pages = len(document)  # checked against the limit by _check_cost
    texts: list[str] = []
    size = 0
    images = False
    for index in range(pages):
        try:
            page = document[index]
            textpage = page.get_textpage()
            text = textpage.get_text_range()
            if not text.strip() and not images:
                images = any(True for _ in page.get_objects(filter=[pdfium.raw.FPDF_PAGEOBJ_IMAGE], max_depth=3))
            textpage.close()
            page.close()
        except pdfium.PdfiumError:
            raise ExtractionError(f"not a readable PDF file (page {index + 1} cannot be read)") from None
        size += len(text)
        if size > limits.max_text_chars:
            raise ExtractionLimitExceeded(f"the PDF holds over {limits.max_text_chars} characters of text")
        texts.append(text)
    text = "\n".join(texts).replace("\r\n", "\n").replace("\ufffe", "").strip()
    if not text and images:
        raise ImageOnlyPdf(IMAGE_ONLY)
    return text


def _pypdf_to_text(data: bytes, limits: ExtractionLimits) -> str:
    """The fallback: pypdf, after its cost pre-check (module docstring)."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not _opens_without_password(reader):
            raise PasswordProtected(LOCKED)
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


def _opens_without_password(reader: Any) -> bool:
    """True for an owner-password-only PDF (anyone may read it: an empty user password opens it)."""
    try:
        return bool(reader.decrypt(""))
    except Exception:  # noqa: BLE001 - unsupported encryption: treat as locked
        return False


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
