"""Runs, their accepted documents and their refused rows: functions taking the session first.

What a run was asked to do, recorded before anything is sent, so the reports can say what
happened to every row. :class:`~doccheck.ledger._facade.Ledger` opens the transaction and calls
them; the documents' and rejections' one writer is :mod:`doccheck.ledger._bulk`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from sqlalchemy import or_, text, update
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from doccheck.domain import ProductState, SubmissionState
from doccheck.ledger._base import PlannedLike, dump
from doccheck.ledger._bulk import document_row, write_documents, write_rejections
from doccheck.ledger._in_list import one_of
from doccheck.ledger._report_rows import summarize
from doccheck.ledger._sqltypes import table_of
from doccheck.ledger._tables import DocumentRow, OutcomeRow, RunRow, SubmissionRow, utcnow
from doccheck.sources.manifest import Rejection


def start_run(
    session: Session,
    *,
    campaign: str,
    manifest: str | None = None,
    products: Sequence[str] = (),
    params: Mapping[str, Any] | None = None,
    run_id: str | None = None,
) -> str:
    """Record the start of a run and return its id (a UUID unless given)."""
    run = RunRow(
        id=run_id or str(uuid.uuid4()),
        campaign=campaign,
        manifest=manifest,
        products=list(products),
        params=dump(params or {}),
    )
    session.add(run)
    return run.id


def finish_run(
    session: Session, run_id: str, *, status: str = "finished", summary: Mapping[str, Any] | None = None
) -> None:
    """Close a run with its final status and a JSON summary (the run's counts, read in the same
    transaction, when none is given)."""
    run = session.get(RunRow, run_id)
    if run is None:
        raise KeyError(f"unknown run id {run_id!r}")
    run.status = status
    run.finished_at = utcnow()
    run.summary = dump(summary) if summary is not None else summarize(session, run_id)
    session.add(run)


def get_run(session: Session, run_id: str) -> RunRow | None:
    """The run row, or None."""
    return session.get(RunRow, run_id)


def latest_run(session: Session, campaign: str) -> RunRow | None:
    """The most recent run of a campaign (for ``collect_results`` by campaign)."""
    stmt = select(RunRow).where(RunRow.campaign == campaign)
    return session.exec(stmt.order_by(col(RunRow.started_at).desc())).first()


def campaign_of(session: Session, run_id: str) -> str:
    """The campaign of a run (raises KeyError for an unknown run)."""
    run = get_run(session, run_id)
    if run is None:
        raise KeyError(f"unknown run id {run_id!r}")
    return run.campaign


def send_as_text(session: Session, run_id: str, key: str, text_key: str) -> int:
    """The run's documents under ``key`` now go as their text, under ``text_key`` (the service
    refused the file's type; no check was made for ``key``). How many rows moved."""
    t = table_of(DocumentRow)
    moved = session.connection().execute(
        update(t).where(t.c.run_id == run_id, t.c.idempotency_key == key).values(idempotency_key=text_key, mode="text")
    )
    return int(moved.rowcount or 0)


def add_documents(session: Session, run_id: str, campaign: str, documents: Iterable[PlannedLike]) -> int:
    """Record the accepted rows of a run (planning's ``PlannedDocument``); idempotent. How many
    were new. The documents' one writer, :func:`~doccheck.ledger._bulk.write_documents`."""
    return write_documents(session.connection(), [document_row(run_id, campaign, doc) for doc in documents])


def add_rejections(session: Session, run_id: str, rejections: Iterable[Rejection]) -> int:
    """Record the rows refused before sending (planning's ``Rejection``); idempotent per run.
    Their one writer, :func:`~doccheck.ledger._bulk.write_rejections`."""
    return write_rejections(session.connection(), run_id, list(rejections))


#: Each metadata key of a run once, ordered by where it is first seen: the first document (by row
#: id) that has it, then its place in that document's JSON object (stored as JSON text, in order).
_PG_KEYS = """
SELECT key FROM (
    SELECT DISTINCT ON (k.key) k.key, d.id, k.place
    FROM documents AS d CROSS JOIN LATERAL json_object_keys(d.metadata) WITH ORDINALITY AS k(key, place)
    WHERE d.run_id = :run_id AND json_typeof(d.metadata) = 'object'
    ORDER BY k.key, d.id, k.place
) AS firsts ORDER BY id, place
"""
# SQLite: the bare ``place`` comes from the row of MIN(d.id) (a key is in a document once).
_SQLITE_KEYS = """
SELECT key FROM (
    SELECT k.key AS key, MIN(d.id) AS first, k.id AS place
    FROM documents AS d, json_each(d.metadata) AS k
    WHERE d.run_id = :run_id AND json_type(d.metadata) = 'object'
    GROUP BY k.key
) ORDER BY first, place
"""


