"""A digest of everything in the ledger that a run's reports are built from (issue 49).

Why: a term's weekly rerun with nothing new rebuilt the same reports, wide table and group
pages from the ledger, row by row in Python: 59 % of a 100,000-document rerun's CPU. A run
folder records this digest; the next run of the campaign whose digest is the same takes its
files from that folder (``doccheck.outputs``) and rewrites only what names the run.

Content, not a change counter: a counter bumped by every writer would need every write path
(the run, the receiver, ``collect``, ``review``, a worker on another machine) to keep it, and a
transaction still open when it is read would be missed. The digest reads the rows themselves
(SQLite: in the driver's own types, no ORM, no JSON decoding; PostgreSQL: hashed by the server,
a table's rows as text in one ``md5``), so a change anywhere in them, by anyone, gives another
digest: a missed change can only cost a rebuild, never a stale report.

What is read: the run's own rows (``documents``, ``rejections``, ``cohort_matches``: every
column but their ids and ``run_id``, ordered by their natural keys, so the same manifest gives
the same digest in another run) and the campaign's rows that reports show (``submissions``
but ``last_polled_at``, ``outcomes`` but ``raw`` (the service's answer as given; reports
read the fields taken from it), ``contradictions``, ``check_costs``, ``document_reads``,
``review_dispositions``, ``pair_passages``). Not read: leases, budgets, caches keyed by
content (words, listings, signatures), raw webhook deliveries (their effect is in
``outcomes``) and the ``runs`` rows (a report's run-level figures are its caller's, not the
rows').
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection
from sqlmodel import col

from doccheck.ledger._base import Database
from doccheck.ledger._tables import RunRow, SubmissionRow

__all__ = ["report_inputs_digest", "submitted_in_run"]

#: The run's own rows: (table, natural order). Their ``id`` and ``run_id`` are left out.
_RUN_TABLES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("documents", ("document_id",)),
    ("rejections", ("row_number", "document_id", "field", "code", "reason")),
    ("cohort_matches", ("document_id", "matched_document_id", "kind", "matched_run_id")),
)
#: The campaign's rows the reports read: (table, order, columns left out).
_CAMPAIGN_TABLES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("submissions", ("idempotency_key",), ("last_polled_at",)),  # polled again is not changed
    ("outcomes", ("check_id", "product", "id"), ("raw",)),  # the answer as given: reports read its fields
    ("check_costs", ("check_id",), ()),
    ("document_reads", ("document_id", "content_hash", "run_id"), ()),
    ("review_dispositions", ("id",), ()),
    ("pair_passages", ("left_hash", "right_hash", "basis"), ()),
)
#: Rows hashed at a time (the driver's tuples, one ``repr`` a batch): a few MB at most, which the
#: heap may keep after (the peak RSS at 5,000 rows a batch: +16 MB; at 500: +5 MB).
_BATCH = 500


def report_inputs_digest(ledger: Database, run_id: str) -> str:
    """The hex digest of the ledger's report inputs for ``run_id`` (see the module's docstring);
    ValueError when the ledger has no such run."""
    digest = hashlib.blake2b(digest_size=20)
    with ledger.engine.connect() as conn:
        campaign = conn.exec_driver_sql(*_query(conn, "SELECT campaign FROM runs WHERE id = {run}", run=run_id))
        found = campaign.scalar()
        if found is None:
            raise ValueError(f"no run {run_id!r} in the ledger")
        for table, order in _RUN_TABLES:
            columns = _columns(table, ("id", "run_id"))
            _hash(digest, table, _rows(conn, table, columns, "run_id = {run}", order, run=run_id))
        for table, order, left_out in _CAMPAIGN_TABLES:
            columns = _columns(table, left_out)
            _hash(digest, table, _rows(conn, table, columns, "campaign = {campaign}", order, campaign=found))
        contradictions = _columns("contradictions", ())
        where = "check_id IN (SELECT check_id FROM submissions WHERE campaign = {campaign})"
        _hash(digest, "contradictions", _rows(conn, "contradictions", contradictions, where,
                                              ("check_id", "product", "id"), campaign=found))  # fmt: skip
        conn.rollback()
    return digest.hexdigest()


def submitted_in_run(ledger: Database, run_id: str) -> bool:
    """Whether a check of the run's campaign was submitted while the run ran (its reports'
    ``new_this_run`` is then true somewhere): a folder taken from another run, whose flags are
    rewritten as false, would not be the one a rebuild writes (a ``collect`` of a first run)."""
    with ledger.session() as s:
        run = s.get(RunRow, run_id)
        if run is None:
            return False
        when = col(SubmissionRow.submitted_at)
        found = select(col(SubmissionRow.id)).where(col(SubmissionRow.campaign) == run.campaign, when >= run.started_at)
        if run.finished_at is not None:
            found = found.where(when <= run.finished_at)
        return s.execute(found.limit(1)).first() is not None


def _columns(table: str, left_out: Sequence[str]) -> list[str]:
    return [c.name for c in RunRow.metadata.tables[table].columns if c.name not in left_out]


def _rows(
    conn: Connection, table: str, columns: Sequence[str], where: str, order: Sequence[str], **params: str
) -> Iterator[Sequence[Any]]:
    """The rows as the driver gives them (SQLite: text and numbers), ``_BATCH`` at a time: no type
    processing, no ORM. PostgreSQL hashes them itself (each row as its text, in order) and gives
    one ``md5``: 100,000 rows never cross the connection nor become Python objects."""
    quote = conn.dialect.identifier_preparer.quote
    listed, ordered = ", ".join(quote(c) for c in columns), ", ".join(quote(c) for c in order)
    statement = f"SELECT {listed} FROM {quote(table)} WHERE {where} ORDER BY {ordered}"
    if conn.dialect.name == "postgresql":
        statement = (f"SELECT md5(coalesce(string_agg(CAST(ROW({listed}) AS text), chr(10) ORDER BY {ordered}), '')) "
                     f"FROM {quote(table)} WHERE {where}")  # fmt: skip
    result = conn.exec_driver_sql(*_query(conn, statement, **params))
    cursor = result.cursor
    assert cursor is not None
    try:
        while batch := cursor.fetchmany(_BATCH):
            yield batch
    finally:
        result.close()


def _query(conn: Connection, statement: str, **params: str) -> tuple[str, Any]:
    """``statement`` with ``{name}`` placeholders in the driver's own parameter style."""
    if conn.dialect.paramstyle == "qmark":  # sqlite3
        names = list(params)
        return statement.format(**dict.fromkeys(names, "?")), tuple(params[n] for n in _order(statement, names))
    return statement.format(**{n: f"%({n})s" for n in params}), params


def _order(statement: str, names: Sequence[str]) -> list[str]:
    """The names in the order their placeholders appear in ``statement`` (qmark is positional)."""
    found = sorted((statement.index("{" + n + "}"), n) for n in names if "{" + n + "}" in statement)
    return [n for _, n in found]


def _hash(digest: Any, table: str, batches: Iterator[Sequence[Any]]) -> None:
    digest.update(f"\x00{table}\x00".encode())
    for batch in batches:
        digest.update(repr(batch).encode())
