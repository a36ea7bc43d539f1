"""Every limit on reading one document, stated once.

Students' files are untrusted: a 600 KB DOCX can inflate to gigabytes and a 30 KB PDF can
make every page re-parse one 8 MB content stream. The structural limits (sizes, counts) are
checked by the parsers while they stream; the resource limits (wall time, CPU time, memory)
are enforced on the worker process by the operating system and by a kill from the parent
(:mod:`doccheck.extract._sandbox`), because a thread cannot be stopped.

The defaults accept any real coursework we have seen (the largest real DOCX part in the
test corpora inflates to about 3 MB, the largest PDF page stream to about 200 KB) with a wide
margin, and refuse the hostile files of issue 13 in well under a second.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

MiB = 1024 * 1024

#: Largest document accepted at all (the service's upload limit).
MAX_INPUT_BYTES = 50 * MiB
#: DOCX: most members a zip may list (a real .docx has tens; zip bombs use thousands).
MAX_ZIP_MEMBERS = 2000
#: DOCX: most bytes one XML part we read may inflate to (declared and actually inflated).
MAX_PART_BYTES = 50 * MiB
#: DOCX: most bytes all parts we read may inflate to together.
MAX_INFLATED_BYTES = 100 * MiB
#: DOCX: highest inflated/compressed ratio of a part larger than :data:`RATIO_FLOOR_BYTES`.
MAX_COMPRESSION_RATIO = 200
#: Parts smaller than this are not ratio-checked (tiny XML compresses very well).
RATIO_FLOOR_BYTES = 1 * MiB
#: DOCX/ODT/PPTX: deepest XML nesting; RTF: deepest group nesting (libxml2's own default ceiling is 256).
MAX_XML_DEPTH = 256
#: PDF: most pages.
MAX_PDF_PAGES = 2000
#: PDF: most objects in the cross-reference table.
MAX_PDF_OBJECTS = 500_000
#: PDF: most content-stream bytes over all pages, counting a stream once per page that draws it.
MAX_PDF_CONTENT_BYTES = 32 * MiB
#: PPTX: most slides (a real deck has tens; a lecture a few hundred).
MAX_SLIDES = 1000
#: Most characters of extracted text returned (the service bills words; 16 M chars is ~3 M words).
MAX_TEXT_CHARS = 16 * MiB
#: Wall-clock seconds one extraction may take before its worker is killed.
WALL_SECONDS = 20.0
#: CPU seconds one extraction may use (RLIMIT_CPU of the worker, per job).
CPU_SECONDS = 20
#: Address space the worker may grow by for one job, above what it uses when idle (RLIMIT_AS).
MEMORY_BYTES = 768 * MiB
#: Worker processes kept ready; more concurrent extractions wait for one. One a core (at
#: least 2, at most 8: each may grow by ``MEMORY_BYTES`` while it works), so that a term of
#: files is extracted on every core (``doccheck.extract.cache.prefetch``).
WORKERS = max(2, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 2))


@dataclass(frozen=True)
class ExtractionLimits:
    """One set of limits; tests and benchmarks pass tighter ones, callers use :data:`DEFAULT_LIMITS`."""

    max_input_bytes: int = MAX_INPUT_BYTES
    max_zip_members: int = MAX_ZIP_MEMBERS
    max_part_bytes: int = MAX_PART_BYTES
    max_inflated_bytes: int = MAX_INFLATED_BYTES
    max_compression_ratio: int = MAX_COMPRESSION_RATIO
    max_xml_depth: int = MAX_XML_DEPTH
    max_pdf_pages: int = MAX_PDF_PAGES
    max_pdf_objects: int = MAX_PDF_OBJECTS
    max_pdf_content_bytes: int = MAX_PDF_CONTENT_BYTES
    max_slides: int = MAX_SLIDES
    max_text_chars: int = MAX_TEXT_CHARS
    wall_seconds: float = WALL_SECONDS
    cpu_seconds: int = CPU_SECONDS
    memory_bytes: int = MEMORY_BYTES


DEFAULT_LIMITS = ExtractionLimits()

#: The limits an operator sets (``DOCCHECK_EXTRACT_*``: the ``extraction`` group of the settings model).
_SET = ("wall_seconds", "cpu_seconds", "memory_mb", "max_pdf_pages", "max_slides", "max_inflated_mb")


def limits_in_force() -> ExtractionLimits:
    """The limits every read uses unless a caller passes its own: the settings' (one model,
    ``doccheck config`` shows them), the defaults above where nothing is set."""
    from doccheck.config import setting

    return _limits(*(setting("extraction", name) for name in _SET))


@functools.lru_cache(maxsize=8)
def _limits(wall: float, cpu: int, memory_mb: int, pages: int, slides: int, inflated_mb: int) -> ExtractionLimits:
    return ExtractionLimits(wall_seconds=wall, cpu_seconds=cpu, memory_bytes=memory_mb * MiB, max_pdf_pages=pages,
                            max_slides=slides, max_inflated_bytes=inflated_mb * MiB)  # fmt: skip


def mib(n: int) -> str:
    """``52428800`` → ``"50 MiB"`` (limits read better in MiB); ``1000`` → ``"1000 bytes"``."""
    return f"{n // MiB} MiB" if n % MiB == 0 else f"{n} bytes"
