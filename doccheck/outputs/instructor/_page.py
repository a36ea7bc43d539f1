"""``report.html``: the run's self-contained entry page for the person who acts on the
results, and, when the run is grouped (``--group-by``), one small page per group beside it.

Why self-contained files: an instructor opens a file from a shared drive or an LMS attachment, often
offline; a page that needs a server, a CDN or a second file breaks there. So the styles,
the script (sorting, "flagged only", search) and the charts (inline SVG drawn here) are in
the page, and a Content-Security-Policy ``default-src 'none'`` with hashes of exactly our
style and script blocks makes the browser refuse any other script, style, image, font or
connection, should an escaping mistake ever let one in.

Every value from the manifest or the service goes through Jinja2 with autoescaping (a
student's file name is untrusted input); the JSON summary embedded in the page escapes
``<``, ``>`` and ``&`` so ``</script>`` in a value cannot close its block. The documents
table's rows are embedded as data and shown a screenful at a time (see
:mod:`doccheck.outputs.instructor._table_view`), so a page opens at once at any run size.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from importlib import resources
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from doccheck.outputs._calibration import AiRules, Calibration
from doccheck.outputs.instructor._documents_table import FLAG_SIMILARITY_SCORE
from doccheck.outputs.instructor._table_view import columns, row_cells, row_html, row_json
from doccheck.outputs.instructor._tally import GroupCounts, PageTally, checked

__all__ = ["PageTally", "generate_group_page", "generate_report", "render_report", "run_line"]

_LMS_NAMES = {"moodle": "Moodle", "canvas": "Canvas", "blackboard": "Blackboard", "plain": "plain-files"}
#: Cohort pairs and rejected rows listed on the entry page (the rest: in the Parquet/CSV files).
LISTED_ROWS = 1000


@lru_cache(maxsize=1)
def _assets() -> tuple[Environment, str, str]:
    """The templates (autoescaping on for every value), the CSS and the script."""
    folder = resources.files("doccheck.outputs.instructor") / "assets"
    env = Environment(
        loader=PackageLoader("doccheck.outputs.instructor", "assets"),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    return (
        env,
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


def _cards(tally: PageTally, spent_cents: int | None) -> list[dict[str, Any]]:
    charged = spent_cents if spent_cents is not None else tally.charged
    cards: list[dict[str, Any]] = [
        {"label": "documents checked", "value": tally.accepted},
        {"label": "flagged for a closer look", "value": tally.flagged, "flag": bool(tally.flagged)},
        {"label": "flagged, no decision yet", "value": tally.undecided, "flag": bool(tally.undecided)},
        {"label": "rows rejected", "value": len(tally.rejected)},
        *([{"label": "checked as extracted text", "value": tally.as_text}] if tally.as_text else []),
        *([{"label": "files misnamed (read as what they are)", "value": tally.misnamed}] if tally.misnamed else []),
        {"label": "results pending", "value": tally.pending},
        {"label": "charged", "value": f"${charged / 100:,.2f}"},
    ]
    if tally.students:
        cards.insert(1, {"label": "students", "value": len(tally.students)})
    return cards


class DocumentsTable:
    """The documents table of a page: the rows of most concern as HTML, every row as data.

    ``documents()`` yields the rows (again, in chunks read back from ``documents.parquet``
    for a large run) while the template writes the data block, one row at a time."""

    def __init__(self, tally: PageTally, documents: Callable[[], Iterable[Mapping[str, Any]]], link_prefix: str,
                 static: Sequence[Mapping[str, Any]] | None = None) -> None:  # fmt: skip
        self.meta, self.lms, self.total = list(tally.meta), tally.lms, tally.accepted
        self.columns = columns(self.meta, self.lms)
        self._documents, self._prefix = documents, link_prefix
        chosen = tally.concern.rows() if static is None else static
        #: The cells of the rows shown as HTML, by the row object, for their JSON too (a group's
        #: page shows most of its rows both ways); the row is kept so that its id stays its own.
        self._cells: dict[int, tuple[Mapping[str, Any], list[dict[str, Any]]]] = {}
        self.static = []
        for r in chosen:
            cells = row_cells(r, self.meta, link_prefix, self.lms)
            self._cells[id(r)] = (r, cells)
            self.static.append(row_html(r, self.meta, link_prefix, self.lms, cells=cells))

    def data(self) -> Iterator[Markup]:
        """Each accepted row as JSON text (escaped for ``<script>``: see ``row_json``)."""
        for r in self._documents():
            if checked(r):
                kept = self._cells.get(id(r))
                cells = kept[1] if kept is not None and kept[0] is r else None
                yield Markup(row_json(r, self.meta, self._prefix, self.lms, cells=cells))


def _common(tally: PageTally, campaign: str, run_id: str | None, status: str | None,
            generated_at: datetime | None) -> dict[str, Any]:  # fmt: skip
    _, css, js = _assets()
    return {
        "csp": content_security_policy(css, js),
        "css": Markup(css),
        "js": Markup(js),
        "campaign": campaign,
        "run_id": run_id,
        "status": status,
        "generated_at": (generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC"),
        "export": {"lms": _LMS_NAMES.get(tally.export[0], tally.export[0]), "name": tally.export[1]}
        if tally.export
        else None,
    }


def run_line(tally: PageTally, campaign: str, run_id: str | None, status: str | None,
             generated_at: datetime | None = None) -> str:  # fmt: skip
    """The line under a page's title that names the run (``_run_line.html.j2``): what a page
    taken from an earlier run's folder gets anew (doccheck.outputs._reuse)."""
    env, _, _ = _assets()
    return env.get_template("_run_line.html.j2").render(**_common(tally, campaign, run_id, status, generated_at))


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
    """The HTML text of an ungrouped report.

    ``documents``: rows of :func:`doccheck.outputs.instructor._documents_table.build_documents` (rejected rows
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
    group_prefix: str = "",
    generated_at: datetime | None = None,
    rules: AiRules | None = None,
    calibration: Calibration | None = None,
    evidence_html: str = "",
) -> Iterator[str]:
    """The entry page (``report.html``) as pieces of text, to write as they come.

    ``tally`` has counted every document already. Grouped (``tally.grouped``): the page lists
    the groups, each linked to ``group_prefix + groups/<slug>.html``, and has no documents
    table; else ``documents()`` yields the rows again while the table's data is written.
    A value is never split across pieces, so a piece can be edited on its own.
    ``evidence_html``: the cohort pairs' shared passages (:mod:`doccheck.outputs.instructor._evidence`).
    """
    env, _, _ = _assets()
    rules = rules or tally.rules
    pairs = [dict(p) for p in (cohort_matches or [])[:LISTED_ROWS]]
    data = {"campaign": campaign, "run_id": run_id, "documents": tally.accepted, "flagged": tally.flagged,
            "rejected": len(tally.rejected), "charged_cents": tally.charged}  # fmt: skip
    groups = [_group_line(g, group_prefix) for g in tally.groups_by_concern()] if tally.grouped else []
    return env.get_template(
        "report.html.j2"
    ).generate(
        **_common(tally, campaign, run_id, status, generated_at),
        cards=_cards(tally, spent_cents),
        flag_ai=f"{rules.threshold:g}",
        bounds=rules.bounds,
        base_rate=base_rate_text(calibration, tally.ai_flagged),
        flag_similarity=f"{FLAG_SIMILARITY_SCORE:g}",
        charts=[
            _histogram(tally.ai_scores, 1.0, "AI score", "bar-ai"),
            _histogram(tally.sim_scores, 100.0, "Similarity score (%)", "bar-sim", unit=" %"),
        ],
        group_by=tally.group_by,
        groups=groups,
        show_students=bool(tally.students),
        table=None if tally.grouped else DocumentsTable(tally, documents, link_prefix),
        pairs=pairs,
        pairs_total=len(cohort_matches or []),
        pair_columns=list(dict.fromkeys(k for p in pairs for k in p)) if pairs else [],
        pairs_note="No cohort comparison in this run."
        if cohort_matches is None
        else "No two documents of the cohort matched.",
        evidence=Markup(evidence_html),  # noqa: S704 - rendered escaped by evidence.render_evidence
        rejected=tally.rejected[:LISTED_ROWS],
        rejected_total=len(tally.rejected),
        not_checked_reasons=tally.by_reason.most_common(),
        not_checked=tally.not_checked[:LISTED_ROWS],
        not_checked_total=len(tally.not_checked),
        download_failures=list(download_failures)[:LISTED_ROWS],
        download_failures_total=len(download_failures),
        data_json=script_json(data),
    )


def _group_line(group: GroupCounts, prefix: str) -> dict[str, Any]:
    return {"name": group.name, "href": f"{prefix}groups/{group.slug}.html", "documents": group.documents,
            "students": len(group.students), "flagged": group.flagged, "undecided": group.undecided,
            "reviewed": group.reviewed, "pending": group.pending, "rejected": group.rejected,
            "charged": f"${group.charged_cents / 100:,.2f}"}  # fmt: skip


def generate_group_page(
    group: GroupCounts,
    rows: Sequence[Mapping[str, Any]],
    *,
    tally: PageTally,
    campaign: str,
    run_id: str | None = None,
    status: str | None = None,
    link_prefix: str = "../",
    generated_at: datetime | None = None,
) -> Iterator[str]:
    """One group's page (``groups/<slug>.html``): its counts and every one of its rows (all of
    them as HTML too when there are few: a group's page is small, readable without scripts)."""
    env, _, _ = _assets()
    group_tally = PageTally(tally.rules)
    group_tally.meta = list(tally.meta)  # the run's columns, in the run's order
    group_tally.add(rows)
    group_tally.lms = tally.lms
    accepted = [r for r in rows if checked(r)]
    table = DocumentsTable(group_tally, lambda: accepted, link_prefix)
    return env.get_template("group.html.j2").generate(
        **_common(tally, campaign, run_id, status, generated_at),
        group=_group_line(group, ""),
        group_by=tally.group_by,
        cards=_cards(group_tally, None),
        table=table,
    )
