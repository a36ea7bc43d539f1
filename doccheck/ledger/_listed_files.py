"""What reading a file of an object store gave, by its location and its listing's identity (issue 48).

Why: a rerun from a bucket must decide from the store's listing (one LIST of the manifest's
prefix), never a GET or HEAD per document: with 100,000 documents a term, each request ~30 ms,
reading every file again only to hash it is most of a rerun. A file whose listing identity
(``doccheck.storage.Entry.identity``: its ETag and size) is the one a run read is the same bytes,
so its SHA-256, size, word count and the type it was read as are taken from here
(``doccheck.extract.cache.known_file``), or, for bytes that were refused (a photo, a scanned PDF),
the refusal's code and reason: its row is refused again without a GET. Kept in a table of its own (``listed_files``), which an
existing ledger gains when it is opened, per campaign (purged with it, or with the run that read
the file). Local files are not kept here: they are hashed every time, as before.

Plain functions taking the connection first, like :mod:`~doccheck.ledger._document_reads`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy import Connection, select

from doccheck.extract.cache import FileKey, KnownFile
from doccheck.ledger._bulk_sql import chunks, insert_absent
from doccheck.ledger._sqltypes import table_of
from doccheck.ledger._tables import ListedFileRow, utcnow

__all__ = ["known_files", "record_files"]

_T = table_of(ListedFileRow)


def known_files(conn: Connection, campaign: str, keys: Sequence[FileKey]) -> dict[FileKey, KnownFile]:
    """What was kept for those of ``keys`` a run of ``campaign`` read (one query per 500 locations)."""
    wanted = set(keys)
    found: dict[FileKey, KnownFile] = {}
    for part in chunks(sorted({location for location, _ in wanted})):
        stmt = select(
            _T.c.location, _T.c.identity, _T.c.content_hash, _T.c.size, _T.c.words, _T.c.read_as,
            _T.c.refused_code, _T.c.refused_reason,
        ).where(_T.c.campaign == campaign, _T.c.location.in_(part))  # fmt: skip
        for location, identity, digest, size, words, read_as, code, reason in conn.execute(stmt):
            key = (str(location), str(identity))
            if key in wanted:
                refused = None if code is None else (str(code), str(reason or ""))
                found[key] = KnownFile(str(digest), int(size), None if words is None else int(words), read_as, refused)
    return found


def record_files(conn: Connection, campaign: str, run_id: str | None, found: Mapping[FileKey, KnownFile]) -> int:
    """Keep what reading these files gave; one already kept (same campaign, location, identity) is
    left as it is (the same bytes). How many given."""
    rows = [
        {"campaign": campaign, "location": location, "identity": identity, "content_hash": known.content_hash,
         "size": known.size, "words": known.words, "read_as": known.read_as,
         "refused_code": known.refused[0] if known.refused else None,
         "refused_reason": known.refused[1] if known.refused else None, "run_id": run_id, "created_at": utcnow()}
        for (location, identity), known in found.items()
    ]  # fmt: skip
    for part in chunks(rows):
        insert_absent(conn, _T, ("campaign", "location", "identity"), part)
    return len(rows)
