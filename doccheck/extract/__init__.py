"""Text extraction and word counting for the document types the service accepts.

The emulator uses this package to count the words it bills and to compute similarity, and
manifest validation uses the very same rules to reject a row locally (unsupported type,
unreadable or hostile file) before any money is spent. Sharing one implementation keeps the
two sides' word counts, and so the predicted cost, equal.

Reading a document is bounded (``docs/extraction.md``): plain text is decoded in-process
(linear in its size); every other type is recognised by its bytes (:mod:`.sniff`) and parsed in a reused worker process
(:mod:`doccheck.extract.sandbox`) under the limits of :mod:`doccheck.extract.limits`, so a
hostile file costs at most the wall time, CPU and memory those allow, and fails as one
:class:`ExtractionError` with a reason.

The package's modules: :mod:`.types` (what is accepted), :mod:`.parse` (text out of bytes),
:mod:`.words` (the word rule), :mod:`.sandbox` and :mod:`.worker` (the bounded worker),
:mod:`.limits` (its errors live in :mod:`doccheck.errors`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from doccheck.errors import (
    ExtractionError,
    ExtractionLimitExceeded,
    ExtractionStopped,
    ImageOnlyPdf,
    ImageWithoutText,
    NotMachineReadable,
    PasswordProtected,
    UnsupportedFileType,
)
from doccheck.extract.limits import DEFAULT_LIMITS, ExtractionLimits
from doccheck.extract.parse import Extracted, extract, extract_text
from doccheck.extract.types import SUPPORTED_TYPES, content_type_for, extension_of, is_supported

if TYPE_CHECKING:
    from doccheck.extract.words import WORD_RE, count_words, words_of

__all__ = [
    "DEFAULT_LIMITS",
    "SUPPORTED_TYPES",
    "WORD_RE",
    "ExtractionError",
    "ExtractionLimitExceeded",
    "ExtractionLimits",
    "ExtractionStopped",
    "Extracted",
    "ImageOnlyPdf",
    "ImageWithoutText",
    "NotMachineReadable",
    "PasswordProtected",
    "UnsupportedFileType",
    "content_type_for",
    "count_words",
    "extension_of",
    "extract",
    "extract_text",
    "is_supported",
    "words_of",
]


#: Names served by ``__getattr__`` on first use.
_LAZY = ("WORD_RE", "count_words", "words_of")


def __getattr__(name: str) -> object:
    """The word rule is imported on first use: it needs numpy, which the extraction worker
    (``python -m doccheck.extract.worker``, started per core) never does (~0.15 s of CPU each)."""
    if name in _LAZY:
        from doccheck.extract import words

        return getattr(words, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
