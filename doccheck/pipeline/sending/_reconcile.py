"""Reconciliation before resend: find the check an unanswered request may have created.

Why: a request that may have reached the service (the process died before the answer
was recorded, the connection dropped after sending, a timeout, a 5xx) is *unknown*, not
failed. Resending its Idempotency-Key is free only while the service still remembers the
key (the profile's ``key_retention_seconds``, an assumption: the interface promises no
retention at all). After that a resend creates and bills a second check.

The rule for money: **a key in doubt is resent only when a lookup positively rules out
its check; absence of evidence is not evidence.** A lookup rules a check out only when
it read everything that could hold it: a list walked newest first back past the first
attempt (or to its end), every listed check carrying its ``metadata``. A service without
a list, a list without metadata, served oldest first, ignoring its cursor, or too long
to walk before the deadline proves nothing: the key stays ``in_doubt`` and the user is
told how to settle it (``doccheck resolve``).

How: every check carries ``metadata.doccheck_ref`` = :func:`reference_for` (a hash of its
key; the key itself stays private to the ledger). One walk serves every key of a batch:
pages already read are kept, so N keys in doubt cost the pages back to the oldest of
them, not N walks. The walk stops when the cursor does not advance, after
``MAX_PAGES`` pages or at the deadline, and halves its page size when the service refuses
the one asked for.

When: a key in doubt is reconciled unless this very submitter sent it moments ago (then
the service certainly still holds the key and the replay is enough). A request left in
doubt by another process or an earlier run is always reconciled: this side cannot read the
service's clock, and a weekly schedule makes a gap past any retention the normal case.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from doccheck.client import (
    Check,
    NotFoundError,
    RateLimitError,
    ServerError,
    ServiceProfile,
    ValidationError,
    current_profile,
)
from doccheck.client import assumptions as A
from doccheck.errors import NetworkError
from doccheck.ledger import Doubt

log = logging.getLogger(__name__)

PAGE_SIZE = 100
MIN_PAGE_SIZE = 10
#: A walk never reads more pages than this (100,000 checks at the default page size).
MAX_PAGES = 1000


def reference_for(idempotency_key: str) -> str:
    """The ``doccheck_ref`` metadata value of a key: its SHA-256, first 32 hex digits."""
    return hashlib.sha256(idempotency_key.encode("utf-8")).hexdigest()[:32]


def with_reference(metadata: dict[str, Any] | None, idempotency_key: str) -> dict[str, Any]:
    """The caller's (allowlisted) metadata plus ``doccheck_ref``."""
    return {**(metadata or {}), A.REFERENCE_METADATA_KEY: reference_for(idempotency_key)}


def needs_reconciliation(
    doubt: Doubt, owner: str, *, now: datetime | None = None, profile: ServiceProfile | None = None
) -> bool:
    """Whether ``doubt`` must be looked up before its key is sent again by ``owner``."""
    if doubt.sent_by != owner or doubt.first_sent_at is None:
        return True
    prof = profile or current_profile()
    first = doubt.first_sent_at if doubt.first_sent_at.tzinfo else doubt.first_sent_at.replace(tzinfo=UTC)
    safe = timedelta(seconds=prof.key_retention_seconds - A.SERVICE_CLOCK_MARGIN_SECONDS)
    return (now or datetime.now(UTC)) - first > safe


#: The longest a create request can be at the service after it left this side: a check
#: whose request was first sent this long after the doubtful one's last send is newer.
REQUEST_SPAN_SECONDS = 600

#: ``check ids → when the ledger first sent the request that made each`` (ledger's clock),
#: for the checks of the page the ledger knows; awaited (the ledger runs off the event loop).
KnownSends = Callable[[list[str]], Awaitable[dict[str, datetime]]]


@dataclass(frozen=True)
class Lookup:
    """What a lookup proved about one key: its ``check``, that it has none (``ruled_out``),
    or neither (in doubt, with the ``reason``)."""

    check: Check | None = None
    ruled_out: bool = False
    reason: str = ""

    @property
    def in_doubt(self) -> bool:
        """Neither found nor ruled out: the key must not be sent again."""
        return self.check is None and not self.ruled_out


#: Errors of the listing after which the walk may succeed later (the document is requeued).
TRANSIENT = (RateLimitError, ServerError, NetworkError)


