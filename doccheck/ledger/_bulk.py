"""Grouped ledger writes for the submit path: many documents' answers in one transaction.

Why: recording one service answer cost three transactions (outcomes, the ``submitted``
row with its charge, the claim's release), ~15 ms of a busy machine per document, and the
ledger, not the network, set the pace of a run (issue 10). The pipeline's group commit
(:class:`doccheck.pipeline.sending._ledger_writer.GroupCommit`) hands every answer waiting at one
moment to :func:`record_answers` (or :func:`record_answers_and_claims`), ONE transaction,
on its writer thread; this module is the transactions, synchronous and free of asyncio. The crash-safety order of docs/ledger.md holds: the answers are
written after the requests that produced them, before their claims are released (same
transaction), and a crash before the commit leaves ``submitting`` rows that the next run
replays for free. Only the common case is grouped (a row written by ``mark_submitting``, a
fresh check whose products are all processing, no outcomes yet); anything else goes
through ``Ledger.mark_submitted`` and ``Ledger.release_claim`` one by one, as before.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, insert, select

from doccheck import domain
from doccheck.ledger import _bulk_sql as sql
from doccheck.ledger._base import CheckLike, LedgerLike, PlannedLike, ReadLike
from doccheck.ledger._document_reads import record_reads
from doccheck.ledger._engine import READ_ONLY
from doccheck.ledger._sqltypes import table_of
from doccheck.ledger._tables import (
    ClaimRow,
    DocumentRow,
    RejectionRow,
    SubmissionRow,
    utcnow,
)

if TYPE_CHECKING:
    from doccheck.sources.manifest import Rejection

_DOCUMENTS_T, _REJECTIONS_T = table_of(DocumentRow), table_of(RejectionRow)

__all__ = [
    "Answer",
    "ClaimRequest",
    "Prepare",
    "document_row",
    "mark_sending",
    "previous_submissions",
    "record_answers",
    "record_answers_and_claims",
    "record_claims",
    "record_claims_then_prepare",
    "record_documents",
    "record_plan_group",
    "record_prepares",
    "write_documents",
    "write_rejections",
    "write_submitting",
]


@dataclass(frozen=True)
class Answer:
    """One document's service answer, to record and then release its claim."""

    key: str
    check: CheckLike
    mode: str | None
    upload_id: str | None
    owner: str


def _dump(check: CheckLike) -> dict[str, Any]:
    return check.model_dump(mode="json", exclude_none=False) if hasattr(check, "model_dump") else dict(check)


#: Marker: keep the row's mode (``mode`` None), as ``mark_submitted`` does.
def record_answers(ledger: LedgerLike, answers: list[Answer]) -> None:
    """Record ``answers`` (as ``mark_submitted`` + ``release_claim(settled=True)`` each).

    The common ones in one transaction; the others one by one after it.
    """
    if not answers:
        return
    with ledger.engine.begin() as conn:
        slow = _answers_in(conn, answers)
    _answers_after(ledger, slow)


def _answers_after(ledger: LedgerLike, slow: list[Answer]) -> None:
    """The answers the grouped transaction left: one by one, with the ledger's own methods."""
    for a in slow:
        ledger.mark_submitted(a.key, a.check, mode=a.mode, upload_id=a.upload_id)
        ledger.release_claim(a.key, a.owner, settled=True)


