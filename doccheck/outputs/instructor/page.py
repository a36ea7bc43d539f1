"""``report.html``: one self-contained page per run for the person who acts on the results.

Why one file: an instructor opens a file from a shared drive or an LMS attachment, often
offline; a page that needs a server, a CDN or a second file breaks there. So the styles,
the script (sorting, "flagged only", search) and the charts (inline SVG drawn here) are in
the page, and a Content-Security-Policy ``default-src 'none'`` with hashes of exactly our
style and script blocks makes the browser refuse any other script, style, image, font or
connection, should an escaping mistake ever let one in.

Every value from the manifest or the service goes through Jinja2 with autoescaping (a
student's file name is untrusted input); the JSON summary embedded in the page escapes
``<``, ``>`` and ``&`` so ``</script>`` in a value cannot close its block.
"""

from __future__ import annotations

import base64
import hashlib
import json
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from importlib import resources
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, Template, select_autoescape
from markupsafe import Markup

from doccheck.outputs.calibration import BANDS, AiRules, Calibration
from doccheck.outputs.instructor.table import FILE_COLUMNS, FLAG_SIMILARITY_SCORE
from doccheck.outputs.reports import META_PREFIX

__all__ = ["PageTally", "generate_report", "render_report"]

_FILE_LABELS = {"similarity_pdf": "similarity PDF", "pdf": "report PDF", "original": "original"}


