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
import zlib
from collections.abc import Iterator
from io import BytesIO

from lxml import etree

from doccheck.extract.errors import ExtractionError, ExtractionLimitExceeded
from doccheck.extract.limits import RATIO_FLOOR_BYTES, ExtractionLimits, mib

_CHUNK = 64 * 1024
_RELS_MAX = 2 * 1024 * 1024
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


def _declared_members(data: bytes) -> int:
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


def _docx_to_text(data: bytes, limits: ExtractionLimits) -> str:
    declared = _declared_members(data)
    if declared > limits.max_zip_members:
        raise ExtractionLimitExceeded(f"the .docx lists {declared} parts, over the limit of {limits.max_zip_members}")
    try:
        archive = zipfile.ZipFile(BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError, EOFError):
        raise ExtractionError("not a readable .docx file (not a zip archive)") from None
    with archive:
        members = archive.infolist()
        if len(members) > limits.max_zip_members:
            raise ExtractionLimitExceeded(
                f"the .docx lists {len(members)} parts, over the limit of {limits.max_zip_members}"
            )
        names = {m.filename: m for m in members}
        main = _main_part(archive, names)
        budget = _Budget(limits.max_inflated_bytes)
        chunks = [_story_text(archive, names[main], limits, budget)]
        for part in _story_parts(archive, names, main):
            chunks.append(_story_text(archive, names[part], limits, budget))
    text = "\n".join(c.strip() for c in chunks if c.strip())
    if len(text) > limits.max_text_chars:
        raise ExtractionLimitExceeded(f"the .docx holds over {limits.max_text_chars} characters of text")
    return text


class _Budget:
    """Inflated bytes left for all the parts of one document."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.used = 0

    def take(self, n: int, part: str) -> None:
        self.used += n
        if self.used > self.total:
            raise ExtractionLimitExceeded(f"the .docx parts inflate past {mib(self.total)} in all (at {part})")


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
    if info.file_size > _RELS_MAX:
        raise ExtractionLimitExceeded(f"the .docx part {rels} declares {info.file_size} bytes, over {mib(_RELS_MAX)}")
    with archive.open(info) as handle:
        raw = handle.read(_RELS_MAX + 1)
    if len(raw) > _RELS_MAX:
        raise ExtractionLimitExceeded(f"the .docx part {rels} inflates past {mib(_RELS_MAX)}")
    try:
        root = etree.fromstring(raw, _safe_parser())
    except etree.XMLSyntaxError:
        raise ExtractionError(f"not a readable .docx file ({rels} is not well-formed XML)") from None
    for rel in root.iter(f"{{{_REL}}}Relationship"):
        if rel.get("TargetMode") == "External":
            continue
        target = rel.get("Target") or ""
        resolved = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join(base, target))
        yield rel.get("Type") or "", resolved


def _safe_parser(**kwargs: object) -> etree.XMLParser:
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False, **kwargs)


def _check_declared(info: zipfile.ZipInfo, limits: ExtractionLimits) -> None:
    if info.file_size > limits.max_part_bytes:
        raise ExtractionLimitExceeded(f"{posixpath.basename(info.filename)} inflates past {mib(limits.max_part_bytes)}")
    if info.file_size > RATIO_FLOOR_BYTES and info.file_size > limits.max_compression_ratio * max(
        info.compress_size, 1
    ):
        raise ExtractionLimitExceeded(
            f"{posixpath.basename(info.filename)} is compressed over {limits.max_compression_ratio}:1 "
            f"({info.compress_size} bytes inflating to {info.file_size})"
        )


def _story_text(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limits: ExtractionLimits, budget: _Budget) -> str:
    """Stream one part through a pull parser, collecting text as elements end and freeing them."""
    _check_declared(info, limits)
    name = posixpath.basename(info.filename)
    parser = etree.XMLPullParser(events=("start", "end"), resolve_entities=False, no_network=True,
                                 load_dtd=False, huge_tree=False)  # fmt: skip
    collector = _Collector(name, limits.max_xml_depth, limits.max_text_chars)
    inflated = 0
    try:
        with archive.open(info) as handle:
            while chunk := handle.read(_CHUNK):
                inflated += len(chunk)
                if inflated > limits.max_part_bytes:
                    raise ExtractionLimitExceeded(f"{name} inflates past {mib(limits.max_part_bytes)}")
                if inflated > RATIO_FLOOR_BYTES and inflated > limits.max_compression_ratio * max(
                    info.compress_size, 1
                ):
                    raise ExtractionLimitExceeded(f"{name} is compressed over {limits.max_compression_ratio}:1")
                budget.take(len(chunk), name)
                parser.feed(chunk)
                collector.consume(parser.read_events())
            parser.close()
            collector.consume(parser.read_events())
    except etree.XMLSyntaxError as exc:
        message = str(exc).lower()
        if "depth" in message:
            raise ExtractionLimitExceeded(f"{name} is nested over {limits.max_xml_depth} levels deep") from None
        if "huge" in message:  # libxml2 refuses single text nodes over 10 MB without huge_tree
            raise ExtractionLimitExceeded(f"{name} has a single text run over 10 MB") from None
        raise ExtractionError(f"not a readable .docx file ({name} is not well-formed XML)") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, RuntimeError) as exc:
        # RuntimeError: encrypted member; NotImplementedError: unsupported compression.
        raise ExtractionError(f"not a readable .docx file ({name}: {type(exc).__name__})") from None
    return "".join(collector.parts)


class _Collector:
    """Turns parse events into text (see module docstring for what is kept)."""

    def __init__(self, part: str, max_depth: int, max_chars: int) -> None:
        self.part = part
        self.max_depth = max_depth
        self.max_chars = max_chars
        self.chars = 0
        self.parts: list[str] = []
        self.depth = 0
        self.skip = 0  # > 0 inside an element whose content is not text

    def consume(self, events: Iterator[tuple[str, etree._Element]]) -> None:
        for event, elem in events:
            ns, local = _split(elem.tag)
            if event == "start":
                self.depth += 1
                if self.depth > self.max_depth:
                    raise ExtractionLimitExceeded(f"{self.part} is nested over {self.max_depth} levels deep")
                if _skipped(ns, local):
                    self.skip += 1
                elif local in _BREAK_BEFORE and ns in _W_NAMESPACES and not self.skip:
                    self.parts.append("\n")  # a text box's paragraphs sit inside a run of another
                continue
            self.depth -= 1
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
                _free(elem)


def _split(tag: object) -> tuple[str, str]:
    if not isinstance(tag, str):  # comments, processing instructions
        return "", ""
    if tag.startswith("{"):
        ns, _, local = tag[1:].partition("}")
        return ns, local
    return "", tag


def _skipped(ns: str, local: str) -> bool:
    return (ns == _MC and local == "Fallback") or (ns in _W_NAMESPACES and local in _SKIP)


def _free(elem: etree._Element) -> None:
    """Drop a finished element and its finished earlier siblings so memory stays flat."""
    elem.clear(keep_tail=False)
    parent = elem.getparent()
    if parent is not None:
        while elem.getprevious() is not None:
            del parent[0]