def _answers_in(conn: Connection, answers: list[Answer]) -> list[Answer]:
    """The common answers, written in the caller's transaction; returns the others."""
    data = {a.key: _dump(a.check) for a in answers}
    keys = list(data)
    check_ids = [str(d["id"]) for d in data.values()]
    slow: list[Answer] = []
    current, with_outcomes = sql.answer_lookups(conn, keys, check_ids)
    now = utcnow()
    outcomes: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    seen_checks: set[str] = set()
    for a in answers:
        d = data[a.key]
        check_id = str(d["id"])
        products = list(d.get("products") or [p for p in domain.PRODUCTS if d.get(p)])
        fresh = all(str((d.get(p) or {}).get("status") or "processing") == "processing" for p in products)
        row = current.get(a.key)
        if row is None or not fresh or check_id in with_outcomes or check_id in seen_checks:
            slow.append(a)
            continue
        seen_checks.add(check_id)
        outcomes += [
            {"check_id": check_id, "product": p, "campaign": row.campaign, "status": "processing",
             "fetched": False, "raw": dict(d.get(p) or {"status": "processing"}), "updated_at": now}
            for p in products
        ]  # fmt: skip
        rows.append({
            "k": a.key, "state": "submitted", "check_id": check_id,
            "cost_cents": (d.get("cost") or {}).get("total_cents"), "words": d.get("words"),
            "replayed": bool(getattr(a.check, "replayed", False)), "error_code": None, "error_message": None,
            "updated_at": now, "submitted_at": row.submitted_at or now,
            "mode": a.mode if a.mode is not None else sql.row_mode_placeholder,
            "upload_id": a.upload_id,
        })  # fmt: skip
    slow_keys = {a.key for a in slow}
    if outcomes and sql.is_postgres(conn):
        sql.pg_insert(conn, sql.OUTCOMES_T, outcomes)
    elif outcomes:
        conn.execute(sql.NEW_OUTCOMES, outcomes)
    if rows:
        sql.update_submissions(conn, rows)
        grouped = [a for a in answers if a.key not in slow_keys]
        sql.record_new_charges(conn, [(str(data[a.key]["id"]), current[a.key].campaign, data[a.key].get("cost"))
                                   for a in grouped], now)  # fmt: skip
        sql.release(conn, [(a.key, a.owner) for a in grouped], now)
    return slow


@dataclass(frozen=True)
class Prepare:
    """One document about to be sent: ``submitting``, then (with an ``owner``) its claim ``sending``."""

    key: str
    campaign: str
    document_id: str
    products: tuple[str, ...]
    mode: str | None
    owner: str | None = None


def write_submitting(conn: Connection, items: Sequence[Prepare], now: datetime, *, new_only: bool = False) -> set[str]:
    """The one route to ``submitting`` (a single key is a group of one): the keys without a row
    get one (``INSERT … ON CONFLICT DO NOTHING``, one statement), then, unless ``new_only``, the
    others are moved back to ``submitting`` with one more attempt, a submitted row never.
    Returns the keys whose row was added.

    Why insert first: on a new term every key is new, and a key another process inserted
    meanwhile is simply one that has a row (no ``IntegrityError`` to recover from). ``new_only``:
    the claim round prepares only keys never seen; a key with a row goes the usual way (its row
    may need reconciling first).
    """
    added = sql.insert_new(conn, sql.SUBMISSIONS_T, "idempotency_key", [
        {"idempotency_key": p.key, "campaign": p.campaign, "document_id": p.document_id, "products": list(p.products),
         "mode": p.mode, "state": "submitting", "error_code": None, "error_message": None, "attempts": 1,
         "replayed": False, "created_at": now, "updated_at": now}
        for p in items
    ])  # fmt: skip
    again = [] if new_only else [p for p in items if p.key not in added]
    if again:
        conn.execute(sql.TO_SUBMITTING, [
            {"k": p.key, "v_campaign": p.campaign, "v_document_id": p.document_id, "v_products": list(p.products),
             "v_mode": p.mode, "b_now": now}
            for p in again
        ])  # fmt: skip
    return added


def mark_sending(conn: Connection, items: Sequence[Prepare], now: datetime) -> set[str]:
    """The claims of ``items`` marked in doubt and sent by their owner (``Ledger.mark_sending``),
    where that owner still holds them: the keys marked (another's: it must not send)."""
    by_owner: dict[str, list[str]] = {}
    for p in items:
        if p.owner is not None:
            by_owner.setdefault(p.owner, []).append(p.key)
    sent: set[str] = set()
    for owner, keys in by_owner.items():
        for chunk in sql.chunks(keys):
            params = {"b_keys": chunk, "b_owner": owner, "b_now": now}
            sent.update(conn.execute(sql.keyed(conn, sql.SENDING), params).scalars())
    return sent


def record_prepares(ledger: LedgerLike, items: list[Prepare]) -> list[bool]:
    """``submitting`` + ``sending`` of each item, all in one transaction (``write_submitting``
    then ``mark_sending``). Returns, per item, whether its owner still held the claim (False:
    it must not send)."""
    with ledger.engine.begin() as conn:
        now = utcnow()
        write_submitting(conn, items, now)
        sent = mark_sending(conn, items, now)
    return [p.key in sent for p in items]


@dataclass(frozen=True)
class ClaimRequest:
    """One key to claim for ``owner`` (``Ledger.claim``), then its submission read afresh.

    ``prepare``: also record ``submitting`` + ``sending`` in the same transaction when the
    claim is won and the key has no submission row yet (nothing to reconcile, nothing
    else to do before the request).
    """

    key: str
    owner: str
    lease_seconds: float
    prepare: Prepare | None = None