@lru_cache(maxsize=1)
def _assets() -> tuple[Template, str, str]:
    """The template (autoescaping on for every value), the CSS and the script."""
    folder = resources.files("doccheck.outputs.instructor") / "assets"
    env = Environment(autoescape=select_autoescape(default=True, default_for_string=True))
    template = env.from_string((folder / "report.html.j2").read_text(encoding="utf-8"))
    return (
        template,
        (folder / "report.css").read_text(encoding="utf-8"),
        (folder / "report.js").read_text(encoding="utf-8"),
    )


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def content_security_policy(css: str, js: str) -> str:
    """Nothing may load or connect; only our own style and script blocks may apply/run."""
    return (
        f"default-src 'none'; style-src {_csp_hash(css)}; script-src {_csp_hash(js)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )


def script_json(value: Any) -> Markup:
    """JSON safe inside ``<script>``: ``<``, ``>``, ``&`` and the JS line separators escaped."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    for char, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escaped)
    return Markup(text)


def _histogram(values: Sequence[float], upper: float, title: str, css: str, unit: str = "") -> dict[str, Any]:
    """Ten bins from 0 to ``upper`` as SVG rectangle geometry (numbers only reach the page)."""
    bins = 10
    counts = [0] * bins
    for value in values:
        index = min(bins - 1, max(0, int(value / upper * bins))) if upper else 0
        counts[index] += 1
    width, height, left, bottom, top = 360, 170, 10, 18, 16
    bar_w = (width - 2 * left) / bins
    peak = max(counts) or 1
    bars = []
    for i, count in enumerate(counts):
        h = round((height - bottom - top) * count / peak, 1)
        low, high = upper * i / bins, upper * (i + 1) / bins
        bars.append({"x": round(left + i * bar_w + 1, 1), "y": round(height - bottom - h, 1), "w": round(bar_w - 2, 1),
                     "h": h, "count": count, "label": f"{low:g}{unit} to {high:g}{unit}"})  # fmt: skip
    ticks = [{"x": round(left + i * bar_w, 1), "label": f"{upper * i / bins:g}"} for i in range(0, bins + 1, 2)]
    return {
        "title": title,
        "n": len(values),
        "bars": bars,
        "ticks": ticks,
        "width": width,
        "height": height,
        "css": css,
    }


def _num(value: Any, digits: int) -> str:
    return "" if value is None else f"{float(value):.{digits}f}"


def _columns(meta: Sequence[str]) -> list[dict[str, str]]:
    columns = [
        {"key": "document_id", "label": "Document", "type": "text"},
        {"key": "name", "label": "Name", "type": "text"},
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
    return columns


def _row_cells(row: Mapping[str, Any], meta: Sequence[str], link_prefix: str) -> list[dict[str, Any]]:
    def text(value: Any) -> dict[str, Any]:
        return {"text": "" if value is None else str(value), "sort": "" if value is None else str(value)}

    top = row.get("top_source_title") or row.get("top_source_url")
    top_cell = text(top)
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
    status_cell = text(status)
    if row.get("error_message") and status not in ("submitted", None):
        status_cell["note"] = row["error_message"]
    label_cell = text(None if row.get("ai_band") == "too_short" else row.get("ai_label"))
    if label_cell["text"]:
        label_cell["badge"] = str(row["ai_label"]) if row["ai_label"] in ("ai", "mixed") else "plain"
    peers = row.get("cohort_matched_document_ids")
    return [
        text(row.get("document_id")),
        text(row.get("name")),
        *(text(row.get(m)) for m in meta),
        _band_cell(row),
        label_cell,
        {"text": _num(row.get("similarity_score"), 1), "sort": _num(row.get("similarity_score"), 6), "num": True},
        top_cell,
        {"text": peers or "", "sort": str(row.get("cohort_match_count") or 0)},
        _review_cell(row),
        status_cell,
        {
            "text": "" if row.get("cost_cents") is None else str(row["cost_cents"]),
            "sort": "" if row.get("cost_cents") is None else str(row["cost_cents"]),
            "num": True,
        },  # fmt: skip
        {"text": "", "sort": str(len(links)) if links else "", "links": links},
    ]


# --- AI judging (issue 25): the band cell and the base-rate sentence ---
_BAND_LABELS = {"too_short": "too short to judge", "low": "low", "elevated": "elevated", "high": "high"}


def _band_cell(row: Mapping[str, Any]) -> dict[str, Any]:
    """The band in words (the raw score stays in documents.parquet), sorted in order of concern."""
    band = row.get("ai_band")
    if band is None:
        return {"text": "", "sort": ""}
    cell: dict[str, Any] = {"text": _BAND_LABELS.get(str(band), str(band)), "sort": str(BANDS.index(band))}
    if row.get("ai_note"):
        cell["note"] = row["ai_note"]
    return cell


def _pct(value: float) -> str:
    return f"{value * 100:.1f} %"


def base_rate_text(calibration: Calibration | None, ai_flags: int) -> str:
    """How many of the run's AI flags to expect by chance, in words and numbers (or that it is unknown)."""
    if calibration is not None and calibration.reference_campaign and calibration.false_flag_rate is None:
        return (
            f"The rate of false AI flags is unknown for this run: the reference campaign "
            f"{calibration.reference_campaign!r} has no completed AI scores in the ledger, so the page cannot say "
            f"how many of the {ai_flags} AI flags would be raised even if every student wrote their own work."
        )
    if calibration is None or calibration.false_flag_rate is None:
        return (
            "The rate of false AI flags is unknown for this run: no reference campaign of known-human work "
            "was given (--reference-campaign), so the page cannot say how many of the "
            f"{ai_flags} AI flags would be raised even if every student wrote their own work."
        )
    c, rate = calibration, calibration.false_flag_rate
    low, high = c.expected_false_flags_low or 0.0, c.expected_false_flags_high or 0.0
    expected = c.judged_documents * rate
    return (
        f"At the threshold {c.threshold:g}, {c.reference_flagged} of {c.reference_documents} known-human documents "
        f"of the campaign {c.reference_campaign!r} were flagged ({_pct(rate)}; exact 95 % interval "
        f"{_pct(c.false_flag_rate_low or 0.0)} to {_pct(c.false_flag_rate_high or 0.0)}). "
        f"Of this run's {c.judged_documents} judged documents, expect about {expected:.0f} "
        f"({low:.0f} to {high:.0f}) to be flagged by chance even if every student wrote their own work; "
        f"this run has {ai_flags} AI flags."
    )


def _review_cell(row: Mapping[str, Any]) -> dict[str, Any]:
    """The reviewer's decision, who and when, and the note; marked when about an earlier version."""
    status = row.get("review_status")
    if not status:
        return {"text": "", "sort": ""}
    text = str(status) if row.get("review_current") is not False else f"{status} (earlier version)"
    by = " · ".join(str(v) for v in (row.get("reviewed_by"), row.get("reviewed_at")) if v)
    note = " · ".join(v for v in (by, str(row.get("review_note") or "")) if v)
    return {"text": text, "sort": text, **({"note": note} if note else {})}


# --- end AI judging ---

#: What the page lists of a rejected row.
_REJECTED_KEYS = ("row_number", "document_id", "error_code", "error_message")


class PageTally:
    """What the page shows above and beside its table, counted one document at a time:
    the cards, the two histograms' values and the rejected rows (so the page can be
    written while the documents are read in chunks, never all held at once)."""

    def __init__(self, rules: AiRules | None = None) -> None:
        self.rules = rules or AiRules()
        self.judged = 0  # documents with an AI band past the length gate
        self.ai_flagged = 0  # of those, flagged on AI (label or score)
        self.accepted = 0
        self.flagged = 0
        self.pending = 0
        self.charged = 0
        self.ai_scores = array("d")  # 8 bytes a score
        self.sim_scores = array("d")
        self.rejected: list[Mapping[str, Any]] = []
        self.meta: list[str] = []

    def add(self, documents: Iterable[Mapping[str, Any]]) -> None:
        """Count these rows of :func:`doccheck.outputs.instructor.table.build_documents`."""
        seen = set(self.meta)
        for r in documents:
            for k in r:
                if k not in seen and k.startswith(META_PREFIX):
                    self.meta.append(k)
                    seen.add(k)
            self.charged += int(r.get("cost_cents") or 0)
            if r.get("status") == "rejected":
                self.rejected.append({k: r.get(k) for k in _REJECTED_KEYS})
                continue
            self.accepted += 1
            self.flagged += 1 if r.get("flagged") else 0
            if r.get("ai_band") in ("low", "elevated", "high"):
                self.judged += 1
                score = r.get("ai_score")
                ai_hit = r.get("ai_label") in ("ai", "mixed") or (score is not None and score >= self.rules.threshold)
                self.ai_flagged += 1 if ai_hit else 0
            self.pending += sum(
                1 for p in ("ai_status", "similarity_status") if r.get(p) not in (None, "completed", "failed")
            )
            if r.get("ai_score") is not None:
                self.ai_scores.append(float(r["ai_score"]))
            if r.get("similarity_score") is not None:
                self.sim_scores.append(float(r["similarity_score"]))


class _TableRows:
    """The table's rows for the template: sized (the page says how many) and read again
    from ``documents`` (a callable returning an iterable) as the template writes them."""

    def __init__(self, count: int, documents: Callable[[], Iterable[Mapping[str, Any]]], meta: Sequence[str],
                 link_prefix: str) -> None:  # fmt: skip
        self._count, self._documents, self._meta, self._prefix = count, documents, meta, link_prefix

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for r in self._documents():
            if r.get("status") == "rejected":
                continue
            yield {
                "document_id": r.get("document_id"),
                "flagged": bool(r.get("flagged")),
                "cells": _row_cells(r, self._meta, self._prefix),
            }  # fmt: skip


def render_report(
    documents: Sequence[Mapping[str, Any]],
    *,
    campaign: str,
    run_id: str | None = None,
    status: str | None = None,
    cohort_matches: Sequence[Mapping[str, Any]] | None = None,
    download_failures: Sequence[Mapping[str, Any]] = (),
    spent_cents: int | None = None,
    link_prefix: str = "",
    generated_at: datetime | None = None,
    rules: AiRules | None = None,
    calibration: Calibration | None = None,
) -> str:
    """The HTML text of the report.

    ``documents``: rows of :func:`doccheck.outputs.instructor.table.build_documents` (rejected rows
    included; they are listed in their own section). ``link_prefix`` goes before each file
    link (``""`` in the run folder, ``"../<run folder>/"`` in ``latest/``).
    """
    tally = PageTally(rules)
    tally.add(documents)
    return "".join(
        generate_report(
            tally, lambda: documents, campaign=campaign, run_id=run_id, status=status, cohort_matches=cohort_matches,
            download_failures=download_failures, spent_cents=spent_cents, link_prefix=link_prefix,
            generated_at=generated_at, rules=rules, calibration=calibration,
        )
    )  # fmt: skip


def generate_report(
    tally: PageTally,
    documents: Callable[[], Iterable[Mapping[str, Any]]],
    *,
    campaign: str,
    run_id: str | None = None,
    status: str | None = None,
    cohort_matches: Sequence[Mapping[str, Any]] | None = None,
    download_failures: Sequence[Mapping[str, Any]] = (),
    spent_cents: int | None = None,
    link_prefix: str = "",
    generated_at: datetime | None = None,
    rules: AiRules | None = None,
    calibration: Calibration | None = None,
) -> Iterator[str]:
    """The page of :func:`render_report` as pieces of text, to write as they come.

    ``tally`` has counted every document already; ``documents()`` yields them again (in
    chunks read back from ``documents.parquet``, for a large run) while the table is written.
    A value is never split across pieces, so a piece can be edited on its own.
    """
    template, css, js = _assets()
    rules = rules or tally.rules
    meta = list(tally.meta)
    charged = tally.charged
    flagged = tally.flagged
    cards = [
        {"label": "documents checked", "value": tally.accepted},
        {"label": "flagged for a closer look", "value": flagged, "flag": bool(flagged)},
        {"label": "rows rejected", "value": len(tally.rejected)},
        {"label": "results pending", "value": tally.pending},
        {"label": "charged", "value": f"${(spent_cents if spent_cents is not None else charged) / 100:,.2f}"},
    ]
    pairs = [dict(p) for p in cohort_matches or []]
    pair_columns = list(dict.fromkeys(k for p in pairs for k in p)) if pairs else []
    data = {"campaign": campaign, "run_id": run_id, "documents": tally.accepted, "flagged": flagged,
            "rejected": len(tally.rejected), "charged_cents": charged}  # fmt: skip
    return template.generate(
        csp=content_security_policy(css, js),
        css=Markup(css),
        js=Markup(js),
        campaign=campaign,
        run_id=run_id,
        status=status,
        generated_at=(generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC"),
        cards=cards,
        flag_ai=f"{rules.threshold:g}",
        bounds=rules.bounds,
        base_rate=base_rate_text(calibration, tally.ai_flagged),
        flag_similarity=f"{FLAG_SIMILARITY_SCORE:g}",
        charts=[
            _histogram(tally.ai_scores, 1.0, "AI score", "bar-ai"),
            _histogram(tally.sim_scores, 100.0, "Similarity score (%)", "bar-sim", unit=" %"),
        ],
        columns=_columns(meta),
        rows=_TableRows(tally.accepted, documents, meta, link_prefix),
        pairs=pairs,
        pair_columns=pair_columns,
        pairs_note="No cohort comparison in this run."
        if cohort_matches is None
        else "No two documents of the cohort matched.",
        rejected=tally.rejected,
        download_failures=list(download_failures),
        data_json=script_json(data),
    )
