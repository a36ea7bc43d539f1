"""The text of a .docx: every story a reader sees, each piece once, read as a stream.

What counts (``docs/extraction.md`` says why): the main document's paragraphs and tables
(every ``w:tc`` once, so a merged cell is counted once however many columns or rows it
spans; nested tables in place), text boxes and shapes (the ``mc:Choice`` rendering only,
never its ``mc:Fallback`` duplicate), content controls, hyperlinks and field *results*;
then the footnotes, endnotes, and each header and footer part once. Not counted: comments
(a reviewer's words, not the author's), deleted and moved-away revisions (``w:delText``,
``w:moveFrom``), field codes (``w:instrText``), and the glossary.

Reading is bounded: the zip's member count and every part's declared size are checked
before inflating, the actual inflated bytes are counted chunk by chunk while lxml parses
them incrementally (so a part that lies about its size stops at the limit), and the XML
depth is bounded. Parts are found through the package relationships like Word does; a
relationship to a missing part (the "KeyError" documents) is skipped, not fatal, except for
the main document.
"""

from __future__ import annotations

import posixpath
import zipfile
from collections.abc import Iterator

from doccheck.errors import ExtractionError, ExtractionLimitExceeded
from doccheck.extract._package import (
    Budget,
    Depth,
    Events,
    check_chars,
    free,
    open_package,
    read_small_part,
    split_tag,
    stream_part,
)
from doccheck.extract._read_limits import ExtractionLimits

_W_NAMESPACES = {
    "http://schemas.openxmlformats.org/wordprocessingml/2006/main",  # transitional
    "http://purl.oclc.org/ooxml/wordprocessingml/main",  # strict
}
_MC = "http://schemas.openxmlformats.org/markup-compatibility/2006"
_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
_OFFICE_DOCUMENT = "/officeDocument"
#: Relationship types whose parts hold text a reader sees, in the order they are appended.
_STORY_ORDER = ("/footnotes", "/endnotes", "/header", "/footer")
#: Elements whose whole content is not part of the text (see module docstring).
_SKIP = {"delText", "instrText", "moveFrom", "del", "comments"}
_TEXT_CHARS = {"tab": "\t", "br": "\n", "cr": "\n", "noBreakHyphen": "-", "ptab": "\t"}
#: Starts of these elements separate words (a text box can begin in the middle of a word's run).
_BREAK_BEFORE = {"txbxContent", "p"}
#: Ends of these elements separate words (paragraphs, cells, rows).
_BREAK_AFTER = {"p": "\n", "tc": "\t", "tr": "\n", "tbl": "\n"}
_LABEL = ".docx"


def docx_to_text(data: bytes, limits: ExtractionLimits) -> str:
    """Text of a .docx (see module docstring), or :class:`ExtractionError` naming the part."""
    try:
        return _docx_to_text(data, limits)
    except ExtractionError:
        raise
    except MemoryError:
        raise  # the worker reports it and retires
    except Exception as exc:  # noqa: BLE001 - zlib.error, struct.error...: a damaged zip is this row's problem only
        raise ExtractionError(f"not a readable .docx file ({type(exc).__name__})") from None


def _docx_to_text(data: bytes, limits: ExtractionLimits) -> str:
    with open_package(data, limits, _LABEL) as archive:
        names = {m.filename: m for m in archive.infolist()}
        main = _main_part(archive, names)
        budget = Budget(limits.max_inflated_bytes, _LABEL)
        chunks = [_story_text(archive, names[main], limits, budget)]
        for part in _story_parts(archive, names, main):
            chunks.append(_story_text(archive, names[part], limits, budget))
    return check_chars("\n".join(c.strip() for c in chunks if c.strip()), limits, _LABEL)


def _main_part(archive: zipfile.ZipFile, names: dict[str, zipfile.ZipInfo]) -> str:
    """The officeDocument part named by ``_rels/.rels`` (``word/document.xml`` if unnamed)."""
    for rel_type, target in _relationships(archive, names, "_rels/.rels", base=""):
        if rel_type.endswith(_OFFICE_DOCUMENT) and target in names:
            return target
    if "word/document.xml" in names:
        return "word/document.xml"
    raise ExtractionError("not a readable .docx file (no main document part)")


def _story_parts(archive: zipfile.ZipFile, names: dict[str, zipfile.ZipInfo], main: str) -> list[str]:
    """Footnotes, endnotes, headers, footers the main part refers to, each existing part once."""
    folder, base = posixpath.split(main)
    rels = posixpath.join(folder, "_rels", base + ".rels")
    found: dict[str, list[str]] = {suffix: [] for suffix in _STORY_ORDER}
    seen: set[str] = {main}
    for rel_type, target in _relationships(archive, names, rels, base=folder):
        for suffix in _STORY_ORDER:
            if rel_type.endswith(suffix) and target in names and target not in seen:
                seen.add(target)
                found[suffix].append(target)
    return [part for suffix in _STORY_ORDER for part in sorted(found[suffix])]


def _relationships(
    archive: zipfile.ZipFile, names: dict[str, zipfile.ZipInfo], rels: str, base: str
) -> Iterator[tuple[str, str]]:
    """(type, resolved part name) of the internal relationships in ``rels``; none if it is absent."""
    info = names.get(rels)
    if info is None:
        return
    root = read_small_part(archive, info, _LABEL)
    for rel in root.iter(f"{{{_REL}}}Relationship"):
        if rel.get("TargetMode") == "External":
            continue
        target = rel.get("Target") or ""
        resolved = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join(base, target))
        yield rel.get("Type") or "", resolved


def _story_text(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limits: ExtractionLimits, budget: Budget) -> str:
    """Stream one part, collecting text as elements end and freeing them."""
    collector = _Collector(posixpath.basename(info.filename), limits.max_xml_depth, limits.max_text_chars)
    return stream_part(archive, info, limits, budget, collector)


class _Collector:
    """Turns parse events into text (see module docstring for what is kept)."""

    def __init__(self, part: str, max_depth: int, max_chars: int) -> None:
        self.part = part
        self.max_chars = max_chars
        self.chars = 0
        self.parts: list[str] = []
        self.depth = Depth(part, max_depth)
        self.skip = 0  # > 0 inside an element whose content is not text

    def consume(self, events: Events) -> None:
        for event, elem in events:
            ns, local = split_tag(elem.tag)
            if event == "start":
                self.depth.enter()
                if _skipped(ns, local):
                    self.skip += 1
                elif local in _BREAK_BEFORE and ns in _W_NAMESPACES and not self.skip:
                    self.parts.append("\n")  # a text box's paragraphs sit inside a run of another
                continue
            self.depth.leave()
            if _skipped(ns, local):
                self.skip -= 1
            elif not self.skip and ns in _W_NAMESPACES:
                if local == "t":
                    self.parts.append(elem.text or "")
                    self.chars += len(self.parts[-1])
                    if self.chars > self.max_chars:
                        raise ExtractionLimitExceeded(f"{self.part} holds over {self.max_chars} characters of text")
                elif local in _TEXT_CHARS:
                    self.parts.append(_TEXT_CHARS[local])
                elif local in _BREAK_AFTER:
                    self.parts.append(_BREAK_AFTER[local])
            if local in ("p", "tbl", "tc", "tr", "r", "Fallback") or elem.getparent() is None:
                free(elem)


def _skipped(ns: str, local: str) -> bool:
    return (ns == _MC and local == "Fallback") or (ns in _W_NAMESPACES and local in _SKIP)
