"""What the claims (keys in flight) cost on the submit path's ledger bookkeeping.

Run:  .venv/bin/python benchmarks/claims_overhead.py [--n 500] [--concurrency 8] [--database-url URL]

``submit_batch`` with an in-memory client that answers at once (no HTTP), so the figure is
the ledger's bookkeeping per document, the part the claims add to: claim, re-read, doubt
read, mark sending, release (three short writes, two reads) next to mark_submitting/mark_submitted.
Baseline in the same run: the same N documents in a fresh ledger with the claim calls
replaced by no-ops (what the pipeline did before claims). Default: SQLite in a temporary
folder; ``--database-url`` for PostgreSQL (each level uses a fresh set of keys).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from doccheck.client import (  # noqa: E402
    Check,
    CheckList,
    Submission,  # noqa: E402
)
from doccheck.ledger import Ledger  # noqa: E402
from doccheck.pipeline import PlannedDocument, SubmitOptions, submit_batch  # noqa: E402


class InstantClient:
    """Creates a check per key at once, like the service (replays a known key)."""

    def __init__(self) -> None:
        self.ids = itertools.count(1)
        self.by_key: dict[str, Check] = {}

    async def submit(
        self, document: Any, *, products: Any, idempotency_key: str, metadata: Any, **_: Any
    ) -> Submission:
        check = self.by_key.get(idempotency_key)
        if check is None:
            check = Check.model_validate({
                "id": f"chk-{next(self.ids)}", "status": "processing", "products": list(products), "words": 120,
                "metadata": metadata, "cost": {"total_cents": 2, "ai_cents": 2}, "ai": {"status": "processing"},
            })  # fmt: skip
            self.by_key[idempotency_key] = check
        return Submission(check, "text")

    async def list_checks(self, limit: int | None = None, starting_after: str | None = None) -> CheckList:
        return CheckList(data=[], has_more=False)


class NoClaims(Ledger):
    """The baseline: no ownership bookkeeping at all."""

    def claim(self, key: str, owner: str, lease_seconds: float = 0) -> bool:
        return True

    def renew_claims(self, keys: Any, owner: str, lease_seconds: float = 0) -> int:
        return 0

    def release_claim(self, key: str, owner: str, *, settled: bool = False) -> None:
        return None

    def mark_sending(self, key: str, owner: str) -> bool:
        return True

    def settle(self, key: str) -> None:
        return None

    def doubt(self, key: str) -> None:
        return None


def documents(n: int, tag: str) -> list[PlannedDocument]:
    return [
        PlannedDocument(
            row_number=i,
            document_id=f"d{i}",
            name=f"d{i}",
            products=("ai",),
            text=f"essay {tag} {i} " * 30,
            path=None,
            size_bytes=None,
            content_hash=f"{tag}-{i}",
            words=120,
            metadata={"document_id": f"d{i}"},
            mode="text",
            idempotency_key=f"dc1-bench-{tag}-{i}",
            estimated_cost_cents=2,
        )  # fmt: skip
        for i in range(n)
    ]


def measure(database_url: str, n: int, concurrency: int, claims: bool) -> float:
    ledger = Ledger(database_url) if claims else NoClaims(database_url)
    tag = uuid.uuid4().hex[:8]
    run_id = ledger.start_run(campaign=f"bench-{tag}")
    docs = documents(n, tag)
    started = time.perf_counter()
    result = asyncio.run(submit_batch(InstantClient(), ledger, run_id, docs, SubmitOptions(concurrency=concurrency)))
    elapsed = time.perf_counter() - started
    assert result.submitted == n, result
    ledger.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for label, claims in (("no claims (baseline)", False), ("claims", True)):
            url = args.database_url or f"sqlite:///{Path(tmp) / (label.split()[0] + '.db')}"
            elapsed = measure(url, args.n, args.concurrency, claims)
            rows.append((label, elapsed))
        base = rows[0][1]
        print(f"N={args.n} concurrency={args.concurrency} ledger={'PostgreSQL' if args.database_url else 'SQLite'}")
        print(f"{'variant':<22} {'seconds':>8} {'ms/doc':>8} {'docs/s':>8} {'ratio':>6}")
        for label, elapsed in rows:
            print(
                f"{label:<22} {elapsed:8.2f} {1000 * elapsed / args.n:8.2f} {args.n / elapsed:8.1f} {elapsed / base:6.2f}"
            )


if __name__ == "__main__":
    main()
