"""The passages a cohort pair's two documents share, kept by the SHA-256 of each side's bytes (issue 48).

Why: the report page shows each shown pair's shared passages, found in the two texts when the
page is written (``doccheck.outputs.instructor._evidence``). The ledger keeps no text, so every
page read both documents again from where their manifest named them: on a rerun from a bucket
with nothing changed, a HEAD and a GET of each side of every pair shown, the only document reads
left. Passages cannot change while both sides' bytes do not (nor the finder, the extractor and
the template text: the caller's ``basis``), so they are kept here, what the page publishes and
no more: at most three passages a pair, each side's excerpt bounded, against a whole text per
document (tens of kilobytes, and the one thing the ledger promises never to keep). Per campaign,
purged with it or with the run that found them, like the page that shows them.

Plain functions taking the connection first, like :mod:`~doccheck.ledger._listed_files`; the
passages are the caller's JSON text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy import Connection, select

from doccheck.ledger._bulk_sql import chunks, insert_absent
from doccheck.ledger._sqltypes import table_of
from doccheck.ledger._tables import PairPassagesRow, utcnow

__all__ = ["PairKey", "keep_passages", "kept_passages"]

#: A pair's key: the SHA-256 of the left and the right document's bytes, and the caller's basis.
PairKey = tuple[str, str, str]

_T = table_of(PairPassagesRow)


def kept_passages(conn: Connection, campaign: str, keys: Sequence[PairKey]) -> dict[PairKey, str]:
    """The passages (JSON text) kept for those of ``keys`` a page of ``campaign`` found (one query per 500)."""
    wanted = set(keys)
    found: dict[PairKey, str] = {}
    for part in chunks(sorted({left for left, _, _ in wanted})):
        stmt = select(_T.c.left_hash, _T.c.right_hash, _T.c.basis, _T.c.passages).where(
            _T.c.campaign == campaign, _T.c.left_hash.in_(part)
        )
        for left, right, basis, passages in conn.execute(stmt):
            key = (str(left), str(right), str(basis))
            if key in wanted:
                found[key] = str(passages)
    return found


def keep_passages(conn: Connection, campaign: str, run_id: str | None, found: Mapping[PairKey, str]) -> int:
    """Keep these pairs' passages; a pair already kept is left as it is (the same bytes). How many given."""
    rows = [
        {"campaign": campaign, "left_hash": left, "right_hash": right, "basis": basis, "passages": passages,
         "run_id": run_id, "created_at": utcnow()}
        for (left, right, basis), passages in found.items()
    ]  # fmt: skip
    for part in chunks(rows):
        insert_absent(conn, _T, ("campaign", "left_hash", "right_hash", "basis"), part)
    return len(rows)
