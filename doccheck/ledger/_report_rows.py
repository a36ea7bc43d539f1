"""Report rows built from the ledger alone, so ``collect_results`` can rewrite the
reports of a run long after the manifest and the process that planned it are gone.

The column names are the issue's report schemas (``doccheck.outputs`` owns the pyarrow
types); every accepted document of the run appears in ``submissions`` (with its state,
or the reason it was not sent), every rejected row too, and every product of every
check appears in the product tables, as ``pending`` with its check id until it is final.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import case, func, literal, tuple_
from sqlalchemy import select as core_select
from sqlmodel import Session, col, select

from doccheck.domain import TEXT_KEY_SUFFIX, ProductState, SubmissionState, sent_as
from doccheck.ledger._base import Database
from doccheck.ledger._document_reads import count_misnamed, read_columns, reads_for_documents
from doccheck.ledger._in_list import one_of
from doccheck.ledger._notices import contradiction_notes, contradictions, product_failures
from doccheck.ledger._signatures import cohort_match_rows, document_ids_for_checks
from doccheck.ledger._sqltypes import table_of
from doccheck.ledger._tables import CheckCostRow, DocumentRow, OutcomeRow, RejectionRow, RunRow, SubmissionRow

#: Not a report table: each chunk of documents of :func:`iter_report_chunks` also holds, under
#: this name, one row per document with what the writers join into its rows (``metadata``, its
#: key's ``submitted_at``), read by the chunk's own queries. Why: the writers looked both up
#: again per chunk, ~5 s of a 100,000-document rerun on PostgreSQL (issue 28).
LEDGER_PART = "ledger_documents"

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
    SubmissionState.IN_DOUBT: "in_doubt",
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


def _product_status(o: Any) -> str:
    """``completed``/``failed`` only when the result is in the ledger (a final status a
    delivery contradicted is not, until the check is fetched), else ``pending``."""
    if o.status == ProductState.FAILED and o.fetched:
        return "failed"
    if o.status == ProductState.COMPLETED and o.fetched:
        return "completed"
    return "pending"


#: Documents per chunk of the streamed report: the memory of writing a run's reports is
#: bounded by this (a few MB), not by the run's size.
REPORT_CHUNK = 1000

REPORT_TABLES = ("submissions", "ai_results", "similarity_results", "similarity_sources", "cohort_matches")

_DOC_COLUMNS = tuple(getattr(DocumentRow, f).label(f) for f in ("id", "document_id", "row_number", "mode",
                      "idempotency_key", "products", "words", "doc_metadata", "campaign", "content_hash"))  # fmt: skip
_costs = table_of(CheckCostRow)


class _Submission(NamedTuple):
    """The submission columns a report row shows (``sub_*`` of a document's joined row)."""

    idempotency_key: str
    state: str
    check_id: str | None
    mode: str | None
    words: int | None
    error_code: str | None
    error_message: str | None
    cost_cents: int | None
    submitted_at: datetime | None


_SUB_FIELDS = _Submission._fields

#: A document's submission and its check's money, read in the documents' own query (LEFT JOINs on
#: unique keys: one row a document). Why: two more round trips a chunk with 1,000 keys each, ~2.5 s
#: of a 100,000-document rerun on PostgreSQL (issue 28).
_JOINED_COLUMNS = (*(getattr(SubmissionRow, f).label(f"sub_{f}") for f in _SUB_FIELDS),
                   _costs.c.check_id.label("cost_check_id"), _costs.c.charged_cents.label("cost_charged"),
                   _costs.c.refunded_cents.label("cost_refunded"))  # fmt: skip
# Never ``raw`` (the whole check JSON): only the columns the report shows.
_OUTCOME_COLUMNS = (OutcomeRow.check_id, OutcomeRow.product, OutcomeRow.status, OutcomeRow.fetched,
                    OutcomeRow.score, OutcomeRow.label, OutcomeRow.matched_words, OutcomeRow.source_count,
                    OutcomeRow.sources, OutcomeRow.error_code, OutcomeRow.error_message,
                    OutcomeRow.completed_at)  # fmt: skip


def resolve_run(ledger: Database, *, run_id: str | None = None, campaign: str | None = None) -> str:
    """The run id given, or the campaign's latest run (KeyError when there is none)."""
    with ledger.session() as s:
        return _resolve_run(s, run_id, campaign)


def iter_report_chunks(
    ledger: Database, *, run_id: str | None = None, campaign: str | None = None, chunk: int = REPORT_CHUNK
) -> Iterator[dict[str, list[dict[str, Any]]]]:
    """The report rows of a run, ``chunk`` documents at a time, in report order.

    Each item maps a table name (:data:`REPORT_TABLES`) to the rows of that chunk (a table
    can be missing from an item); a chunk of documents also holds :data:`LEDGER_PART`, which
    is not a table. Concatenating the items table by table gives exactly the rows of
    :func:`build_report_rows`: documents by row number, their product and source
    rows, then the rejected rows, then the cohort pairs. Only the report's columns are read
    (never a check's raw JSON) and nothing of a chunk is kept once it is yielded, except
    the ids of the checks already billed (each check's money goes on its first row).
    """
    rid = resolve_run(ledger, run_id=run_id, campaign=campaign)
    size = max(1, chunk)
    counted: set[str] = set()
    for docs_of in (_unnumbered_documents, _numbered_documents):  # report order: row number (none first), id
        last: tuple[int, int] | None = None  # keyset: (row_number, id) of the last document read
        while True:
            with ledger.session() as s:
                docs = docs_of(s, rid, last, size)
                if not docs:
                    break
                last = (docs[-1].row_number, docs[-1].id)
                part = _document_chunk(s, docs, counted)
            yield part  # outside the session: no transaction stays open while the caller writes
    last = None
    by_row = (func.coalesce(RejectionRow.row_number, -1), col(RejectionRow.id))
    while True:
        with ledger.session() as s:
            stmt = select(RejectionRow).where(RejectionRow.run_id == rid)
            if last is not None:
                stmt = stmt.where(tuple_(*by_row) > tuple_(*map(literal, last)))
            rejections = s.exec(stmt.order_by(*by_row).limit(size)).all()
            if not rejections:
                break
            tail = rejections[-1]
            last = (tail.row_number if tail.row_number is not None else -1, int(tail.id or 0))
            rejected = [_rejected_row(r) for r in rejections]
        yield {"submissions": rejected}
    with ledger.session() as s:
        matches = cohort_match_rows(s, rid)
    yield {"cohort_matches": matches}


def _with_submissions(s: Session, documents: Any) -> Sequence[Any]:
    """One chunk of documents (``documents``: their query, limited and ordered), each row with
    its submission and its check's money (:data:`_JOINED_COLUMNS`), in the same order.

    The chunk is limited *before* the joins: when the planner misjudges a new run's size
    (its rows were just written, its statistics are not), a join under the limit was made for
    every remaining document of the run before the top rows were kept, 21 s of a rerun."""
    docs = documents.subquery()
    stmt = (
        core_select(docs, *_JOINED_COLUMNS)
        .select_from(docs)
        .outerjoin(SubmissionRow, col(SubmissionRow.idempotency_key) == docs.c.idempotency_key)
        .outerjoin(_costs, _costs.c.check_id == col(SubmissionRow.check_id))
        .order_by(docs.c.row_number, docs.c.id)
    )
    return s.execute(stmt).all()


def _unnumbered_documents(s: Session, rid: str, last: tuple[int, int] | None, size: int) -> Sequence[Any]:
    """The next documents of the run without a row number, by id."""
    stmt = core_select(*_DOC_COLUMNS).where(col(DocumentRow.run_id) == rid, col(DocumentRow.row_number).is_(None))
    if last is not None:
        stmt = stmt.where(col(DocumentRow.id) > last[1])
    return _with_submissions(s, stmt.order_by(col(DocumentRow.id)).limit(size))


def _numbered_documents(s: Session, rid: str, last: tuple[int, int] | None, size: int) -> Sequence[Any]:
    """The next documents of the run by (row number, id): a range of the (run, row number) index,
    not the run's rows sorted for each chunk (issue 28: a term is 100 chunks of 1,000)."""
    stmt = core_select(*_DOC_COLUMNS).where(col(DocumentRow.run_id) == rid, col(DocumentRow.row_number).is_not(None))
    if last is not None:
        stmt = stmt.where(tuple_(col(DocumentRow.row_number), col(DocumentRow.id)) > tuple_(*map(literal, last)))
    return _with_submissions(s, stmt.order_by(col(DocumentRow.row_number), col(DocumentRow.id)).limit(size))


#: Where a joined row's ``sub_*`` columns are: after the document's own.
_SUB_AT = slice(len(_DOC_COLUMNS), len(_DOC_COLUMNS) + len(_SUB_FIELDS))


def _chunk_lookups(
    s: Session, docs: Sequence[Any]
) -> tuple[dict[str, _Submission], dict[tuple[str, str], Any], dict[str, tuple[int, int]]]:
    """The submissions and money of one chunk of documents (from their joined rows), and
    their outcomes (one query)."""
    subs: dict[str, _Submission] = {}
    money: dict[str, tuple[int, int]] = {}
    for d in docs:
        if d.sub_idempotency_key is None:
            continue
        sub = _Submission._make(d[_SUB_AT])
        subs[sub.idempotency_key] = sub
        if sub.state == SubmissionState.SUBMITTED and sub.check_id and d.cost_check_id is not None:
            money[sub.check_id] = (int(d.cost_charged or 0), int(d.cost_refunded or 0))
    check_ids = sorted({r.check_id for r in subs.values() if r.check_id})
    outcomes = {
        (o.check_id, o.product): o
        for o in s.execute(select(*_OUTCOME_COLUMNS).where(one_of(col(OutcomeRow.check_id), check_ids, s))).all()  # type: ignore[call-overload]
    } if check_ids else {}  # fmt: skip
    return subs, outcomes, money


def _submission_row(
    d: Any, sub: Any, state: str, check_id: str | None, words: Any, money: tuple[int, int], read: Any = None
) -> dict[str, Any]:
    """One row of the ``submissions`` table: the ledger state of a document, its money, and what
    its file was read as (``read``: :func:`~doccheck.ledger._document_reads.read_columns`'s input)."""
    charged, refunded = money
    return {
        "document_id": d.document_id,
        "row_number": d.row_number,
        "mode": (sub.mode if sub and sub.mode else d.mode),
        "sent_as": sent_as(d.idempotency_key),
        "idempotency_key": d.idempotency_key,
        "check_id": check_id,
        "products": list(d.products or []),
        "status": STATE_TO_STATUS.get(state, state),
        "error_code": sub.error_code if sub and state != SubmissionState.SUBMITTED else None,
        "error_message": sub.error_message if sub and state != SubmissionState.SUBMITTED else None,
        "words": words,
        "cost_cents": charged - refunded,
        "charged_cents": charged,
        "refunded_cents": refunded,
        "net_cents": charged - refunded,
        **read_columns(read),
    }


def _ai_row(common: dict[str, Any], o: Any, status: str, words: Any) -> dict[str, Any]:
    """One row of ``ai_results`` (score and label only once completed)."""
    return {
        **common,
        "score": o.score if o and status == ProductState.COMPLETED else None,
        "label": o.label if o and status == ProductState.COMPLETED else None,
        "words": words,
    }


def _similarity_rows(
    common: dict[str, Any], o: Any, status: str, d: Any, check_id: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One row of ``similarity_results`` and its rows of ``similarity_sources``."""
    done = o is not None and status == ProductState.COMPLETED
    srcs = (o.sources or []) if done and o else []
    row = {
        **common,
        "score": o.score if done and o else None,
        "matched_words": o.matched_words if done and o else None,
        "source_count": (o.source_count if o.source_count is not None else len(srcs)) if done and o else None,
    }
    sources = [
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
        for src in srcs
    ]
    return row, sources


def _document_chunk(s: Session, docs: Sequence[Any], counted: set[str]) -> dict[str, list[dict[str, Any]]]:
    """The rows of one chunk of documents (see :func:`iter_report_chunks`)."""
    subs, outcomes, money = _chunk_lookups(s, docs)
    notes = contradiction_notes(s, {c for c, _ in outcomes})
    reads = reads_for_documents(s.connection(), docs[0].campaign, [(d.document_id, d.content_hash) for d in docs])
    submissions: list[dict[str, Any]] = []
    ai: list[dict[str, Any]] = []
    sim: list[dict[str, Any]] = []
    sources: list[dict[str, Any]] = []
    for d in docs:
        sub = subs.get(d.idempotency_key)
        state = sub.state if sub else SubmissionState.PLANNED
        check_id = sub.check_id if sub and state == SubmissionState.SUBMITTED else None
        words = (sub.words if sub and sub.words is not None else None) or d.words
        reading = reads.get((d.document_id, d.content_hash))
        submissions.append(
            _submission_row(d, sub, state, check_id, words, _row_money(check_id, sub, money, counted), reading)
        )
        if check_id is None:
            continue
        for product in list(d.products or []):
            o = outcomes.get((check_id, product))
            status = _product_status(o) if o else "pending"
            common = {
                "document_id": d.document_id,
                "check_id": check_id,
                "status": status,
                "completed_at": o.completed_at if o and status != "pending" else None,
                "error_code": o.error_code if o else None,
                "error_message": o.error_message if o else None,  # the service's words, any shape
                "contradiction": notes.get((check_id, product)),
            }
            if product == "ai":
                ai.append(_ai_row(common, o, status, words))
            elif product == "similarity":
                row, found = _similarity_rows(common, o, status, d, check_id)
                sim.append(row)
                sources.extend(found)
    own = document_ids_for_checks(s, None, (src["source_id"] for src in sources if src.get("kind") == "submission"))
    for src in sources:
        src["matched_document_id"] = own.get(src["source_id"]) if src.get("kind") == "submission" else None
    read = [_ledger_row(d, subs.get(d.idempotency_key)) for d in docs]
    return {"submissions": submissions, "ai_results": ai, "similarity_results": sim, "similarity_sources": sources,
            LEDGER_PART: read}  # fmt: skip


def _ledger_row(d: Any, sub: Any) -> dict[str, Any]:
    """What the writers join into a document's rows, read with the chunk (see :data:`LEDGER_PART`)."""
    return {"document_id": d.document_id, "idempotency_key": d.idempotency_key,
            "metadata": dict(d.doc_metadata or {}), "submitted_at": sub.submitted_at if sub is not None else None}  # fmt: skip


def _rejected_row(r: RejectionRow) -> dict[str, Any]:
    return {
        "document_id": r.document_id,
        "row_number": r.row_number,
        "mode": "rejected",
        "sent_as": None,
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
        **read_columns(None),
    }


def build_report_rows(
    ledger: Database, *, run_id: str | None = None, campaign: str | None = None
) -> dict[str, list[dict[str, Any]]]:
    """``{"submissions", "ai_results", "similarity_results", "similarity_sources", "cohort_matches"}`` row lists
    (the whole run in memory: for tests and small runs; reports stream with :func:`iter_report_chunks`)."""
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in REPORT_TABLES}
    for part in iter_report_chunks(ledger, run_id=run_id, campaign=campaign):
        for name, chunk_rows in part.items():
            if name in rows:  # not LEDGER_PART
                rows[name].extend(chunk_rows)
    return rows


def _row_money(check_id: str | None, sub: Any, money: dict[str, tuple[int, int]], counted: set[str]) -> tuple[int, int]:
    """``(charged, refunded)`` of a report row: the check's money on the first row that
    points at it, 0 on the others (rows sharing a check are billed once). A ledger
    written before ``check_costs`` existed falls back to the submission's charge."""
    if check_id is None or check_id in counted:
        return 0, 0
    counted.add(check_id)
    if check_id in money:
        return money[check_id]
    return int(sub.cost_cents or 0) if sub is not None else 0, 0


def summarize(s: Session, run_id: str) -> dict[str, Any]:
    """Counts for the end-of-run table and the run row's ``summary`` column.

    Counted by the database (report columns only, never a document's metadata nor a check's
    raw JSON): the documents by mode and submission state in one grouped query, the run's
    checks with their first submission's charge, and their products grouped by status.
    Why in SQL: read row by row in pages, a 100,000-document run took 3 s of CPU to summarise.
    """
    n_rejected = int(
        s.execute(select(func.count()).select_from(RejectionRow).where(RejectionRow.run_id == run_id)).scalar_one()
    )  # noqa: E501
    docs_t, subs_t, outs_t = table_of(DocumentRow), table_of(SubmissionRow), table_of(OutcomeRow)
    joined = docs_t.outerjoin(subs_t, subs_t.c.idempotency_key == docs_t.c.idempotency_key)
    states: Counter[str] = Counter()
    modes: Counter[str] = Counter()
    n_docs = words = estimated = as_text = 0
    text_files = func.sum(case((docs_t.c.idempotency_key.like(f"%{TEXT_KEY_SUFFIX}"), 1), else_=0))
    grouped = s.execute(
        core_select(docs_t.c.mode, subs_t.c.state, func.count(), func.sum(docs_t.c.words),
                    func.sum(docs_t.c.estimated_cost_cents), text_files)
        .select_from(joined).where(docs_t.c.run_id == run_id).group_by(docs_t.c.mode, subs_t.c.state)
    ).all()  # fmt: skip
    for mode, state, n, n_words, n_cents, n_text in grouped:
        n_docs += n
        as_text += int(n_text or 0)
        words += int(n_words or 0)
        estimated += int(n_cents or 0)
        if mode:
            modes[mode] += n
        states[STATE_TO_STATUS.get(state, state) if state is not None else "unsent"] += n
    run_checks = (
        core_select(subs_t.c.check_id, subs_t.c.cost_cents)
        .select_from(joined)
        .where(docs_t.c.run_id == run_id, subs_t.c.state == SubmissionState.SUBMITTED, subs_t.c.check_id.is_not(None))
    )
    checks, charged, refunded = _checks_money(s, run_checks, subs_t, docs_t)
    by_status = s.execute(
        core_select(outs_t.c.product, outs_t.c.status, outs_t.c.fetched, func.count())
        .where(outs_t.c.check_id.in_(run_checks.with_only_columns(subs_t.c.check_id).distinct()))
        .group_by(outs_t.c.product, outs_t.c.status, outs_t.c.fetched)
    ).all()  # fmt: skip
    products: dict[str, Counter[str]] = {}
    for o in by_status:  # keyed (product, status), never a string split on "_" later
        products.setdefault(o.product, Counter())[_product_status(o)] += o[3]
    return {
        "documents": n_docs,
        "rejected": n_rejected,
        "submissions": dict(states),
        "products": {p: dict(c) for p, c in products.items()},
        "product_failures": product_failures(s, run_id),
        "contradictions": contradictions(s, run_id),
        "checks": checks,
        "words": words,
        "estimated_cost_cents": estimated,
        "modes": dict(modes),
        "as_text": as_text,  # files sent as the text doccheck read (the service does not take their type)
        "misnamed": count_misnamed(s.connection(), run_id),  # files whose name says another type than their bytes
        "cost_cents": charged - refunded,  # net, as the service counts it (each check once)
        "charged_cents": charged,
        "refunded_cents": refunded,
        "net_cents": charged - refunded,
    }


def _checks_money(s: Session, run_checks: Any, subs_t: Any, docs_t: Any) -> tuple[int, int, int]:
    """The run's checks, each once: how many, what they were charged and refunded. A check's
    money is its ``check_costs`` row, else its first submission's charge (in document order: a
    ledger from before ``check_costs``). Summed by the database: the rows of a 100,000-document
    run read into dicts of check ids were ~37 MB at the run's close (issue 49)."""
    first = (
        run_checks.add_columns(
            _costs.c.check_id.label("costed"), _costs.c.charged_cents, _costs.c.refunded_cents,
            func.row_number().over(partition_by=subs_t.c.check_id, order_by=docs_t.c.id).label("nth"),
        )
        .outerjoin_from(subs_t, _costs, _costs.c.check_id == subs_t.c.check_id)
        .where(subs_t.c.check_id != "")
        .subquery()
    )  # fmt: skip
    costed = first.c.costed.is_not(None)
    row = s.execute(
        core_select(
            func.count(),
            func.sum(case((costed, func.coalesce(first.c.charged_cents, 0)), else_=func.coalesce(first.c.cost_cents, 0))),
            func.sum(case((costed, func.coalesce(first.c.refunded_cents, 0)), else_=0)),
        ).where(first.c.nth == 1)
    ).one()  # fmt: skip
    return int(row[0] or 0), int(row[1] or 0), int(row[2] or 0)


def cost_without_record(subs: dict[str, SubmissionRow], found: dict[str, tuple[int, int]]) -> int:
    """Charges of submitted checks with no ``check_costs`` row (a ledger from before it
    existed): the submission's creation charge, once per check."""
    seen: dict[str, int] = {}
    for sub in subs.values():
        if sub.state == SubmissionState.SUBMITTED and sub.check_id and sub.check_id not in found:
            seen.setdefault(sub.check_id, int(sub.cost_cents or 0))
    return sum(seen.values())
