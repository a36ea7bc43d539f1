"""Report rows built from the ledger alone, so ``collect_results`` can rewrite the
reports of a run long after the manifest and the process that planned it are gone.

The column names are the issue's report schemas (``doccheck.reports`` owns the pyarrow
types); every accepted document of the run appears in ``submissions`` (with its state,
or the reason it was not sent), every rejected row too, and every product of every
check appears in the product tables, as ``pending`` with its check id until it is final.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, cast

from sqlmodel import Session, col, select

from doccheck.domain import ProductState, SubmissionState
from doccheck.ledger.money import money_of_checks
from doccheck.ledger.signatures import cohort_match_rows, document_ids_for_checks
from doccheck.ledger.tables import DocumentRow, OutcomeRow, RejectionRow, RunRow, SubmissionRow

if TYPE_CHECKING:
    from doccheck.ledger._base import LedgerBase as Ledger  # any part of the facade will do: only session() is used

#: Submission ``status`` values of the report (the ledger state, plus ``rejected`` rows
#: and ``unsent`` for a planned document that no batch reached).
STATE_TO_STATUS: dict[str, str] = {
    SubmissionState.PLANNED: "unsent",
    SubmissionState.SUBMITTING: "unsent",
    SubmissionState.UPLOADING: "unsent",
    SubmissionState.SUBMITTED: "submitted",
    SubmissionState.FAILED: "failed",
    SubmissionState.REJECTED: "rejected",
    SubmissionState.SKIPPED_BUDGET: "skipped_budget",
}


def _resolve_run(s: Session, run_id: str | None, campaign: str | None) -> str:
    if run_id is not None:
        if s.get(RunRow, run_id) is None:
            raise KeyError(f"unknown run id {run_id!r}")
        return run_id
    if campaign is None:
        raise ValueError("give a run_id or a campaign")
    run = s.exec(select(RunRow).where(RunRow.campaign == campaign).order_by(col(RunRow.started_at).desc())).first()
    if run is None:
        raise KeyError(f"no run recorded for campaign {campaign!r}")
    return run.id


def _product_status(o: OutcomeRow) -> str:
    """``completed``/``failed`` only when the result is in the ledger, else ``pending``."""
    if o.status == ProductState.FAILED:
        return "failed"
    if o.status == ProductState.COMPLETED and o.fetched:
        return "completed"
    return "pending"


def build_report_rows(
    ledger: Ledger, *, run_id: str | None = None, campaign: str | None = None
) -> dict[str, list[dict[str, Any]]]:
    """``{"submissions", "ai_results", "similarity_results", "similarity_sources", "cohort_matches"}`` row lists."""
    with ledger.session() as s:
        rid = _resolve_run(s, run_id, campaign)
        docs = s.exec(select(DocumentRow).where(DocumentRow.run_id == rid).order_by(col(DocumentRow.row_number))).all()
        rejections = s.exec(
            select(RejectionRow).where(RejectionRow.run_id == rid).order_by(col(RejectionRow.row_number))
        ).all()
        keys = select(DocumentRow.idempotency_key).where(DocumentRow.run_id == rid)
        subs = {
            r.idempotency_key: r
            for r in s.exec(select(SubmissionRow).where(col(SubmissionRow.idempotency_key).in_(keys))).all()
        }
        check_ids = select(SubmissionRow.check_id).where(col(SubmissionRow.idempotency_key).in_(keys))
        outcomes: dict[tuple[str, str], OutcomeRow] = {
            (o.check_id, o.product): o
            for o in s.exec(select(OutcomeRow).where(col(OutcomeRow.check_id).in_(check_ids))).all()
        }
        money = money_of_checks(
            s.connection(), (r.check_id for r in subs.values() if r.state == SubmissionState.SUBMITTED and r.check_id)
        )

    submissions: list[dict[str, Any]] = []
    ai: list[dict[str, Any]] = []
    sim: list[dict[str, Any]] = []
    sources: list[dict[str, Any]] = []
    counted: set[str] = set()
    for d in docs:
        sub = subs.get(d.idempotency_key)
        state = sub.state if sub else SubmissionState.PLANNED
        check_id = sub.check_id if sub and state == SubmissionState.SUBMITTED else None
        words = (sub.words if sub and sub.words is not None else None) or d.words
        charged, refunded = _row_money(check_id, sub, money, counted)
        submissions.append(
            {
                "document_id": d.document_id,
                "row_number": d.row_number,
                "mode": (sub.mode if sub and sub.mode else d.mode),
                "idempotency_key": d.idempotency_key,
                "check_id": check_id,
                "products": list(d.products),
                "status": STATE_TO_STATUS.get(state, state),
                "error_code": sub.error_code if sub and state != SubmissionState.SUBMITTED else None,
                "error_message": sub.error_message if sub and state != SubmissionState.SUBMITTED else None,
                "words": words,
                "cost_cents": charged - refunded,
                "charged_cents": charged,
                "refunded_cents": refunded,
                "net_cents": charged - refunded,
            }
        )
        if check_id is None:
            continue
        for product in d.products:
            o = outcomes.get((check_id, product))
            status = _product_status(o) if o else "pending"
            common = {
                "document_id": d.document_id,
                "check_id": check_id,
                "status": status,
                "completed_at": o.completed_at if o and status != "pending" else None,
                "error_code": o.error_code if o else None,
            }
            if product == "ai":
                ai.append(
                    {
                        **common,
                        "score": o.score if o and status == ProductState.COMPLETED else None,
                        "label": o.label if o and status == ProductState.COMPLETED else None,
                        "words": words,
                    }
                )
            elif product == "similarity":
                done = o is not None and status == ProductState.COMPLETED
                srcs = (o.sources or []) if done and o else []
                sim.append(
                    {
                        **common,
                        "score": o.score if done and o else None,
                        "matched_words": o.matched_words if done and o else None,
                        "source_count": (o.source_count if o.source_count is not None else len(srcs))
                        if done and o
                        else None,
                    }
                )
                for src in srcs:
                    sources.append(
                        {
                            "document_id": d.document_id,
                            "check_id": check_id,
                            "source_id": src.get("source_id"),
                            "title": src.get("title"),
                            "url": src.get("url"),
                            "kind": src.get("kind"),
                            "matched_words": src.get("matched_words"),
                            "percent": src.get("percent"),
                        }
                    )
    with ledger.session() as s:
        own = document_ids_for_checks(s, None, (src["source_id"] for src in sources if src.get("kind") == "submission"))
        matches = cohort_match_rows(s, rid)
    for src in sources:
        src["matched_document_id"] = own.get(src["source_id"]) if src.get("kind") == "submission" else None
    for r in rejections:
        submissions.append(
            {
                "document_id": r.document_id,
                "row_number": r.row_number,
                "mode": "rejected",
                "idempotency_key": None,
                "check_id": None,
                "products": [],
                "status": "rejected",
                "error_code": r.code,
                "error_message": r.reason,
                "words": None,
                "cost_cents": 0,
                "charged_cents": 0,
                "refunded_cents": 0,
                "net_cents": 0,
            }
        )
    return {"submissions": submissions, "ai_results": ai, "similarity_results": sim, "similarity_sources": sources,
            "cohort_matches": matches}  # fmt: skip


def _row_money(
    check_id: str | None, sub: SubmissionRow | None, money: dict[str, tuple[int, int]], counted: set[str]
) -> tuple[int, int]:
    """``(charged, refunded)`` of a report row: the check's money on the first row that
    points at it, 0 on the others (rows sharing a check are billed once). A ledger
    written before ``check_costs`` existed falls back to the submission's charge."""
    if check_id is None or check_id in counted:
        return 0, 0
    counted.add(check_id)
    if check_id in money:
        return money[check_id]
    return int(sub.cost_cents or 0) if sub is not None else 0, 0


