"""What cohort matching keeps per document, and the pairs it found: two ledger tables.

Why in the ledger: a campaign's second run (or a rerun) must compare its new documents with
the documents of earlier runs, whose texts are gone (the ledger never keeps texts). So each
document leaves behind only what matching needs:

- ``signature``: its MinHash signature (``num_perm`` × uint32), for the LSH candidate search;
- ``sample``: its hash-sampled shingles (uint32, ~1 in 8), for the containment index;
- ``shingles``: its distinct shingle hashes truncated to 32 bits (4 bytes a shingle), so a
  candidate pair is verified by EXACT overlap even when one side is years old. 32-bit hashes
  of 5-word shingles cannot be turned back into a text.

Rows are keyed by ``(campaign, document_id, content_hash)``: a rerun finds its rows and
stores nothing again; a changed document under the same id gets a row of its own.
``scheme`` names the shingling and MinHash parameters, so rows made with other parameters
are recomputed rather than silently compared with incompatible ones.

``cohort_matches`` holds the verified pairs of each run (both document ids, kind, overlaps),
so ``collect_results`` can rewrite the reports of a run without the texts.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from sqlalchemy import delete, insert
from sqlmodel import Session, col, select

from doccheck.ledger._base import Database
from doccheck.ledger._sqltypes import table_of
from doccheck.ledger._tables import SIGNATURE_TABLES, CohortMatchRow, DocumentSignatureRow, utcnow

__all__ = [
    "CohortMatchRow",
    "DocumentSignatureRow",
    "SIGNATURE_TABLES",
    "cohort_match_rows",
    "document_ids_for_checks",
    "iter_shingle_sets",
    "iter_signatures",
    "load_shingles",
    "replace_cohort_matches",
    "signature_keys",
    "store_signatures",
]


def signature_keys(ledger: Database, campaign: str, scheme: str) -> set[tuple[str, str]]:
    """``(document_id, content_hash)`` of every stored signature of the campaign (this scheme)."""
    with ledger.session() as s:
        stmt = select(DocumentSignatureRow.document_id, DocumentSignatureRow.content_hash).where(
            DocumentSignatureRow.campaign == campaign, DocumentSignatureRow.scheme == scheme
        )
        return {(d, h) for d, h in s.exec(stmt).all()}


def store_signatures(ledger: Database, rows: Iterable[Mapping[str, Any]], *, chunk: int = 500) -> int:
    """Insert signature rows not yet stored (idempotent; safe when two runs race)."""
    from sqlalchemy.exc import IntegrityError

    count = 0
    batch: list[Mapping[str, Any]] = []

    def flush() -> int:
        if not batch:
            return 0
        try:
            with ledger.session() as s:  # a core INSERT: no ORM object per row (10,000 rows a run)
                s.execute(insert(table_of(DocumentSignatureRow)), [{"created_at": utcnow(), **row} for row in batch])
            return len(batch)
        except IntegrityError:  # another run stored some of them meanwhile: one by one
            added = 0
            for row in batch:
                try:
                    with ledger.session() as s:
                        s.add(DocumentSignatureRow(**row))
                    added += 1
                except IntegrityError:
                    pass
            return added

    for row in rows:
        batch.append(row)
        if len(batch) >= chunk:
            count += flush()
            batch = []
    count += flush()
    return count


def iter_signatures(
    ledger: Database, campaign: str, scheme: str, *, page: int = 2000
) -> Iterator[tuple[int, str, str, str, int, int, bytes, bytes]]:
    """``(id, document_id, content_hash, run_id, words, shingle_count, signature, sample)`` of the
    campaign, page by page (the full shingle sets stay in the database)."""
    columns = (
        DocumentSignatureRow.id,
        DocumentSignatureRow.document_id,
        DocumentSignatureRow.content_hash,
        DocumentSignatureRow.run_id,
        DocumentSignatureRow.words,
        DocumentSignatureRow.shingle_count,
        DocumentSignatureRow.signature,
        DocumentSignatureRow.sample,
    )
    for row in _pages(ledger, columns, campaign, scheme, page):
        yield tuple(row)


def _pages(ledger: Database, columns: tuple[Any, ...], campaign: str, scheme: str, page: int) -> Iterator[Any]:
    """The campaign's signature rows as ``columns`` (the row id first), by keyset pages of
    ``page`` rows in id order, each page read in its own short session."""
    last = 0
    while True:
        with ledger.session() as s:
            stmt = (
                select(*columns)
                .where(
                    DocumentSignatureRow.campaign == campaign,
                    DocumentSignatureRow.scheme == scheme,
                    col(DocumentSignatureRow.id) > last,
                )
                .order_by(col(DocumentSignatureRow.id))
                .limit(page)
            )
            rows = s.exec(stmt).all()
        if not rows:
            return
        yield from rows
        last = rows[-1][0]


def load_shingles(ledger: Database, ids: Sequence[int], *, chunk: int = 500) -> dict[int, bytes]:
    """Stored 32-bit shingle sets of the given signature row ids (only those asked for)."""
    out: dict[int, bytes] = {}
    for i in range(0, len(ids), chunk):
        with ledger.session() as s:
            stmt = select(DocumentSignatureRow.id, DocumentSignatureRow.shingles).where(
                col(DocumentSignatureRow.id).in_(list(ids[i : i + chunk]))
            )
            out.update({rid: data for rid, data in s.exec(stmt).all() if rid is not None})
    return out


def replace_cohort_matches(ledger: Database, run_id: str, campaign: str, rows: Iterable[Mapping[str, Any]]) -> int:
    """Store a run's pairs, replacing what an earlier attempt of the same run stored."""
    items = [CohortMatchRow(run_id=run_id, campaign=campaign, **dict(r)) for r in rows]
    with ledger.session() as s:
        s.exec(delete(CohortMatchRow).where(col(CohortMatchRow.run_id) == run_id))
        s.add_all(items)
    return len(items)


