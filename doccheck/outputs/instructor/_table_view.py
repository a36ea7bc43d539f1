"""What the page's documents table shows: the columns, each row's cells, the order of concern,
and the compact rows the page's script pages through.

Why rows as data: a term's run has 100,000 documents, and a browser that lays out 100,000
table rows takes a minute to open the page and seconds per sort. So every page embeds its
rows once as JSON (``<script type="application/json">``, never executed) and the script
shows one screenful at a time, sorting and filtering the arrays, not the DOM. What matters
is still in the HTML for a reader without scripts and for print: the first
:data:`STATIC_ROWS` rows in order of concern (flagged and undecided first), rendered by the
template as before; a group's page (small) has all its rows there.

The script writes every value with ``textContent``/``setAttribute`` (never as markup), and
file links are our own relative paths with the file name percent-encoded, so a student's
file name cannot become markup or a ``javascript:`` link.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from markupsafe import Markup, escape

from doccheck.outputs._calibration import BANDS
from doccheck.outputs._parquet_reports import META_PREFIX
from doccheck.outputs.instructor._documents_table import FILE_COLUMNS

__all__ = ["STATIC_ROWS", "ConcernRows", "columns", "concern", "row_cells", "row_html", "row_json"]

#: Rows rendered as HTML (readable with scripts off and printed): the rest are in the JSON.
STATIC_ROWS = 200
_FILE_LABELS = {"similarity_pdf": "similarity PDF", "pdf": "report PDF", "original": "original"}
_BAND_LABELS = {"too_short": "too short to judge", "low": "low", "elevated": "elevated", "high": "high"}
#: LMS columns shown when a run has them (an export's run): who, and whether it was late.
_LMS_COLUMNS = (("student", "Student", "text"), ("late", "Late", "text"), ("attempt", "Attempt", "text"))


def concern(row: Mapping[str, Any]) -> int:
    """0: flagged and nobody decided yet; 1: flagged, a decision recorded; 2: not flagged."""
    if not row.get("flagged"):
        return 2
    decided = row.get("review_status") and row.get("review_current") is not False
    return 1 if decided else 0


class ConcernRows:
    """The first ``limit`` rows in order of concern (then in the run's order), kept while the
    rows stream past: what the template renders as HTML."""

    def __init__(self, limit: int = STATIC_ROWS) -> None:
        self.limit = limit
        self._by_class: tuple[list[Mapping[str, Any]], ...] = ([], [], [])

    def add(self, row: Mapping[str, Any]) -> None:
        kept = self._by_class[concern(row)]
        if len(kept) < self.limit:
            kept.append(row)

    def rows(self) -> list[Mapping[str, Any]]:
        return [r for kept in self._by_class for r in kept][: self.limit]


def columns(meta: Sequence[str], lms: bool = False) -> list[dict[str, str]]:
    """The table's columns (``meta``: the manifest's metadata columns; ``lms``: an export's run)."""
    return [
        {"key": "document_id", "label": "Document", "type": "text"},
        {"key": "name", "label": "Name", "type": "text"},
        *({"key": key, "label": label, "type": kind} for key, label, kind in (_LMS_COLUMNS if lms else ())),
        *({"key": m, "label": m[len(META_PREFIX) :], "type": "text"} for m in meta),
        {"key": "ai_band", "label": "AI band", "type": "number"},
        {"key": "ai_label", "label": "AI label", "type": "text"},
        {"key": "similarity_score", "label": "Similarity %", "type": "number"},
        {"key": "top_source", "label": "Top source", "type": "text"},
        {"key": "cohort", "label": "Cohort matches", "type": "number"},
        {"key": "review", "label": "Review", "type": "text"},
        {"key": "status", "label": "Status", "type": "text"},
        {"key": "cost_cents", "label": "Cost (¢)", "type": "number"},
        {"key": "files", "label": "Files", "type": "text"},
    ]


def _num(value: Any, digits: int) -> str:
    return "" if value is None else f"{float(value):.{digits}f}"


def _text(value: Any) -> dict[str, Any]:
    return {"text": "" if value is None else str(value), "sort": "" if value is None else str(value)}


def row_cells(row: Mapping[str, Any], meta: Sequence[str], link_prefix: str, lms: bool = False) -> list[dict[str, Any]]:
    """The cells of one row, in :func:`columns` order: ``text`` shown, ``sort`` compared,
    ``note`` under it, ``badge``, ``links`` (``link_prefix`` + the file's path), ``num``."""
    top = row.get("top_source_title") or row.get("top_source_url")
    top_cell = _text(top)
    if row.get("top_source_matched_document_id"):
        top_cell["note"] = f"cohort: {row['top_source_matched_document_id']}"
    if row.get("top_source_percent") is not None and top:
        top_cell["text"] = f"{top} ({row['top_source_percent']:g} %)"
    links = [
        {"href": link_prefix + quote(str(row[column])), "label": _FILE_LABELS[kind]}
        for kind, column in FILE_COLUMNS.items()
        if row.get(column)
    ]
    status = row.get("status")
    said = row.get("status_text")
    status_cell = {**_text(said or status), "sort": "" if status is None else str(status)}
    if row.get("error_message") and status not in ("submitted", None) and row["error_message"] not in (said or ""):
        status_cell["note"] = row["error_message"]
    elif row.get("product_notes"):
        status_cell["note"] = row["product_notes"]  # next to the document whose product failed
    label_cell = _text(None if row.get("ai_band") == "too_short" else row.get("ai_label"))
    if label_cell["text"]:
        label_cell["badge"] = str(row["ai_label"]) if row["ai_label"] in ("ai", "mixed") else "plain"
    peers = row.get("cohort_matched_document_ids")
    cost = row.get("cost_cents")
    return [
        _text(row.get("document_id")),
        _text(row.get("name")),
        *(_lms_cells(row) if lms else ()),
        *(_text(row.get(m)) for m in meta),
        _band_cell(row),
        label_cell,
        {"text": _num(row.get("similarity_score"), 1), "sort": _num(row.get("similarity_score"), 6), "num": True},
        top_cell,
        {"text": peers or "", "sort": str(row.get("cohort_match_count") or 0)},
        _review_cell(row),
        status_cell,
        {"text": "" if cost is None else str(cost), "sort": "" if cost is None else str(cost), "num": True},
        {"text": "", "sort": str(len(links)) if links else "", "links": links},
    ]


def _lms_cells(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    late = row.get("late")
    late_cell = _text(None if late is None else ("late" if late else "on time"))
    if late:
        late_cell["badge"] = "flag"
    return [_text(row.get("student")), late_cell, _text(row.get("attempt"))]


def _band_cell(row: Mapping[str, Any]) -> dict[str, Any]:
    """The band in words (the raw score stays in documents.parquet), sorted in order of concern."""
    band = row.get("ai_band")
    if band is None:
        return {"text": "", "sort": ""}
    cell: dict[str, Any] = {"text": _BAND_LABELS.get(str(band), str(band)), "sort": str(BANDS.index(band))}
    if row.get("ai_note"):
        cell["note"] = row["ai_note"]
    return cell


def _review_cell(row: Mapping[str, Any]) -> dict[str, Any]:
    """The reviewer's decision, who and when, and the note; marked when about an earlier version."""
    status = row.get("review_status")
    if not status:
        return {"text": "", "sort": ""}
    text = str(status) if row.get("review_current") is not False else f"{status} (earlier version)"
    by = " · ".join(str(v) for v in (row.get("reviewed_by"), row.get("reviewed_at")) if v)
    note = " · ".join(v for v in (by, str(row.get("review_note") or "")) if v)
    return {"text": text, "sort": text, **({"note": note} if note else {})}


def _compact(cell: Mapping[str, Any]) -> Any:
    """A cell as the script reads it: its text alone when that is all it has, else an object
    with short keys (t text, s sort, n note, b badge, l links as [href, label], c numeric)."""
    text, sort = cell.get("text", ""), cell.get("sort", "")
    extra = cell.get("note") or cell.get("badge") or cell.get("links") or cell.get("num")
    if not extra and text == sort:
        return text
    out: dict[str, Any] = {"t": text}
    if sort != text:
        out["s"] = sort
    for key, short in (("note", "n"), ("badge", "b")):
        if cell.get(key):
            out[short] = cell[key]
    if cell.get("links"):
        out["l"] = [[link["href"], link["label"]] for link in cell["links"]]
    if cell.get("num"):
        out["c"] = 1
    return out


#: Characters that must not appear raw inside ``<script>`` (the JSON stays valid JSON).
_SCRIPT_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                                 "\u2029": "\\u2029"})  # fmt: skip


