"""Text extraction and word counting for the document types the service accepts.

The emulator uses this package to count the words it bills and to compute similarity, and
manifest validation uses the very same rules to reject a row locally (unsupported type,
unreadable or hostile file) before any money is spent. Sharing one implementation keeps the
two sides' word counts, and so the predicted cost, equal.

Reading a document is bounded (``docs/extraction.md``): plain text is decoded in-process
(linear in its size); every other type is recognised by its bytes and parsed in a reused worker
process (``python -m doccheck.extract.worker``, :func:`shutdown_workers` ends them all) under the
limits of :class:`ExtractionLimits`, so a hostile file costs at most the wall time, CPU and memory
those allow, and fails as one :class:`ExtractionError` with a reason.

Callers import from here; the modules are private (``_file_types``: what is accepted,
``_parse``: text out of bytes, ``_words``: the word rule, ``_sandbox``: the worker pool,
``_read_limits``: the limits; the readers one a format) but for two: :mod:`.cache`, the word
store a run shares (``from doccheck.extract import cache as word_cache``), and :mod:`.worker`,
the worker process's entry. The errors live in :mod:`doccheck.errors`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from doccheck._lazy import lazy_getattr as _lazy_getattr
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
from doccheck.extract._file_types import ALIASES as TYPE_ALIASES
from doccheck.extract._file_types import SUPPORTED_TYPES, content_type_for, extension_of, is_supported, same_format
from doccheck.extract._parse import IMAGE, Extracted, extract, extract_text, read_as_named
from doccheck.extract._pdf import IMAGE_ONLY
from doccheck.extract._read_limits import (
    DEFAULT_LIMITS,
    MAX_COMPRESSION_RATIO,
    RATIO_FLOOR_BYTES,
    ExtractionLimits,
)
from doccheck.extract._sniff import IMAGE_TYPES

if TYPE_CHECKING:
    from doccheck.extract import cache
    from doccheck.extract._sandbox import shutdown as shutdown_workers
    from doccheck.extract._sandbox import worker_pids
    from doccheck.extract._words import WORD_RE, count_words, word_tokens, words_of

__all__ = [
    "DEFAULT_LIMITS",
    "IMAGE",
    "IMAGE_ONLY",
    "IMAGE_TYPES",
    "MAX_COMPRESSION_RATIO",
    "RATIO_FLOOR_BYTES",
    "SUPPORTED_TYPES",
    "TYPE_ALIASES",
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
    "cache",
    "content_type_for",
    "count_words",
    "extension_of",
    "extract",
    "extract_text",
    "is_supported",
    "read_as_named",
    "same_format",
    "shutdown_workers",
    "word_tokens",
    "worker_pids",
    "words_of",
]


#: Names served by ``__getattr__`` on first use (``"_module:its_name"`` where it differs): the word
#: rule needs numpy, which the extraction worker (``python -m doccheck.extract.worker``, started per
#: core) never does (~0.15 s of CPU each); the worker pool too, so a worker does not load the pool.
_LAZY = {
    "WORD_RE": "_words",
    "count_words": "_words",
    "word_tokens": "_words",
    "words_of": "_words",
    "shutdown_workers": "_sandbox:shutdown",
    "worker_pids": "_sandbox",
}

#: A public submodule, imported on first use: the word store's functions read best as
#: ``word_cache.using(...)``, ``word_cache.cached_words(...)``.
_PUBLIC_MODULES = ("cache",)


__getattr__ = _lazy_getattr(__name__, _LAZY, _PUBLIC_MODULES)
