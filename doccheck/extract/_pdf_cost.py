"""A cheap bound on what reading a PDF may cost, from its raw bytes, before PDFium loads a page.

Why: PDFium parses each page's content when the page is loaded, so a 31 KB file whose 40
pages all draw one 8 MB stream costs 40 x 8 MB of parsing (over 20 s) although every size
looks small. The exact count (each page's content streams and forms, a shared stream once per
page that draws it) needs the object graph, which costs more than PDFium's whole reading of an
ordinary essay. So this module bounds it from above in one pass over the bytes:

    pages x (the largest decoded stream in the file)

Only a file over that bound (a real essay is ~100x under it) gets the exact count
(:func:`doccheck.extract._pdf.check_content_bytes`, with pypdf), which refuses with the page
named. Every stream's decoded size is found by inflating it with a cap, never whole; the
object count is the ``N 0 obj`` headers plus the objects that object streams declare.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass

_STREAM = re.compile(rb"stream\r?\n")
_OBJ = re.compile(rb"\d{1,10}\s+\d{1,5}\s+obj\b")
_OBJSTM_N = re.compile(rb"/Type\s*/ObjStm\b[^>]{0,200}?/N\s+(\d{1,9})|/N\s+(\d{1,9})[^>]{0,200}?/Type\s*/ObjStm\b")


@dataclass(frozen=True)
class RawCost:
    """What the raw scan found."""

    objects: int
    #: True when pages x the largest decoded stream may pass the content limit.
    maybe_over: bool


def raw_cost(data: bytes, pages: int, content_limit: int) -> RawCost:
    """Objects declared and whether the content bound may be passed (see module docstring)."""
    objects = len(_OBJ.findall(data))
    for match in _OBJSTM_N.finditer(data):
        objects += int(match.group(1) or match.group(2) or 0)
    cap = content_limit // max(1, pages) + 1  # a stream this large, drawn by every page, passes the limit
    for match in _STREAM.finditer(data):
        if _decoded_at_least(data, match.end(), cap):
            return RawCost(objects, maybe_over=True)
    return RawCost(objects, maybe_over=False)


def _decoded_at_least(data: bytes, start: int, cap: int) -> bool:
    """True when the stream starting at ``start`` decodes (zlib) or spans (raw) to ``cap`` bytes or more."""
    end = data.find(b"endstream", start)
    end = end if end >= 0 else len(data)
    try:
        return len(zlib.decompressobj().decompress(memoryview(data)[start:end], cap)) >= cap
    except zlib.error:  # not Flate (raw, or another filter): its span is what we know
        return end - start >= cap