def record_claims(ledger: LedgerLike, items: list[ClaimRequest]) -> list[tuple[bool, Any]]:
    """``Ledger.claim`` then ``submission_for_key`` of each item, in one transaction.

    Returns ``(won, submission row or None)`` per item. A key held by someone else is
    tried again with ``Ledger.claim`` after the transaction (its dead-owner take-over).
    """
    return [(won, row) for won, row, _ in record_claims_then_prepare(ledger, items)]


def record_claims_then_prepare(ledger: LedgerLike, items: list[ClaimRequest]) -> list[tuple[bool, Any, bool]]:
    """Claims of many keys in one transaction of a few multi-row statements, each
    followed, where asked and possible, by ``submitting`` + ``sending``.

    Returns ``(won, submission row or None, prepared)`` per item: ``prepared`` means the
    row now says ``submitting`` and the claim ``in_doubt`` (committed): send at once. The
    statements: one conditional ``UPDATE … RETURNING`` takes every free, expired or own
    claim; one ``INSERT … ON CONFLICT DO NOTHING RETURNING`` creates the claims never
    taken (a row that exists is held by another owner); one ``SELECT`` reads the
    submissions; then one ``INSERT … ON CONFLICT DO NOTHING`` of the ``submitting`` rows
    and one ``UPDATE`` of their claims. Same rules as ``Ledger.claim`` (rowcounts decide,
    no read-then-write), so atomic on SQLite and PostgreSQL alike. A key held by someone
    else is tried again with ``Ledger.claim`` after the transaction (its dead-owner
    take-over), and is then never prepared here.
    """
    if not items:
        return []
    with ledger.engine.begin() as conn:
        won, rows, prepared = _claims_in(conn, items)
    return _claims_after(ledger, items, won, rows, prepared)


def _claims_in(conn: Connection, items: list[ClaimRequest]) -> tuple[set[str], dict[str, Any], set[str]]:
    """The claims (and prepares) in the caller's transaction: (won, rows, prepared)."""
    c = table_of(ClaimRow)
    won: set[str] = set()
    prepared: set[str] = set()
    keys = list(dict.fromkeys(it.key for it in items))
    now = utcnow()
    by_lease: dict[tuple[str, float], list[str]] = {}
    for it in items:
        by_lease.setdefault((it.owner, it.lease_seconds), []).append(it.key)
    for (owner, lease), group in by_lease.items():
        expires = now + timedelta(seconds=lease)
        for chunk in sql.chunks(sorted(set(group))):  # one order for every writer: no lock cycles
            params = {"b_keys": chunk, "b_owner": owner, "b_now": now, "b_expires": expires}
            if sql.is_postgres(conn):  # take, then add the missing claims, in one statement
                won.update(conn.execute(sql.PG_CLAIM_OR_ADD, {**params, "b_new": [k for k in chunk if k not in won]})
                           .scalars())  # fmt: skip
                continue
            won.update(conn.execute(sql.CLAIM, params).scalars())
            won |= sql.insert_new(conn, c, "idempotency_key", [
                {"idempotency_key": k, "owner": owner, "expires_at": expires, "in_doubt": False, "updated_at": now}
                for k in chunk if k not in won
            ])  # fmt: skip
    todo = {it.key: it.prepare for it in items if it.prepare is not None and it.key in won}
    added: set[str] = set()
    if todo:
        added, prepared = _prepare_new(conn, list(todo.values()), now)
    rows: dict[str, Any] = {}
    for chunk in sql.chunks([k for k in keys if k not in added]):  # a row just added was the key's first
        rows.update((r.idempotency_key, r) for r in conn.execute(sql.keyed(conn, sql.SUBMISSIONS), {"b_keys": chunk}))
    return won, rows, prepared


def _claims_after(
    ledger: LedgerLike, items: list[ClaimRequest], won: set[str], rows: dict[str, Any], prepared: set[str]
) -> list[tuple[bool, Any, bool]]:
    """The result per item; a key held by another owner gets ``Ledger.claim``'s dead-owner take-over."""
    out: list[tuple[bool, Any, bool]] = []
    for it in items:
        if it.key in won:
            out.append((True, rows.get(it.key), it.key in prepared))
        elif ledger.claim(it.key, it.owner, it.lease_seconds):  # a dead holder on this host
            out.append((True, ledger.submission_for_key(it.key), False))
        else:
            out.append((False, ledger.submission_for_key(it.key), False))
    return out


