"""Where signatures live: the ledger (real runs) or memory (a dry run, a notebook preview).

Both stores answer the same four questions, so the matcher does not care whether an old
document's data comes from this process or from a run of last month.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from doccheck.ledger import Ledger

__all__ = ["LedgerStore", "MemoryStore", "OverlayStore", "SignatureStore", "StoredSignature", "existing_ledger"]

#: (row id, document_id, content_hash, run_id, words, shingle_count, signature, sample)
StoredSignature = tuple[int, str, str, str, int, int, bytes, bytes]


class SignatureStore(Protocol):
    def keys(self, campaign: str, scheme: str) -> set[tuple[str, str]]: ...
    def add(self, rows: Iterable[Mapping[str, Any]]) -> int: ...
    def signatures(self, campaign: str, scheme: str) -> Iterator[StoredSignature]: ...
    def shingles(self, ids: Sequence[int]) -> dict[int, bytes]: ...
    def iter_shingles(self, campaign: str, scheme: str) -> Iterator[tuple[int, bytes]]: ...


class MemoryStore:
    """Signatures held in this process only (nothing written anywhere)."""

    def __init__(self) -> None:
        self._rows: list[dict[str, Any]] = []

    def keys(self, campaign: str, scheme: str) -> set[tuple[str, str]]:
        return {
            (r["document_id"], r["content_hash"])
            for r in self._rows
            if r["campaign"] == campaign and r["scheme"] == scheme
        }

    def add(self, rows: Iterable[Mapping[str, Any]]) -> int:
        count = 0
        for row in rows:
            self._rows.append({**row, "id": len(self._rows) + 1})
            count += 1
        return count

    def signatures(self, campaign: str, scheme: str) -> Iterator[StoredSignature]:
        for r in self._rows:
            if r["campaign"] == campaign and r["scheme"] == scheme:
                yield (r["id"], r["document_id"], r["content_hash"], r["run_id"], r["words"],
                       r["shingle_count"], r["signature"], r["sample"])  # fmt: skip

    def shingles(self, ids: Sequence[int]) -> dict[int, bytes]:
        return {i: self._rows[i - 1]["shingles"] for i in ids}

    def iter_shingles(self, campaign: str, scheme: str) -> Iterator[tuple[int, bytes]]:
        for r in self._rows:
            if r["campaign"] == campaign and r["scheme"] == scheme:
                yield r["id"], r["shingles"]


class LedgerStore:
    """Signatures in the ledger's ``document_signatures`` table (SQLite or PostgreSQL)."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def keys(self, campaign: str, scheme: str) -> set[tuple[str, str]]:
        from doccheck.ledger import signature_keys

        return signature_keys(self.ledger, campaign, scheme)

    def add(self, rows: Iterable[Mapping[str, Any]]) -> int:
        from doccheck.ledger import store_signatures

        return store_signatures(self.ledger, rows)

    def signatures(self, campaign: str, scheme: str) -> Iterator[StoredSignature]:
        from doccheck.ledger import iter_signatures

        return iter_signatures(self.ledger, campaign, scheme)

    def shingles(self, ids: Sequence[int]) -> dict[int, bytes]:
        from doccheck.ledger import load_shingles

        return load_shingles(self.ledger, ids)

    def iter_shingles(self, campaign: str, scheme: str) -> Iterator[tuple[int, bytes]]:
        from doccheck.ledger import iter_shingle_sets

        return iter_shingle_sets(self.ledger, campaign, scheme)


class OverlayStore:
    """A ledger's signatures read, new ones kept in memory: a dry run compares with earlier
    runs of the campaign without writing a byte to the ledger."""

    def __init__(self, ledger: Ledger) -> None:
        self.base = LedgerStore(ledger)
        self.memory = MemoryStore()

    def keys(self, campaign: str, scheme: str) -> set[tuple[str, str]]:
        return self.base.keys(campaign, scheme) | self.memory.keys(campaign, scheme)

    def add(self, rows: Iterable[Mapping[str, Any]]) -> int:
        return self.memory.add(rows)

    def signatures(self, campaign: str, scheme: str) -> Iterator[StoredSignature]:
        yield from self.base.signatures(campaign, scheme)
        for row in self.memory.signatures(campaign, scheme):
            yield (-row[0], *row[1:])  # memory rows: negative ids

    def shingles(self, ids: Sequence[int]) -> dict[int, bytes]:
        out = self.base.shingles([i for i in ids if i > 0])
        out.update({-i: data for i, data in self.memory.shingles([-i for i in ids if i < 0]).items()})
        return out

    def iter_shingles(self, campaign: str, scheme: str) -> Iterator[tuple[int, bytes]]:
        yield from self.base.iter_shingles(campaign, scheme)
        for row_id, data in self.memory.iter_shingles(campaign, scheme):
            yield -row_id, data


def existing_ledger(database_url: str | None) -> Ledger | None:
    """The ledger at ``database_url`` if there is one to read (a SQLite file that does not
    exist is not created: a dry run must leave no trace)."""
    if not database_url:
        return None
    from sqlalchemy.engine import make_url

    from doccheck.ledger import Ledger

    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":
        database = url.database or ""
        if database in ("", ":memory:") or not Path(database).is_file():
            return None
    return Ledger(database_url)