class RunMetadata(Mapping[str, dict[str, Any]]):
    """The documents' metadata of one run, read on demand: a ``Mapping`` for any caller, and
    :meth:`columns` / :meth:`for_ids` for a writer that goes a chunk of documents at a time."""

    #: Documents read per query when the whole run is walked.
    CHUNK = 2000

    def __init__(self, sessions: Callable[[], AbstractContextManager[Session]], run_id: str) -> None:
        self._sessions = sessions  # ``Ledger.session``: one short transaction per read
        self.run_id = run_id

    def _rows(self) -> Iterable[tuple[str, Mapping[str, Any] | None]]:
        """Every ``(document_id, metadata)`` of the run, a chunk at a time (keyset on the row id)."""
        last = -1
        while True:
            with self._sessions() as s:
                stmt = select(DocumentRow.id, DocumentRow.document_id, DocumentRow.doc_metadata).where(
                    DocumentRow.run_id == self.run_id, col(DocumentRow.id) > last
                )
                rows = s.exec(stmt.order_by(col(DocumentRow.id)).limit(self.CHUNK)).all()
            if not rows:
                return
            last = int(rows[-1][0] or 0)
            for _, document_id, metadata in rows:
                yield document_id, metadata

    def __iter__(self) -> Iterator[str]:
        seen: set[str] = set()
        for document_id, _ in self._rows():
            if document_id not in seen:
                seen.add(document_id)
                yield document_id

    def __len__(self) -> int:
        from sqlalchemy import func

        with self._sessions() as s:
            stmt = select(func.count(func.distinct(DocumentRow.document_id))).where(DocumentRow.run_id == self.run_id)
            return int(s.exec(stmt).one())

    def __getitem__(self, document_id: str) -> dict[str, Any]:
        found = self.for_ids([document_id])
        if document_id not in found:
            raise KeyError(document_id)
        return found[document_id]

    def columns(self) -> list[str]:
        """Metadata keys in first-seen order (``document_id`` excluded), found by the database in
        the stored JSON: the run's metadata is not read into Python for its keys (a term's
        100,000 documents: ~1 s of a PostgreSQL rerun; issue 28)."""
        with self._sessions() as s:
            postgres = s.get_bind().dialect.name == "postgresql"
            rows = s.execute(text(_PG_KEYS if postgres else _SQLITE_KEYS), {"run_id": self.run_id}).all()
        return [key for (key,) in rows if key != "document_id"]

    def for_ids(self, document_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The metadata of these documents (one query per 500 ids)."""
        ids = list(dict.fromkeys(str(i) for i in document_ids))
        found: dict[str, dict[str, Any]] = {}
        with self._sessions() as s:
            for i in range(0, len(ids), 500):
                stmt = select(DocumentRow.document_id, DocumentRow.doc_metadata).where(
                    DocumentRow.run_id == self.run_id, one_of(col(DocumentRow.document_id), ids[i : i + 500], s)
                )
                for document_id, metadata in s.exec(stmt):
                    found.setdefault(document_id, dict(metadata or {}))
        return found


# -- named reads and writes for the packages above (session first, Prefect's ``server/models`` shape) --


def set_run_products(session: Session, run_id: str, products: Iterable[str]) -> None:
    """Store the products a run actually used (planning learns them only once the manifest is read)."""
    run = session.get(RunRow, run_id)
    if run is not None:
        run.products = sorted(products)
        session.add(run)


def runs_with_pending(session: Session, campaign: str) -> list[str]:
    """Ids of the campaign's runs with a product not final yet (not fetched), oldest first."""
    stmt = (
        select(RunRow.id, RunRow.started_at)
        .join(DocumentRow, col(DocumentRow.run_id) == RunRow.id)
        .join(SubmissionRow, col(SubmissionRow.idempotency_key) == DocumentRow.idempotency_key)
        .join(OutcomeRow, col(OutcomeRow.check_id) == SubmissionRow.check_id)
        .where(
            RunRow.campaign == campaign,
            SubmissionRow.state == SubmissionState.SUBMITTED,
            or_(col(OutcomeRow.status) == ProductState.PROCESSING, col(OutcomeRow.fetched) == False),  # noqa: E712
        )
        .distinct()
        .order_by(col(RunRow.started_at))
    )
    return [run_id for run_id, _ in session.exec(stmt).all()]


def document_names(session: Session, run_id: str, document_ids: Sequence[str] | None = None) -> dict[str, str]:
    """``document_id → name`` (the manifest's, or the file name) of a run's accepted documents that
    have one (only of ``document_ids`` when given: one chunk of a wide table)."""
    stmt = select(DocumentRow.document_id, DocumentRow.name).where(DocumentRow.run_id == run_id)
    if document_ids is not None:
        if not document_ids:
            return {}
        stmt = stmt.where(one_of(col(DocumentRow.document_id), document_ids, session))
    return {doc: name for doc, name in session.exec(stmt).all() if name}


def document_hashes(
    session: Session, run_id: str, document_ids: Iterable[str]
) -> dict[str, tuple[str | None, int | None]]:
    """``document_id → (content hash, size)`` each of these documents had when the run read it
    (the size lets a store's file be read again without asking the store for it first)."""
    stmt = select(DocumentRow.document_id, DocumentRow.content_hash, DocumentRow.size_bytes).where(
        DocumentRow.run_id == run_id, one_of(col(DocumentRow.document_id), sorted(document_ids), session)
    )
    return {doc: (digest, size) for doc, digest, size in session.exec(stmt).all()}


def recorded_rows(session: Session, run_id: str, first_row: int, last_row: int) -> dict[int, dict[str, Any]]:
    """The ledger's documents of ``run_id`` in rows ``first_row``..``last_row``, by row number, each
    with its key's submission state (``state``, None when the key was never submitted): one query
    on the documents' (run, row number) index, so a batch read back costs the same at row 100 and
    at row 100,000 (:mod:`doccheck.pipeline.batches` reads a recorded plan one batch at a time)."""
    t, sub = table_of(DocumentRow), table_of(SubmissionRow)
    rows = session.execute(
        sa_select(
            t.c.row_number, t.c.document_id, t.c.idempotency_key, t.c.products, t.c.mode, t.c.content_hash, sub.c.state
        )  # fmt: skip
        .select_from(t.outerjoin(sub, sub.c.idempotency_key == t.c.idempotency_key))
        .where(t.c.run_id == run_id, t.c.row_number >= first_row, t.c.row_number <= last_row)
        .order_by(t.c.row_number)
    ).mappings()
    return {int(r["row_number"]): dict(r) for r in rows}