def _prepare_new(conn: Connection, items: list[Prepare], now: datetime) -> tuple[set[str], set[str]]:
    """``submitting`` + ``sending`` of the keys this transaction claimed that have no submission
    row yet; a key with a row (an earlier run's, a refusal's) goes the usual way with its row.
    Returns (the keys whose row was added, the keys marked sending).

    Why insert first and read the rows after: on a new term every key is new, so the read of
    the rows is left with the keys not added, none, and a round skips it (issue 26)."""
    done = write_submitting(conn, items, now, new_only=True)
    return done, mark_sending(conn, [p for p in items if p.key in done], now)


def record_answers_and_claims(ledger: LedgerLike, items: list[Answer | ClaimRequest]) -> list[Any]:
    """Answers (``record_answers``) then claims (``record_claims_then_prepare``) in ONE
    transaction: one commit, one trip to the writer thread, per round of the batch.

    Why: the answers of the requests that came back and the claims of the documents that
    start next wait at the same moments; two transactions cost two commits (and, on
    PostgreSQL, two more round trips and server wake-ups). The order per key is unchanged:
    an answer is written after its request, a claim and its ``sending`` before its
    request, which starts only once this returns. Returns None per answer and
    ``(won, row, prepared)`` per claim.
    """
    answers = [it for it in items if isinstance(it, Answer)]
    claims = [it for it in items if isinstance(it, ClaimRequest)]
    won: set[str] = set()
    rows: dict[str, Any] = {}
    prepared: set[str] = set()
    with ledger.engine.begin() as conn:
        slow = _answers_in(conn, answers) if answers else []
        if claims:
            won, rows, prepared = _claims_in(conn, claims)
    _answers_after(ledger, slow)
    claimed = iter(_claims_after(ledger, claims, won, rows, prepared))
    return [next(claimed) if isinstance(it, ClaimRequest) else None for it in items]


def previous_submissions(ledger: LedgerLike, keys: Iterable[str]) -> tuple[set[str], dict[str, SubmissionRow]]:
    """A batch's pre-check: (the keys already ``submitted``, the submission rows of the others that have one).

    Why two reads: a rerun with nothing new finds every key submitted, and hydrating a whole
    ``SubmissionRow`` per key (JSON columns, the ORM's identity map) cost more than everything
    else the rerun did with the key. The states come first from one narrow query; whole rows
    only for the keys that will be sent (or resumed) and have a row.
    """
    keys = list(dict.fromkeys(keys))
    states: dict[str, str] = {}
    with ledger.engine.connect() as conn:
        conn.execution_options(**{READ_ONLY: True})  # SQLite: not in the way of the recording's writes
        for chunk in sql.chunks(keys):
            states.update(conn.execute(sql.keyed(conn, sql.STATES), {"b_keys": chunk}).tuples().all())
    submitted = {k for k, state in states.items() if state == domain.SubmissionState.SUBMITTED}
    rest = [k for k in states if k not in submitted]
    return submitted, (ledger.submissions_for_keys(rest) if rest else {})


def document_row(run_id: str, campaign: str, doc: PlannedLike) -> dict[str, Any]:
    """What the ledger keeps of a planned document (planning's ``PlannedDocument``): hash, size,
    words, mode, key and the caller's allowlisted metadata; never the text."""
    return {
        "run_id": run_id, "campaign": campaign, "document_id": doc.document_id,
        "row_number": getattr(doc, "row_number", None), "name": getattr(doc, "name", None),
        "mode": getattr(doc, "mode", None), "content_hash": getattr(doc, "content_hash", None),
        "size_bytes": getattr(doc, "size_bytes", None), "words": getattr(doc, "words", None),
        "products": list(doc.products), "idempotency_key": doc.idempotency_key,
        "estimated_cost_cents": getattr(doc, "estimated_cost_cents", None),
        "metadata": {str(k): v for k, v in (getattr(doc, "metadata", None) or {}).items()},
    }  # fmt: skip


