"""The text of an OpenDocument text file (.odt, .ott), read as a stream like a .docx.

What counts (the same choices as for DOCX, ``docs/extraction.md``): the body of
``content.xml`` in document order: paragraphs and headings, lists, tables (each cell once),
text frames and footnote/endnote bodies where they are anchored; ``text:s`` (``c`` spaces),
tabs and line breaks. Not counted: annotations (a reviewer's comments), tracked changes'
stored deletions (``text:tracked-changes``), note citation marks (the "1" of a footnote),
and the templates' headers and footers in ``styles.xml``.

Reading is bounded by :mod:`doccheck.extract._package` (member count, inflated size and ratio,
depth, no entities).
"""

from __future__ import annotations

from lxml import etree

from doccheck.errors import ExtractionError
from doccheck.extract._package import (
    Budget,
    Depth,
    Events,
    check_chars,
    check_count,
    free,
    open_package,
    split_tag,
    stream_part,
)
from doccheck.extract._read_limits import ExtractionLimits

_TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
_OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
_TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
_LABEL = ".odt"
#: Elements whose whole content is not the author's visible text.
_SKIP = {(_OFFICE, "annotation"), (_TEXT, "tracked-changes"), (_TEXT, "note-citation"), (_OFFICE, "annotation-end")}
#: Ends of these elements separate words.
_BREAK_AFTER = {(_TEXT, "p"): "\n", (_TEXT, "h"): "\n", (_TABLE, "table-cell"): "\t", (_TABLE, "table-row"): "\n"}
_FREED = {"table-cell", "table-row", "list-item", "section"}


def odt_to_text(data: bytes, limits: ExtractionLimits) -> str:
    """Text of an .odt/.ott (see module docstring), or :class:`ExtractionError` with the reason."""
    try:
        with open_package(data, limits, _LABEL) as archive:
            try:
                info = archive.getinfo("content.xml")
            except KeyError:
                raise ExtractionError("not a readable .odt file (no content.xml)") from None
            collector = _Collector("content.xml", limits)
            text = stream_part(archive, info, limits, Budget(limits.max_inflated_bytes, _LABEL), collector)
    except ExtractionError:
        raise
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - a damaged zip is this row's problem only
        raise ExtractionError(f"not a readable .odt file ({type(exc).__name__})") from None
    return check_chars(text.strip(), limits, _LABEL)


class _Collector:
    """Text of ``content.xml``: each outermost paragraph or heading walked once it is complete.

    A pull parser's ``start`` event does not yet hold an element's text, and mixed content
    (``<text:p>a <text:span>b</text:span> c</text:p>``) needs text, children and tails in
    order: so a paragraph is read whole at its ``end`` (its subtree is then complete, and
    bounded by the depth limit) and freed.
    """

    def __init__(self, part: str, limits: ExtractionLimits) -> None:
        self.parts: list[str] = []
        self.depth = Depth(part, limits.max_xml_depth)
        self.limits = limits
        self.chars = 0
        self.skip = 0  # > 0 inside an annotation or tracked changes
        self.open_paragraphs = 0

    def consume(self, events: Events) -> None:
        for event, elem in events:
            key = split_tag(elem.tag)
            if event == "start":
                self.depth.enter()
                if key in _SKIP:
                    self.skip += 1
                elif key in _PARAGRAPHS:
                    self.open_paragraphs += 1
                continue
            self.depth.leave()
            if key in _SKIP:
                self.skip -= 1
            elif key in _PARAGRAPHS:
                self.open_paragraphs -= 1
                if not self.open_paragraphs and not self.skip:
                    self._add(_paragraph_text(elem))
            elif key in _BREAK_AFTER and not self.skip:
                self.parts.append(_BREAK_AFTER[key])
            if (key in _PARAGRAPHS and not self.open_paragraphs) or key[1] in _FREED or elem.getparent() is None:
                free(elem)

    def _add(self, text: str) -> None:
        self.parts.append(text)
        self.chars += len(text)
        check_count(self.chars, self.limits, _LABEL)


_PARAGRAPHS = {(_TEXT, "p"), (_TEXT, "h")}


def _paragraph_text(paragraph: etree._Element) -> str:
    out: list[str] = []
    _walk(paragraph, out)
    return "".join(out)


def _walk(elem: etree._Element, out: list[str]) -> None:
    """Text, children and tails in document order; skipped elements' content left out."""
    key = split_tag(elem.tag)
    if key in _SKIP or not key[1]:
        return
    if key in _PARAGRAPHS:
        out.append("\n")  # a note's or a frame's paragraphs sit inside a paragraph of the body
    if key[0] == _TEXT:
        if key[1] == "s":
            out.append(" " * min(_int(elem.get(f"{{{_TEXT}}}c"), 1), 1000))
        elif key[1] == "tab":
            out.append("\t")
        elif key[1] == "line-break":
            out.append("\n")
    if elem.text:
        out.append(elem.text)
    for child in elem:
        _walk(child, out)
        if child.tail:
            out.append(child.tail)
    if key in _PARAGRAPHS:
        out.append("\n")


def _int(value: str | None, default: int) -> int:
    try:
        return max(0, int(value)) if value is not None else default
    except ValueError:
        return default
