"""The text of a PowerPoint .pptx: every slide's text, slides in presentation order.

What counts: the DrawingML text of each slide (shapes, placeholders, tables, grouped shapes),
paragraph by paragraph, in the order ``ppt/presentation.xml`` lists the slides (not the order
of the zip, nor the slide file numbers, which change as slides are moved). Not counted: speaker
notes, comments, slide masters and layouts (template text such as "Click to add title").

Bounds: :mod:`doccheck.extract._package` (members, inflation, depth, no entities), and the
slide count, checked from the presentation part before any slide is read.
"""

from __future__ import annotations

import posixpath
import zipfile

from doccheck.errors import ExtractionError, ExtractionLimitExceeded
from doccheck.extract._package import (
    Budget,
    Depth,
    Events,
    check_chars,
    check_count,
    free,
    open_package,
    read_small_part,
    split_tag,
    stream_part,
)
from doccheck.extract._read_limits import ExtractionLimits

_LABEL = ".pptx"
_A = "http://schemas.openxmlformats.org/drawingml/2006/main"
_P_NAMESPACES = {
    "http://schemas.openxmlformats.org/presentationml/2006/main",
    "http://purl.oclc.org/ooxml/presentationml/main",
}
_R_NAMESPACES = {
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships",
    "http://purl.oclc.org/ooxml/officeDocument/relationships",
}
_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
_PRESENTATION = "ppt/presentation.xml"


def pptx_to_text(data: bytes, limits: ExtractionLimits) -> str:
    """Slide texts in order, or :class:`ExtractionError` with the reason."""
    try:
        with open_package(data, limits, _LABEL) as archive:
            names = {m.filename: m for m in archive.infolist()}
            budget = Budget(limits.max_inflated_bytes, _LABEL)
            slides = [
                stream_part(archive, names[part], limits, budget, _Collector(posixpath.basename(part), limits))
                for part in _slides(archive, names, limits)
            ]
    except ExtractionError:
        raise
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - a damaged zip is this row's problem only
        raise ExtractionError(f"not a readable .pptx file ({type(exc).__name__})") from None
    return check_chars("\n\n".join(s.strip() for s in slides if s.strip()), limits, _LABEL)


def _slides(archive: zipfile.ZipFile, names: dict[str, zipfile.ZipInfo], limits: ExtractionLimits) -> list[str]:
    """Slide part names in presentation order (ids whose part is missing are skipped)."""
    if _PRESENTATION not in names:
        raise ExtractionError("not a readable .pptx file (no ppt/presentation.xml)")
    root = read_small_part(archive, names[_PRESENTATION], _LABEL)
    ids = [
        rid
        for elem in root.iter()
        if split_tag(elem.tag)[1] == "sldId" and split_tag(elem.tag)[0] in _P_NAMESPACES
        for ns in _R_NAMESPACES
        if (rid := elem.get(f"{{{ns}}}id"))
    ]
    if len(ids) > limits.max_slides:
        raise ExtractionLimitExceeded(f"the .pptx has {len(ids)} slides, over the limit of {limits.max_slides}")
    targets: dict[str, str] = {}
    rels = "ppt/_rels/presentation.xml.rels"
    if rels in names:
        for rel in read_small_part(archive, names[rels], _LABEL).iter(f"{{{_REL}}}Relationship"):
            target = rel.get("Target") or ""
            if rel.get("TargetMode") != "External":
                resolved = target.lstrip("/") if target.startswith("/") else posixpath.normpath(f"ppt/{target}")
                targets[rel.get("Id") or ""] = resolved
    return [targets[rid] for rid in ids if targets.get(rid) in names]


class _Collector:
    """DrawingML paragraphs of one slide, each read whole at its end and freed."""

    def __init__(self, part: str, limits: ExtractionLimits) -> None:
        self.parts: list[str] = []
        self.depth = Depth(part, limits.max_xml_depth)
        self.limits = limits
        self.chars = 0

    def consume(self, events: Events) -> None:
        for event, elem in events:
            if event == "start":
                self.depth.enter()
                continue
            self.depth.leave()
            ns, local = split_tag(elem.tag)
            if ns == _A and local == "p":
                line = "".join(
                    (node.text or "") if split_tag(node.tag)[1] == "t" else "\n"
                    for node in elem.iter(f"{{{_A}}}t", f"{{{_A}}}br")
                )
                self.parts.append(line + "\n")
                self.chars += len(line)
                check_count(self.chars, self.limits, _LABEL)
                free(elem)
            elif ns == _A and local == "tc":
                self.parts.append("\t")
                free(elem)
            elif elem.getparent() is None:
                free(elem)