def build_report_tables(ledger: Ledger, *, run_id: str | None = None, campaign: str | None = None) -> Any:
    """The rows wrapped in ``doccheck.reports.ReportTables`` (imported lazily: the ledger
    does not need pyarrow to record things)."""
    from doccheck.reports import ReportTables

    rows = build_report_rows(ledger, run_id=run_id, campaign=campaign)
    return ReportTables(**cast(dict[str, Any], rows))


def summarize(ledger: Ledger, s: Session, run_id: str) -> dict[str, Any]:
    """Counts for the end-of-run table and the run row's ``summary`` column."""
    del ledger
    docs = s.exec(select(DocumentRow).where(DocumentRow.run_id == run_id)).all()
    n_rejected = len(s.exec(select(RejectionRow.id).where(RejectionRow.run_id == run_id)).all())
    keys = [d.idempotency_key for d in docs]
    subs: dict[str, SubmissionRow] = {}
    for i in range(0, len(keys), 500):
        stmt = select(SubmissionRow).where(col(SubmissionRow.idempotency_key).in_(keys[i : i + 500]))
        subs.update({r.idempotency_key: r for r in s.exec(stmt).all()})
    states: Counter[str] = Counter()
    products: Counter[str] = Counter()
    check_ids = set()
    for d in docs:
        sub = subs.get(d.idempotency_key)
        state = STATE_TO_STATUS.get(sub.state, sub.state) if sub else "unsent"
        states[state] += 1
        if sub and sub.state == SubmissionState.SUBMITTED and sub.check_id:
            check_ids.add(sub.check_id)
    ids = list(check_ids)
    found = money_of_checks(s.connection(), ids)
    charged = sum(c for c, _ in found.values()) + cost_without_record(subs, found)
    refunded = sum(r for _, r in found.values())
    for i in range(0, len(ids), 500):
        for o in s.exec(select(OutcomeRow).where(col(OutcomeRow.check_id).in_(ids[i : i + 500]))).all():
            products[f"{o.product}_{_product_status(o)}"] += 1
    return {
        "documents": len(docs),
        "rejected": n_rejected,
        "submissions": dict(states),
        "products": dict(products),
        "checks": len(check_ids),
        "words": sum(d.words or 0 for d in docs),
        "estimated_cost_cents": sum(d.estimated_cost_cents or 0 for d in docs),
        "modes": dict(Counter(d.mode for d in docs if d.mode)),
        "cost_cents": charged - refunded,  # net, as the service counts it (each check once)
        "charged_cents": charged,
        "refunded_cents": refunded,
        "net_cents": charged - refunded,
    }


def cost_without_record(subs: dict[str, SubmissionRow], found: dict[str, tuple[int, int]]) -> int:
    """Charges of submitted checks with no ``check_costs`` row (a ledger from before it
    existed): the submission's creation charge, once per check."""
    seen: dict[str, int] = {}
    for sub in subs.values():
        if sub.state == SubmissionState.SUBMITTED and sub.check_id and sub.check_id not in found:
            seen.setdefault(sub.check_id, int(sub.cost_cents or 0))
    return sum(seen.values())
