"""Bounded reading of zip packages of XML parts (DOCX, PPTX, ODT), shared by their readers.

Why one module: the three formats are all "a zip of XML", and a zip bomb or a 10,000-deep
element is the same attack whichever format's name it carries. Every reader opens the
package through :func:`open_package` (member count checked from the end-of-central-directory
record before ``zipfile`` lists anything) and parses each part through :func:`stream_part`:
declared size and ratio checked before inflating, actual inflated bytes counted chunk by
chunk while lxml's pull parser consumes them (so a part that lies about its size stops at the
limit), one :class:`Budget` for all the parts of a document, no entities, no DTD, no network.
"""

from __future__ import annotations

import posixpath
import zipfile
import zlib
from collections.abc import Iterator
from io import BytesIO
from typing import Protocol

from lxml import etree

from doccheck.errors import ExtractionError, ExtractionLimitExceeded
from doccheck.extract._read_limits import RATIO_FLOOR_BYTES, ExtractionLimits, mib
from doccheck.extract._sniff import declared_zip_members

_CHUNK = 64 * 1024
#: Small bookkeeping parts (relationships, manifests) are read whole, up to this size.
SMALL_PART_MAX = 2 * 1024 * 1024

Events = Iterator[tuple[str, etree._Element]]


class Collector(Protocol):
    """Turns a part's parse events into text (each reader has its own rules)."""

    parts: list[str]

    def consume(self, events: Events) -> None:
        """Take the events parsed so far (raise :class:`ExtractionLimitExceeded` past a limit)."""
        ...


class Budget:
    """Inflated bytes left for all the parts of one document."""

    def __init__(self, total: int, label: str) -> None:
        self.total = total
        self.used = 0
        self.label = label

    def take(self, n: int, part: str) -> None:
        self.used += n
        if self.used > self.total:
            raise ExtractionLimitExceeded(f"the {self.label} parts inflate past {mib(self.total)} in all (at {part})")


def open_package(data: bytes, limits: ExtractionLimits, label: str) -> zipfile.ZipFile:
    """The zip, after its member count is checked (declared first, then listed)."""
    declared = declared_zip_members(data)
    if declared > limits.max_zip_members:
        raise ExtractionLimitExceeded(f"the {label} lists {declared} parts, over the limit of {limits.max_zip_members}")
    try:
        archive = zipfile.ZipFile(BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError, EOFError):
        raise ExtractionError(f"not a readable {label} file (not a zip archive)") from None
    count = len(archive.infolist())
    if count > limits.max_zip_members:
        archive.close()
        raise ExtractionLimitExceeded(f"the {label} lists {count} parts, over the limit of {limits.max_zip_members}")
    return archive


def safe_parser(**kwargs: object) -> etree.XMLParser:
    """A parser that resolves no entity, loads no DTD and reaches no network."""
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False, **kwargs)


def read_small_part(archive: zipfile.ZipFile, info: zipfile.ZipInfo, label: str) -> etree._Element:
    """A bookkeeping part (under :data:`SMALL_PART_MAX`) parsed whole, safely."""
    if info.file_size > SMALL_PART_MAX:
        raise ExtractionLimitExceeded(
            f"the {label} part {info.filename} declares {info.file_size} bytes, over {mib(SMALL_PART_MAX)}"
        )
    try:
        with archive.open(info) as handle:
            raw = handle.read(SMALL_PART_MAX + 1)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, RuntimeError) as exc:
        raise ExtractionError(f"not a readable {label} file ({info.filename}: {type(exc).__name__})") from None
    if len(raw) > SMALL_PART_MAX:
        raise ExtractionLimitExceeded(f"the {label} part {info.filename} inflates past {mib(SMALL_PART_MAX)}")
    try:
        return etree.fromstring(raw, safe_parser())
    except etree.XMLSyntaxError:
        raise ExtractionError(f"not a readable {label} file ({info.filename} is not well-formed XML)") from None


def check_declared(info: zipfile.ZipInfo, limits: ExtractionLimits) -> None:
    """Refuse a part whose declared size or compression ratio is past the limits, before inflating it."""
    if info.file_size > limits.max_part_bytes:
        raise ExtractionLimitExceeded(f"{posixpath.basename(info.filename)} inflates past {mib(limits.max_part_bytes)}")
    if info.file_size > RATIO_FLOOR_BYTES and info.file_size > limits.max_compression_ratio * max(
        info.compress_size, 1
    ):
        raise ExtractionLimitExceeded(
            f"{posixpath.basename(info.filename)} is compressed over {limits.max_compression_ratio}:1 "
            f"({info.compress_size} bytes inflating to {info.file_size})"
        )


def stream_part(
    archive: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    limits: ExtractionLimits,
    budget: Budget,
    collector: Collector,
) -> str:
    """Stream one part through a pull parser into ``collector``; its text."""
    check_declared(info, limits)
    name = posixpath.basename(info.filename)
    parser = etree.XMLPullParser(events=("start", "end"), resolve_entities=False, no_network=True,
                                 load_dtd=False, huge_tree=False)  # fmt: skip
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
        raise ExtractionError(f"not a readable {budget.label} file ({name} is not well-formed XML)") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, RuntimeError) as exc:
        # RuntimeError: encrypted member; NotImplementedError: unsupported compression.
        raise ExtractionError(f"not a readable {budget.label} file ({name}: {type(exc).__name__})") from None
    return "".join(collector.parts)


class Depth:
    """The nesting depth of a part while it streams, refused past the limit."""

    def __init__(self, part: str, max_depth: int) -> None:
        self.part = part
        self.max_depth = max_depth
        self.depth = 0

    def enter(self) -> None:
        self.depth += 1
        if self.depth > self.max_depth:
            raise ExtractionLimitExceeded(f"{self.part} is nested over {self.max_depth} levels deep")

    def leave(self) -> None:
        self.depth -= 1


def split_tag(tag: object) -> tuple[str, str]:
    """``"{ns}local"`` → ``("ns", "local")``; comments and processing instructions → ``("", "")``."""
    if not isinstance(tag, str):
        return "", ""
    if tag.startswith("{"):
        ns, _, local = tag[1:].partition("}")
        return ns, local
    return "", tag


def free(elem: etree._Element) -> None:
    """Drop a finished element and its finished earlier siblings so memory stays flat."""
    elem.clear(keep_tail=False)
    parent = elem.getparent()
    if parent is not None:
        while elem.getprevious() is not None:
            del parent[0]


def check_chars(text: str, limits: ExtractionLimits, label: str) -> str:
    """``text``, or :class:`ExtractionLimitExceeded` when it is past the character limit."""
    check_count(len(text), limits, label)
    return text


def check_count(chars: int, limits: ExtractionLimits, label: str) -> None:
    """:class:`ExtractionLimitExceeded` when ``chars`` characters are past the limit."""
    if chars > limits.max_text_chars:
        raise ExtractionLimitExceeded(f"the {label} holds over {limits.max_text_chars} characters of text")
