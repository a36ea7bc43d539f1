"""The ledger's word store: a file's word count by the SHA-256 of its bytes, per campaign.

Why in the ledger: the count must outlive the run (the weekly rerun finds it) and go when
the campaign is purged (``extracted_words`` has ``campaign`` and ``run_id`` columns, which is
what ``doccheck.ledger._data_purge`` deletes by). What asks for it is ``doccheck.extract.cache``.
The same store answers for a store's files by location and listing identity
(``lookup_files``/``store_files``, :mod:`~doccheck.ledger._listed_files`): what the word counts
are to a file's bytes, that is to a bucket's file, so an unchanged one is not even fetched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy import Connection, insert, select
from sqlalchemy.exc import IntegrityError

from doccheck.extract.cache import FileKey, KnownFile
from doccheck.ledger._base import Database
from doccheck.ledger._document_reads import reads_for_hashes
from doccheck.ledger._engine import READ_ONLY
from doccheck.ledger._listed_files import known_files, record_files
from doccheck.ledger._sqltypes import table_of
from doccheck.ledger._tables import ExtractedWordsRow, utcnow

__all__ = ["LedgerWordStore"]

#: Digests per ``IN (...)`` clause.
_IN_CHUNK = 500
#: Counts remembered in memory for the run (then forgotten, so memory stays flat).
_MEMO = 50_000
#: Store files remembered in memory (~400 bytes each with their keys: ~4 MB at most).
_FILES_MEMO = 10_000


class LedgerWordStore:
    """Word counts of ``campaign``'s files; new ones are written as extracted by ``run_id``."""

    def __init__(self, db: Database, campaign: str, run_id: str | None) -> None:
        self._db = db
        self.campaign = campaign
        self.run_id = run_id
        self._memo: dict[str, int] = {}
        self._files: dict[FileKey, KnownFile] = {}

    def _reading(self) -> Connection:
        """A connection that only reads: on SQLite it begins deferred, so the lookups of a run's
        reading threads (one a store file) neither wait for the recording's writes nor hold them up."""
        return self._db.engine.connect().execution_options(**{READ_ONLY: True})

    def lookup(self, digests: Sequence[str]) -> dict[str, int]:
        """The counts known for ``digests`` (memory first, then one query per 500)."""
        found = {d: self._memo[d] for d in digests if d in self._memo}
        missing = [d for d in dict.fromkeys(digests) if d not in found]
        t = table_of(ExtractedWordsRow)
        with self._reading() as conn:
            for i in range(0, len(missing), _IN_CHUNK):
                stmt = select(t.c.content_hash, t.c.words).where(
                    t.c.campaign == self.campaign, t.c.content_hash.in_(missing[i : i + _IN_CHUNK])
                )
                found.update({str(h): int(w) for h, w in conn.execute(stmt)})
        self._keep(found)
        return found

    def lookup_read_as(self, digests: Sequence[str]) -> dict[str, str]:
        """What bytes of these SHA-256 digests were read as by the campaign's documents (one query per 500)."""
        with self._reading() as conn:
            return reads_for_hashes(conn, self.campaign, digests)

    def lookup_files(self, keys: Sequence[FileKey]) -> dict[FileKey, KnownFile]:
        """What reading these store files (location, listing identity) gave, for those a run of the
        campaign read (memory first: what ``prefetch_listed`` looked up a chunk at a time)."""
        found = {k: self._files[k] for k in keys if k in self._files}
        missing = [k for k in keys if k not in found]
        if missing:
            with self._reading() as conn:
                found.update(known_files(conn, self.campaign, missing))
            self._keep_files(found)
        return found

    def store_files(self, found: Mapping[FileKey, KnownFile]) -> None:
        """Keep what reading these store files gave (one already kept is left as it is)."""
        if not found:
            return
        self._keep_files(found)
        try:
            with self._db.engine.begin() as conn:
                record_files(conn, self.campaign, self.run_id, found)
        except IntegrityError:
            pass  # another process kept the same file meanwhile

    def store(self, found: Mapping[str, int]) -> None:
        """Write the counts not stored yet (a concurrent writer's same row is fine: same bytes)."""
        if not found:
            return
        self._keep(found)
        t = table_of(ExtractedWordsRow)
        digests = sorted(found)
        try:
            with self._db.engine.begin() as conn:
                for i in range(0, len(digests), _IN_CHUNK):
                    part = digests[i : i + _IN_CHUNK]
                    there = set(
                        conn.execute(
                            select(t.c.content_hash).where(t.c.campaign == self.campaign, t.c.content_hash.in_(part))
                        ).scalars()
                    )
                    rows = [{"campaign": self.campaign, "content_hash": d, "words": int(found[d]),
                             "run_id": self.run_id, "created_at": utcnow()} for d in part if d not in there]  # fmt: skip
                    if rows:
                        conn.execute(insert(t), rows)
        except IntegrityError:
            pass  # another process stored the same bytes' count meanwhile

    def _keep_files(self, found: Mapping[FileKey, KnownFile]) -> None:
        if len(self._files) + len(found) > _FILES_MEMO:
            self._files.clear()
        self._files.update(found)

    def _keep(self, found: Mapping[str, int]) -> None:
        if len(self._memo) + len(found) > _MEMO:
            self._memo.clear()
        self._memo.update(found)