def row_json(
    row: Mapping[str, Any], meta: Sequence[str], link_prefix: str, lms: bool = False,
    cells: Sequence[Mapping[str, Any]] | None = None,
) -> str:  # fmt: skip
    """One row for the page's JSON block: ``[concern, document_id, cell, ...]``, safe in ``<script>``.
    ``cells``: the row's :func:`row_cells`, when the caller has them already."""
    compact = [_compact(c) for c in (cells if cells is not None else row_cells(row, meta, link_prefix, lms))]
    text = json.dumps([concern(row), row.get("document_id"), *compact], ensure_ascii=False, separators=(",", ":"))
    return text.translate(_SCRIPT_ESCAPES)


def _escaped(value: Any) -> str:
    """``markupsafe.escape(value)`` as a plain string (the same five entities), without a
    ``Markup`` object a value: a term's group pages escape ~600,000 of them."""
    if hasattr(value, "__html__"):
        return str(escape(value))
    text = str(value)
    if not _HTML_SPECIAL.isdisjoint(text):
        text = text.translate(_HTML_ESCAPES)
    return text


_HTML_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "'": "&#39;", '"': "&#34;"})
_HTML_SPECIAL = frozenset("&<>'\"")


def _cell_html(cell: Mapping[str, Any]) -> str:
    text = _escaped(cell.get("text", ""))
    if cell.get("badge"):
        inner = f'<span class="badge {_escaped(cell["badge"])}">{text}</span>'
    elif cell.get("links"):
        anchors = "".join(f'<a href="{_escaped(link["href"])}">{_escaped(link["label"])}</a>' for link in cell["links"])
        inner = f'<span class="files">{anchors}</span>'
    else:
        inner = text
    if cell.get("note"):
        inner += f'<br><span class="muted">{_escaped(cell["note"])}</span>'
    num = ' class="num"' if cell.get("num") else ""
    return f'<td data-value="{_escaped(cell.get("sort", ""))}"{num}>{inner}</td>'


def row_html(
    row: Mapping[str, Any], meta: Sequence[str], link_prefix: str, lms: bool = False,
    cells: Sequence[Mapping[str, Any]] | None = None,
) -> Markup:  # fmt: skip
    """One row as the table's HTML (every value escaped): what a reader without scripts sees.
    Written here rather than in the template: a term's group pages have 40,000 of them.
    ``cells``: the row's :func:`row_cells`, when the caller has them already."""
    flagged = bool(row.get("flagged"))
    shown = cells if cells is not None else row_cells(row, meta, link_prefix, lms)
    html = "".join(_cell_html(c) for c in shown)
    attributes = f'data-flagged="{1 if flagged else 0}" data-document-id="{_escaped(row.get("document_id") or "")}"'
    marked = ' class="flagged"' if flagged else ""
    return Markup(f"<tr {attributes}{marked}>{html}</tr>\n")
