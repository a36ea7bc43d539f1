"""What each document's file was read as, kept per campaign, document and bytes (issue 41).

Why: doccheck reads a file as what its bytes are (``doccheck.extract``), so an
OpenDocument file named ``essay.docx`` is read as ``.odt``; the reports say so ("read as
OpenDocument text: the file is named .docx") long after the run that read it, and a rerun of
the same bytes says it again without reading them (the word store's cache hit). Kept in a table
of its own (``document_reads``), which an existing ledger gains when it is opened, keyed like
the cohort signatures: (campaign, document, content hash), purged with the campaign.

Plain functions taking the connection first (``insert_absent``/``select`` in the caller's
transaction); ``read_as`` and ``named_as`` are extensions with their dot (``".odt"``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, func, select

from doccheck.extract import same_format
from doccheck.ledger._base import ReadLike
from doccheck.ledger._bulk_sql import chunks, insert_absent
from doccheck.ledger._in_list import one_of
from doccheck.ledger._sqltypes import table_of
from doccheck.ledger._tables import DocumentReadRow, DocumentRow, utcnow

__all__ = ["count_misnamed", "read_columns", "reads_for_documents", "reads_for_hashes", "record_reads"]

_T = table_of(DocumentReadRow)


def record_reads(conn: Connection, campaign: str, run_id: str | None, documents: Iterable[ReadLike]) -> int:
    """Keep what each of ``documents`` was read as (those with a ``read_as``: files doccheck read);
    one already kept for the same campaign, document and bytes is left as it is. How many given."""
    rows = {
        (doc.document_id, doc.content_hash): {
            "campaign": campaign, "document_id": doc.document_id, "content_hash": doc.content_hash,
            "read_as": doc.read_as, "named_as": doc.named_as, "run_id": run_id, "created_at": utcnow(),
        }
        for doc in documents
        if getattr(doc, "read_as", None) and getattr(doc, "content_hash", None)
    }  # fmt: skip
    for part in chunks(list(rows.values())):
        insert_absent(conn, _T, ("campaign", "document_id", "content_hash"), part)
    return len(rows)


def reads_for_documents(
    conn: Connection, campaign: str, documents: Sequence[tuple[str, str | None]]
) -> dict[tuple[str, str], tuple[str, str]]:
    """``(read_as, named_as)`` by ``(document_id, content_hash)`` for those of ``documents`` kept."""
    wanted = {(d, h) for d, h in documents if h}
    found: dict[tuple[str, str], tuple[str, str]] = {}
    for part in chunks(sorted({d for d, _ in wanted})):
        stmt = select(_T.c.document_id, _T.c.content_hash, _T.c.read_as, _T.c.named_as).where(
            _T.c.campaign == campaign, one_of(_T.c.document_id, part, conn)
        )
        for doc_id, digest, read_as, named_as in conn.execute(stmt):
            if (doc_id, digest) in wanted:
                found[(str(doc_id), str(digest))] = (str(read_as), str(named_as))
    return found


def reads_for_hashes(conn: Connection, campaign: str, digests: Sequence[str]) -> dict[str, str]:
    """What bytes of these SHA-256 digests were read as, by any document of ``campaign`` (the type
    the bytes are; for bytes without a signature, the name's type of the document that read them)."""
    found: dict[str, str] = {}
    for part in chunks(sorted(set(digests))):
        stmt = select(_T.c.content_hash, _T.c.read_as).where(_T.c.campaign == campaign, _T.c.content_hash.in_(part))
        found.update({str(h): str(k) for h, k in conn.execute(stmt)})
    return found


def read_columns(read: tuple[str, str] | None) -> dict[str, Any]:
    """A report row's ``read_as`` and ``named_as`` (types without their dot: ``"odt"``) and
    ``misnamed`` (the name says another type than the bytes); all None when the file was not
    read by doccheck (a text row, a file sent as it is, or one read before this was kept)."""
    if read is None:
        return {"read_as": None, "named_as": None, "misnamed": None}
    read_as, named_as = read
    return {"read_as": read_as.lstrip("."), "named_as": named_as.lstrip(".") or None,
            "misnamed": not same_format(named_as, read_as)}  # fmt: skip


def count_misnamed(conn: Connection, run_id: str) -> int:
    """The run's documents whose file's name says another type than its bytes (one grouped query)."""
    docs = table_of(DocumentRow)
    joined = docs.join(
        _T,
        (_T.c.campaign == docs.c.campaign)
        & (_T.c.document_id == docs.c.document_id)
        & (_T.c.content_hash == docs.c.content_hash),
    )
    stmt = (
        select(_T.c.read_as, _T.c.named_as, func.count())
        .select_from(joined)
        .where(docs.c.run_id == run_id)
        .group_by(_T.c.read_as, _T.c.named_as)
    )
    return sum(int(n) for read_as, named_as, n in conn.execute(stmt) if not same_format(named_as, read_as))
