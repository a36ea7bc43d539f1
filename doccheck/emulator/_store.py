"""In-memory state of the emulated service: accounts and everything they own.

All mutation happens on the one asyncio event loop and never across an ``await``, so
the store needs no locks. Every resource hangs off its :class:`Account`, which is what
makes cross-account access impossible: a lookup only ever searches the caller's account.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from doccheck import domain
from doccheck.emulator._clock import iso
from doccheck.emulator._similarity import ShingleIndex

PRODUCTS = domain.PRODUCTS
FILE_KINDS = ("similarity_pdf", "pdf", "original")


@dataclass
class Webhook:
    url: str
    secret: str
    created_at: float
    last_delivery: dict[str, Any] | None = None


@dataclass
class Upload:
    id: str
    filename: str
    content_type: str
    size_bytes: int | None
    created_at: float
    expires_at: float
    status: str = "waiting"  # waiting | consumed | deleted
    data: bytes | None = None
    sha256: str | None = None
    check_id: str | None = None


@dataclass
class Check:
    id: str
    seq: int
    name: str
    products: list[str]
    words: int
    created_at: float
    metadata: dict[str, Any]
    cost: dict[str, int]
    original: bytes
    original_filename: str
    original_content_type: str
    results: dict[str, dict[str, Any]]  # computed at creation, revealed as each product finishes
    webhook_url: str | None
    status: str = "processing"
    completed_at: float | None = None
    error: dict[str, Any] | None = None
    refunded_cents: int = 0
    ai: dict[str, Any] | None = None
    similarity: dict[str, Any] | None = None
    files: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(FILE_KINDS, False))
    rendered: dict[str, bytes] = field(default_factory=dict)

    def product_state(self, product: str) -> dict[str, Any] | None:
        return self.ai if product == "ai" else self.similarity

    def resource(self) -> dict[str, Any]:
        """The check as the API shows it."""
        return {
            "id": self.id,
            "object": "check",
            "status": self.status,
            "name": self.name,
            "products": list(self.products),
            "words": self.words,
            "created_at": iso(self.created_at),
            "completed_at": iso(self.completed_at) if self.completed_at is not None else None,
            "metadata": self.metadata,
            "cost": {**self.cost, "refunded_cents": self.refunded_cents},
            "error": self.error,
            "ai": self.ai,
            "similarity": self.similarity,
            "files": dict(self.files),
        }

    def summary(self) -> dict[str, Any]:
        """The ``check`` object of an event payload (DESIGN.md)."""
        return {
            "id": self.id,
            "status": self.status,
            "name": self.name,
            "products": list(self.products),
            "metadata": self.metadata,
            "ai": {"status": self.ai["status"]} if self.ai else None,
            "similarity": {"status": self.similarity["status"]} if self.similarity else None,
        }


@dataclass
class IdempotencyRecord:
    fingerprint: str
    check_id: str
    created_at: float


@dataclass
class Account:
    api_key: str
    balance_cents: int
    charged_cents: int = 0
    checks: dict[str, Check] = field(default_factory=dict)
    check_order: list[str] = field(default_factory=list)  # oldest first
    uploads: dict[str, Upload] = field(default_factory=dict)
    webhook: Webhook | None = None
    idempotency: dict[str, IdempotencyRecord] = field(default_factory=dict)
    index: ShingleIndex = field(default_factory=ShingleIndex)
    recent_requests: deque[float] = field(default_factory=deque)

    def waiting_uploads(self) -> int:
        return sum(1 for u in self.uploads.values() if u.status == "waiting")

    def state(self) -> dict[str, Any]:
        """This account's entry in ``GET /_emulator/state``."""
        return {
            "balance_cents": self.balance_cents,
            "checks": len(self.checks),
            "charged_cents": self.charged_cents,
            "waiting_uploads": self.waiting_uploads(),
            "webhook_url": self.webhook.url if self.webhook else None,
        }


class Store:
    """All accounts, keyed by API key, and the global creation sequence."""

    def __init__(self) -> None:
        self.accounts: dict[str, Account] = {}
        self.uploads_by_id: dict[str, Upload] = {}  # for the storage origin, which has no API key
        self._seq = itertools.count(1)

    def add_account(self, api_key: str, balance_cents: int) -> Account:
        account = Account(api_key=api_key, balance_cents=balance_cents)
        self.accounts[api_key] = account
        return account

    def next_seq(self) -> int:
        return next(self._seq)
