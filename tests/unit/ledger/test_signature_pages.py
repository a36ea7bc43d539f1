"""The campaign's signatures and shingle sets are read by keyset pages: every row once, in id
order, across page boundaries, and only the campaign's and the scheme's."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

from doccheck.ledger import Ledger, iter_shingle_sets, iter_signatures, store_signatures


def _row(campaign: str, i: int, scheme: str = "s1") -> dict[str, object]:
    return {
        "campaign": campaign, "document_id": f"d{i}", "content_hash": f"h{i}", "run_id": "r1", "scheme": scheme,
        "words": i, "shingle_count": i, "signature": b"sig%d" % i, "sample": b"sam%d" % i, "shingles": b"sh%d" % i,
    }  # fmt: skip


def test_every_row_is_read_once_across_pages(tmp_path: Path) -> None:
    with closing(Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")) as ledger:
        store_signatures(ledger, [_row("term", i) for i in range(7)] + [_row("other", 99), _row("term", 98, "s2")])
        signatures = list(iter_signatures(ledger, "term", "s1", page=3))
        shingles = list(iter_shingle_sets(ledger, "term", "s1", page=3))
    assert [row[1] for row in signatures] == [f"d{i}" for i in range(7)]
    assert signatures[0][1:] == ("d0", "h0", "r1", 0, 0, b"sig0", b"sam0")
    assert [data for _, data in shingles] == [b"sh%d" % i for i in range(7)]
    assert [rid for rid, _ in shingles] == [row[0] for row in signatures]
