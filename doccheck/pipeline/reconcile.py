"""Reconciliation before resend: find the check an unanswered request may have created.

Why: a request that may have reached the service (the process died before the answer
was recorded, the connection dropped after sending, a timeout, a 5xx) is *unknown*, not
failed. Resending its Idempotency-Key is free only while the service still remembers the
key (``IDEMPOTENCY_KEY_RETENTION_SECONDS``, an assumption: the interface promises no
retention at all). After that a resend creates and bills a second check.

How: every check carries ``metadata.doccheck_ref`` = :func:`reference_for` (a hash of its
key; the key itself stays private to the ledger). Before a key in doubt is sent again,
``GET /checks`` is paged newest first back to the first attempt's time (less a clock
margin) and a check with that reference is adopted instead of sending. One walk serves
every key of a batch: pages already read are kept, so N keys in doubt cost the pages back
to the oldest of them, not N walks.

When: a key in doubt is reconciled unless this very submitter sent it moments ago (then
the service certainly still holds the key and the replay is enough). A request left in
doubt by another process or an earlier run is always reconciled: this side cannot read the
service's clock, and a weekly schedule makes a gap past any retention the normal case.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

from doccheck.client import assumptions as A
from doccheck.client.models import Check
from doccheck.ledger.claims import Doubt
from doccheck.ledger.tables import utcnow

log = logging.getLogger(__name__)

PAGE_SIZE = 100


def reference_for(idempotency_key: str) -> str:
    """The ``doccheck_ref`` metadata value of a key: its SHA-256, first 32 hex digits."""
    return hashlib.sha256(idempotency_key.encode("utf-8")).hexdigest()[:32]


def with_reference(metadata: dict[str, Any] | None, idempotency_key: str) -> dict[str, Any]:
    """The caller's (allowlisted) metadata plus ``doccheck_ref``."""
    return {**(metadata or {}), A.REFERENCE_METADATA_KEY: reference_for(idempotency_key)}


def needs_reconciliation(doubt: Doubt, owner: str, *, now: datetime | None = None) -> bool:
    """Whether ``doubt`` must be looked up before its key is sent again by ``owner``."""
    if doubt.sent_by != owner or doubt.first_sent_at is None:
        return True
    first = doubt.first_sent_at if doubt.first_sent_at.tzinfo else doubt.first_sent_at.replace(tzinfo=UTC)
    safe = timedelta(seconds=A.IDEMPOTENCY_KEY_RETENTION_SECONDS - A.SERVICE_CLOCK_MARGIN_SECONDS)
    return (now or utcnow()) - first > safe


class Reconciler:
    """A lazy newest-first walk of ``GET /checks``, indexed by ``doccheck_ref``."""

    def __init__(self, client: Any, *, page_size: int = PAGE_SIZE) -> None:
        self.client = client
        self.page_size = page_size
        self.pages = 0
        self._found: dict[str, Check] = {}
        self._after: str | None = None
        self._oldest: datetime | None = None
        self._exhausted = False
        self._lock = asyncio.Lock()

    def _reached(self, since: datetime | None) -> bool:
        if self._exhausted:
            return True
        if since is None or self._oldest is None:
            return False
        since = since if since.tzinfo else since.replace(tzinfo=UTC)
        return self._oldest < since - timedelta(seconds=A.SERVICE_CLOCK_MARGIN_SECONDS)

    async def find(self, idempotency_key: str, since: datetime | None) -> Check | None:
        """The service's check for ``idempotency_key`` created after ``since``, or None.

        ``since`` is the first attempt's time (None: walk the whole list). Errors of the
        listing propagate: the caller must not send a key it could not reconcile.
        """
        ref = reference_for(idempotency_key)
        async with self._lock:
            while ref not in self._found and not self._reached(since):
                await self._next_page()
            return self._found.get(ref)

    async def _next_page(self) -> None:
        page = await self.client.list_checks(limit=self.page_size, starting_after=self._after)
        self.pages += 1
        for check in page.data:
            ref = (check.metadata or {}).get(A.REFERENCE_METADATA_KEY)
            if isinstance(ref, str):
                self._found.setdefault(ref, check)
            if check.created_at is not None:
                created = check.created_at if check.created_at.tzinfo else check.created_at.replace(tzinfo=UTC)
                if self._oldest is None or created < self._oldest:
                    self._oldest = created
        if not page.has_more or not page.data:
            self._exhausted = True
        else:
            self._after = page.data[-1].id
        log.debug("reconciliation read page %d (%d checks indexed)", self.pages, len(self._found))
