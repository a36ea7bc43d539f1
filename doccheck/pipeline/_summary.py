"""What a run returns and logs: a plain pydantic summary (no secrets, no texts).

Why a model: the CLI renders it as a table, tests assert on it, the notebook returns it as
a dict, the Prefect UI shows it as the flow's result and as a markdown artifact; one shape
serves all of them.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, Field, computed_field

from doccheck.ledger import describe_contradiction, describe_failure
from doccheck.outputs import count_by_reason, escape_markdown

#: ``field`` of a summary's rejection that is an LMS export's refused entry, not a manifest row.
EXPORT_ENTRY = "export entry"
_Summary = TypeVar("_Summary", bound=BaseModel)


def money_fields(counts: dict[str, Any]) -> dict[str, Any]:
    """The money fields of a summary from ``Ledger.run_summary`` counts."""
    return {name: int(counts.get(name, 0)) for name in ("checks", "charged_cents", "refunded_cents", "net_cents")}


def notice_fields(counts: dict[str, Any]) -> dict[str, Any]:
    """The failures (the service's words) and contradictions of ``Ledger.run_summary`` counts."""
    return {name: list(counts.get(name) or []) for name in ("product_failures", "contradictions")}


def export_rejections(manifest: str | None) -> list[dict[str, str | int | None]]:
    """The refused entries of the LMS export ``manifest`` was derived from, as summary rejections.

    They are in the export's sidecar (:func:`doccheck.sources.lms.read_sidecar`), not in the
    manifest: a hostile, unsupported or nested-zip entry never becomes a manifest row. Empty
    for a manifest that is not an export's.
    """
    from doccheck.sources.lms import read_sidecar

    sidecar = read_sidecar(manifest) or {}
    return [
        {"row": None, "document_id": r.get("document_id"), "field": EXPORT_ENTRY, "code": r.get("code"),
         "reason": r.get("reason")}
        for r in sidecar.get("rejected") or []
    ]  # fmt: skip


def with_export_rejections(summary: _Summary) -> _Summary:
    """``summary`` (a run's or a dry run's) with its export's refused entries counted in ``rejected``
    and listed in ``rejections``, as the reports list them (``status = rejected`` rows).

    Idempotent: a summary that already lists them is returned as it is.
    """
    rejections: list[dict[str, Any]] = list(getattr(summary, "rejections", []))
    if any(r.get("field") == EXPORT_ENTRY for r in rejections):
        return summary
    extra = export_rejections(getattr(summary, "manifest", None))
    if not extra:
        return summary
    modes = dict(getattr(summary, "counts_by_mode", {}))
    if "rejected" in modes:
        modes["rejected"] += len(extra)
    return summary.model_copy(
        update={
            "rejected": int(getattr(summary, "rejected", 0)) + len(extra),
            "rejections": [*rejections, *extra],
            "counts_by_mode": modes,
        }
    )


class RunSummary(BaseModel):
    """The outcome of a run (``bulk_check``, ``doccheck run``, ``check_dataframe``) or of ``collect_results``.

    ``status``: ``planned`` (dry run, nothing sent), ``finished`` (every accepted product
    has a terminal outcome), ``pending`` (some are still processing: run
    ``doccheck collect`` later), ``submitted`` (``wait=False``), ``incomplete`` (documents
    left unsent at the submit deadline: ``unsent_retry_later`` after transient errors,
    ``in_flight_elsewhere`` held by another run; run the same command again; ``in_doubt``
    whose earlier request may have made a check no lookup could find or rule out: settle
    them with ``doccheck resolve``).
    """

    status: str
    campaign: str
    manifest: str | None = None
    run_id: str | None = None
    dry_run: bool = False
    documents: int = 0
    rejected: int = 0
    counts_by_mode: dict[str, int] = Field(default_factory=dict)
    #: Files sent as the text doccheck read from them: the service does not take their type.
    as_text: int = 0
    #: Files whose name says another type than their bytes (read as what they are, said in the report).
    misnamed: int = 0
    total_words: int = 0
    estimated_cost_cents: int = 0
    submitted: int = 0
    reused: int = 0
    submit_failed: int = 0
    unsent_budget: int = 0
    unsent_retry_later: int = 0
    in_flight_elsewhere: int = 0
    in_doubt: int = 0
    #: Why the documents in doubt could not be settled (the service's mismatch, at most 3
    #: distinct messages), so that the run's output names it next to ``doccheck resolve``.
    in_doubt_reasons: list[str] = Field(default_factory=list)
    products: dict[str, dict[str, int]] = Field(default_factory=dict)
    #: Failed products with the service's own words (``doccheck.ledger._notices``, first 20).
    product_failures: list[dict[str, Any]] = Field(default_factory=list)
    #: Deliveries that contradicted a final status, and what the service said (first 20).
    contradictions: list[dict[str, Any]] = Field(default_factory=list)
    pending: int = 0
    #: ``collect_results``: what polling could not read, one line per kind of error
    #: (``doccheck.pipeline.collecting._results.describe_poll_errors``): a 404 on every poll is named, not "pending".
    poll_errors: list[str] = Field(default_factory=list)
    #: True when waiting ended at ``waiting.timeout`` with products still pending.
    timed_out: bool = False
    spent_cents: int = 0
    #: Money as the service counts it, over the distinct checks of the run's documents
    #: (rows sharing a check count it once; a check made by an earlier run counts too).
    checks: int = 0
    charged_cents: int = 0
    refunded_cents: int = 0
    net_cents: int = 0
    #: ``collect_results``: how many runs' reports were rewritten (by campaign: every run
    #: with a pending product, and the latest).
    runs_collected: int = 0
    report_dir: str | None = None
    latest_dir: str | None = None
    elapsed_seconds: float = 0.0
    rejections: list[dict[str, str | int | None]] = Field(default_factory=list)
    #: The instructor's page (``report.html`` in the run folder) and what ``download`` fetched.
    report_html: str | None = None
    downloads: dict[str, Any] | None = None
    #: local near-duplicate pairs (doccheck.matching.summary_of): counts per kind + the top pairs
    cohort_matches: dict[str, Any] = Field(default_factory=dict)
    #: Where the run ran: a Prefect flow run, or this process with the library's steps.
    orchestration: str = ""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def not_checked(self) -> dict[str, int]:
        """The rows not checked, by reason in words (:func:`doccheck.outputs.count_by_reason`)."""
        return count_by_reason(self.rejections)

    def as_markdown(self) -> str:
        """A short markdown table for the Prefect UI (an artifact)."""
        rows = [
            ("status", self.status),
            ("campaign", self.campaign),
            ("run id", self.run_id or "-"),
            ("documents accepted", self.documents),
            ("rows rejected", self.rejected),
            ("modes", ", ".join(f"{k} {v}" for k, v in self.counts_by_mode.items() if k != "rejected")),
            *([("files sent as their text", self.as_text)] if self.as_text else []),
            *([("files misnamed (read as what they are)", self.misnamed)] if self.misnamed else []),
            *(("not checked", f"{n}: {reason}") for reason, n in self.not_checked.items()),  # escaped
            ("words", self.total_words),
            ("estimated cost (cents)", self.estimated_cost_cents),
        ]
        if self.cohort_matches:
            c = self.cohort_matches
            rows.append(
                (
                    "cohort pairs (local)",
                    f"{c.get('pairs', 0)}: identical {c.get('identical', 0)}, "
                    f"near-duplicate {c.get('near_duplicate', 0)}, copied section {c.get('copied_section', 0)}",
                )
            )
        if not self.dry_run:
            rows += [
                ("new checks", self.submitted),
                ("documents already submitted", self.reused),
                ("documents not submitted (errors)", self.submit_failed),
                ("documents left unsent (budget)", self.unsent_budget),
                ("documents left unsent (retry later)", self.unsent_retry_later + self.in_flight_elsewhere),
                ("documents in doubt (doccheck resolve)", self.in_doubt),
                ("products pending", self.pending),
                ("checks", self.checks),
                ("charged (cents)", self.charged_cents),
                ("refunded (cents)", self.refunded_cents),
                ("net cost (cents)", self.net_cents),
                ("new charges this run (cents)", self.spent_cents),
            ]
            for product, counts in sorted(self.products.items()):
                rows.append((f"{product}", ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))))
            rows += [("failed", describe_failure(f)) for f in self.product_failures]
            rows += [("contradicted", describe_contradiction(c)) for c in self.contradictions]
            if self.report_dir:
                rows.append(("reports", self.report_dir))
        lines = [
            "| | |",
            "|---|---|",
            *(f"| {k} | {escape_markdown(v)} |" for k, v in rows),
        ]  # values may come from the manifest
        return "\n".join(lines)


def products_from_summary(raw: dict[str, Any]) -> dict[str, dict[str, int]]:
    """The ledger's counts ``{"ai": {"completed": 3}}`` as they are; a summary stored by an
    older doccheck (``{"ai_completed": 3}``) is read by its LAST ``_`` (a status has none,
    a product may: ``ai_detection``)."""
    out: dict[str, dict[str, int]] = {}
    for key, value in raw.items():
        if isinstance(value, dict):
            out.setdefault(key, {}).update({str(k): int(v) for k, v in value.items()})
            continue
        product, _, status = key.rpartition("_")
        out.setdefault(product or key, {})[status or "unknown"] = int(value)
    return out