class Reconciler:
    """A lazy walk of ``GET /checks``, indexed by ``doccheck_ref``, that proves its order.

    "Not there" is concluded only from what was read: the list's end, or, walking newest
    first, a check the ledger knows was made after the doubtful request (``known_sends``)
    and then checks older than its first attempt. A page of older checks alone proves
    nothing (an oldest-first list starts with the account's history); a list seen going
    oldest first is read to its end; a list in no order proves nothing at all.
    """

    def __init__(
        self,
        client: Any,
        *,
        page_size: int = PAGE_SIZE,
        profile: ServiceProfile | None = None,
        deadline_at: float | None = None,
        max_pages: int = MAX_PAGES,
        known_sends: KnownSends | None = None,
    ) -> None:
        self.client = client
        self.profile = profile or current_profile()
        self.page_size = max(1, min(page_size, self.profile.list_max_page))
        self.deadline_at = deadline_at
        self.max_pages = max_pages
        self.known_sends = known_sends
        self.pages = 0
        self._found: dict[str, Check] = {}
        self._seen: set[str] = set()
        self._after: str | None = None
        self._oldest: datetime | None = None
        self._newest: datetime | None = None
        #: The order the pages showed: ``newest_first`` until a pair goes up, then ``oldest_first``.
        self._order = "oldest_first" if self.profile.list_order == "oldest_first" else "newest_first"
        #: When the newest check of ours seen (before any older one) was first sent (ledger's clock).
        self._anchor: datetime | None = None
        self._exhausted = False
        #: Why this walk can prove nothing (set once; then every key not found is in doubt).
        self._blind = self._blind_by_profile()
        self._lock = asyncio.Lock()

    def _blind_by_profile(self) -> str:
        prof = self.profile
        if not prof.list_checks:
            return "the service has no list of checks (service profile)"
        if not prof.list_metadata:
            return "the service's list of checks does not carry metadata (service profile)"
        if prof.list_order == "unknown":
            return "the order of the service's list of checks is unknown (service profile)"
        return ""

    def _reached(self, since: datetime | None, until: datetime | None) -> bool:
        """Whether what was read proves the key's check absent (see the class)."""
        if self._exhausted:
            return True
        if self._order != "newest_first" or since is None or self._oldest is None:
            return False
        if self._anchor is None or self._anchor <= _aware(until or since) + timedelta(seconds=REQUEST_SPAN_SECONDS):
            return False  # the order is not confirmed by a check known to be newer than the attempt
        return self._oldest < _aware(since) - timedelta(seconds=A.SERVICE_CLOCK_MARGIN_SECONDS)

    async def find(self, idempotency_key: str, since: datetime | None, until: datetime | None = None) -> Lookup:
        """What the service's list says about ``idempotency_key`` since ``since``.

        ``since`` is the first attempt's time (None: walk the whole list), ``until`` the last
        send's (default ``since``), both on the ledger's clock. Transient errors of the
        listing propagate (the caller requeues, never sends blind); every other reason the
        walk cannot finish leaves the key in doubt.
        """
        ref = reference_for(idempotency_key)
        async with self._lock:
            while ref not in self._found and not self._blind and not self._reached(since, until):
                await self._next_page()
            if ref in self._found:
                return Lookup(check=self._found[ref])
            if self._blind:
                return Lookup(reason=self._blind)
            return Lookup(ruled_out=True)

    async def _next_page(self) -> None:
        if self.pages >= self.max_pages:
            self._blind = f"the list of checks is longer than {self.max_pages} pages"
            return
        if self.deadline_at is not None and time.time() >= self.deadline_at:
            self._blind = "the submit deadline passed before the list of checks was read"
            return
        try:
            page = await self.client.list_checks(limit=self.page_size, starting_after=self._after)
        except TRANSIENT:
            raise
        except ValidationError:
            if self.page_size > MIN_PAGE_SIZE:  # a service whose page limit is lower
                self.page_size = max(MIN_PAGE_SIZE, self.page_size // 2)
                return
            self._blind = "the service refused every page size asked of its list of checks"
            return
        except NotFoundError:
            self._blind = "the service has no list of checks (GET /checks answered 404)"
            return
        except Exception as exc:  # noqa: BLE001 - any other answer proves nothing
            self._blind = f"the list of checks could not be read ({getattr(exc, 'code', None) or type(exc).__name__})"
            return
        self.pages += 1
        fresh = [c for c in page.data if c.id not in self._seen]
        self._index(page.data)
        await self._anchor_on(page.data)
        if not page.has_more or not page.data:
            self._exhausted = True
        elif not fresh or page.data[-1].id == self._after:
            self._blind = "the service's list ignores its cursor (starting_after): the same page came back"
        else:
            self._after = page.data[-1].id
        log.debug("reconciliation read page %d (%d checks indexed)", self.pages, len(self._found))

    def _index(self, checks: list[Check]) -> None:
        """Index a page and learn its order: a check without ``metadata`` blinds the walk; a
        pair going up makes it an oldest-first walk (read to the end); a pair going down
        after that, a list in no order (blind)."""
        previous = self._newest if self._order == "oldest_first" else self._oldest
        for check in checks:
            if "metadata" not in check.model_fields_set:
                self._blind = self._blind or "the service's list of checks does not carry metadata"
            ref = (check.metadata or {}).get(A.REFERENCE_METADATA_KEY)
            if isinstance(ref, str):
                self._found.setdefault(ref, check)
            if check.created_at is None:
                continue
            created = _aware(check.created_at)
            if previous is not None:
                self._learn_order(previous, created)
            previous = created
            self._oldest = created if self._oldest is None else min(self._oldest, created)
            self._newest = created if self._newest is None else max(self._newest, created)
        self._seen.update(c.id for c in checks)

    def _learn_order(self, previous: datetime, created: datetime) -> None:
        step = timedelta(seconds=1)
        if self._order == "newest_first" and created > previous + step:
            if self._anchor is not None:
                self._blind = self._blind or "the service's list of checks is in no order"
            self._order = "oldest_first"
            log.info("the service's list of checks goes oldest first: it is read to its end")
        elif self._order == "oldest_first" and created < previous - step:
            self._blind = self._blind or "the service's list of checks is in no order"

    async def _anchor_on(self, checks: list[Check]) -> None:
        """Remember the newest check of ours on a page read newest first, by when the
        ledger first sent its request (never the service's timestamp)."""
        if self.known_sends is None or self._order != "newest_first" or self._anchor is not None:
            return
        sent = await self.known_sends([c.id for c in checks])
        for check in checks:  # in list order: the first known one is the newest of ours so far
            if check.id in sent:
                self._anchor = _aware(sent[check.id])
                return


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