def cohort_match_rows(s: Session, run_id: str) -> list[dict[str, Any]]:
    """The ``cohort_matches`` report rows of a run (inside the caller's session)."""
    rows = s.exec(select(CohortMatchRow).where(CohortMatchRow.run_id == run_id).order_by(col(CohortMatchRow.id))).all()
    return [
        {
            "document_id": r.document_id,
            "matched_document_id": r.matched_document_id,
            "kind": r.kind,
            "percent": r.percent,
            "matched_percent": r.matched_percent,
            "matched_words": r.matched_words,
            "jaccard": r.jaccard,
            "run_id": r.run_id,
            "matched_run_id": r.matched_run_id,
        }
        for r in rows
    ]


def document_ids_for_checks(s: Session, campaign: str | None, check_ids: Iterable[str]) -> dict[str, str]:
    """``check id → document_id`` for checks the pipeline itself submitted (the campaign's first)."""
    from doccheck.ledger._tables import SubmissionRow

    ids = sorted({c for c in check_ids if c})
    out: dict[str, str] = {}
    for i in range(0, len(ids), 500):
        stmt = select(SubmissionRow.check_id, SubmissionRow.document_id).where(
            col(SubmissionRow.check_id).in_(ids[i : i + 500])
        )
        if campaign is not None:
            stmt = stmt.where(SubmissionRow.campaign == campaign)
        for check_id, document_id in s.exec(stmt).all():
            if check_id is not None:
                out.setdefault(check_id, document_id)
    return out


def iter_shingle_sets(ledger: Database, campaign: str, scheme: str, *, page: int = 1000) -> Iterator[tuple[int, bytes]]:
    """``(id, shingles)`` of every document of the campaign, one page in memory at a time
    (the boilerplate count streams through these)."""
    columns = (DocumentSignatureRow.id, DocumentSignatureRow.shingles)
    yield from ((rid, data) for rid, data in _pages(ledger, columns, campaign, scheme, page) if rid is not None)