def write_documents(conn: Connection, rows: Sequence[dict[str, Any]]) -> int:
    """The one writer of documents (``document_row``'s rows; one document is a group of one):
    a document already recorded for its run is skipped, by the unique (run, document) constraint
    in the insert itself, so a batch costs the same at row 100 and at row 100,000 (issue 28: a
    look-up then an insert was ~11 ms a batch on PostgreSQL). Returns how many were new."""
    first: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        first.setdefault((row["run_id"], row["document_id"]), row)
    if conn.dialect.name == "sqlite" and first:
        return _sqlite_documents(conn, list(first.values()))
    added = sql.insert_absent(conn, _DOCUMENTS_T, ("run_id", "document_id"), list(first.values()), returning="id")
    return len(added)


#: ``document_row``'s keys, the documents table's columns; the JSON ones are written as SQLAlchemy's
#: JSON type writes them (``json.dumps``, the engine has no serializer of its own).
_DOCUMENT_COLUMNS = ("run_id", "campaign", "document_id", "row_number", "name", "mode", "content_hash",
                     "size_bytes", "words", "products", "idempotency_key", "estimated_cost_cents", "metadata")  # fmt: skip
_JSON_COLUMNS = frozenset({"products", "metadata"})
_SQLITE_INSERT_DOCUMENTS = (
    f"INSERT INTO documents ({', '.join(_DOCUMENT_COLUMNS)}) VALUES ({', '.join('?' * len(_DOCUMENT_COLUMNS))}) "
    "ON CONFLICT (run_id, document_id) DO NOTHING"
)


def _sqlite_documents(conn: Connection, rows: list[dict[str, Any]]) -> int:
    """``insert_absent`` of documents on SQLite through the driver's own executemany, how many were
    new (its row count: a row skipped by the conflict counts none). Why: SQLAlchemy's processing of
    each row's 13 parameters and the RETURNING of every id were ~40 % of recording a batch, the
    recording thread's largest part after the manifest's reading (a term's rerun, issue 49)."""
    params = [tuple(json.dumps(r[c]) if c in _JSON_COLUMNS else r[c] for c in _DOCUMENT_COLUMNS) for r in rows]
    return max(0, int(conn.exec_driver_sql(_SQLITE_INSERT_DOCUMENTS, params).rowcount))


def record_documents(ledger: LedgerLike, run_id: str, campaign: str, documents: Sequence[PlannedLike]) -> int:
    """``write_documents`` of a batch's planned documents, in one transaction; how many were new."""
    with ledger.engine.begin() as conn:
        added = write_documents(conn, [document_row(run_id, campaign, doc) for doc in documents])
        record_reads(conn, campaign, run_id, documents)  # what each file was read as (issue 41)
    return added


def write_rejections(conn: Connection, run_id: str, rejections: Sequence[Rejection]) -> int:
    """The one writer of a run's refused rows (planning's ``Rejection``), idempotent per run: a
    rejection already there (same row, document and code) is skipped. Only the rows in the
    batch's range are looked up, so a batch costs the same at row 100 and at row 100,000.
    Returns how many were new."""
    if not rejections:
        return 0
    t = _REJECTIONS_T
    low, high = min(r.row_number for r in rejections), max(r.row_number for r in rejections)
    range_of_run = (t.c.run_id == run_id, t.c.row_number >= low, t.c.row_number <= high)
    seen = {tuple(r) for r in conn.execute(select(t.c.row_number, t.c.document_id, t.c.code).where(*range_of_run))}
    rows = []
    for r in rejections:
        if (r.row_number, r.document_id, r.code) not in seen:
            seen.add((r.row_number, r.document_id, r.code))
            rows.append({"run_id": run_id, "row_number": r.row_number, "document_id": r.document_id,
                         "field": r.field, "code": r.code, "reason": r.reason})  # fmt: skip
    if rows:
        conn.execute(insert(t), rows)
    return len(rows)


def record_plan_group(
    ledger: LedgerLike,
    run_id: str,
    documents: list[dict[str, Any]],
    rejections: Sequence[Rejection],
    *,
    campaign: str = "",
    reads: Sequence[ReadLike] = (),
) -> None:
    """A recorded plan's batch (``document_row``'s rows, the batch's rejections, and what each of
    its files in ``reads`` was read as) in one transaction; rows already there are skipped
    (:mod:`doccheck.pipeline.batches` streams the manifest; a batch recorded again costs one statement)."""
    with ledger.engine.begin() as conn:
        write_documents(conn, documents)
        write_rejections(conn, run_id, rejections)
        if reads:
            record_reads(conn, campaign, run_id, reads)  # what each file was read as (issue 41)
