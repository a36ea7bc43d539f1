"""Where signatures live: the ledger (real runs) or memory (a dry run, a notebook preview).

Both stores answer the same four questions, so the matcher does not care whether an old
document's data comes from this process or from a run of last month.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from doccheck.ledger.ledger import Ledger

__all__ = ["LedgerStore", "MemoryStore", "SignatureStore", "StoredSignature"]

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
        from doccheck.ledger.signatures import signature_keys

        return signature_keys(self.ledger, campaign, scheme)

    def add(self, rows: Iterable[Mapping[str, Any]]) -> int:
        from doccheck.ledger.signatures import store_signatures

        return store_signatures(self.ledger, rows)

    def signatures(self, campaign: str, scheme: str) -> Iterator[StoredSignature]:
        from doccheck.ledger.signatures import iter_signatures

        return iter_signatures(self.ledger, campaign, scheme)

    def shingles(self, ids: Sequence[int]) -> dict[int, bytes]:
        from doccheck.ledger.signatures import load_shingles

        return load_shingles(self.ledger, ids)

    def iter_shingles(self, campaign: str, scheme: str) -> Iterator[tuple[int, bytes]]:
        from doccheck.ledger.signatures import iter_shingle_sets

        return iter_shingle_sets(self.ledger, campaign, scheme)
