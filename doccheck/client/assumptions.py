"""The protocol constants the client assumes where the service interface does NOT show them.

The interface (``shared/interface/document-check-service.md``) leaves error codes, status
values, result shapes, paths and prices unspecified. DESIGN.md and docs/contracts.md fix
them for the emulator. The choices a real service may have made otherwise (error bodies,
status words, score scales, the list, the key retention, when the price is known) are the
typed service profile, :mod:`doccheck.client._profile`; this module keeps the constants
(paths, headers, limits, the price rule). Nothing here is
imported by the emulator: the two sides implement the protocol's assumptions (paths,
headers, error shapes) independently, so a test that passes proves they agree rather than
that they share a bug. The domain's rules (products, states, size limits, the price rule)
live in :mod:`doccheck.domain`, which both sides import; they are re-exported here under
their usual names.
"""

from __future__ import annotations

from collections.abc import Iterable

from doccheck import domain
from doccheck.config import API_VERSION_SUFFIX as API_VERSION_SUFFIX
from doccheck.domain import CENTS_PER_100_WORDS as CENTS_PER_100_WORDS
from doccheck.domain import MAX_WAITING_UPLOADS as MAX_WAITING_UPLOADS
from doccheck.domain import MEGABYTE as MEGABYTE
from doccheck.domain import MIN_BILLED_WORDS as MIN_BILLED_WORDS
from doccheck.domain import MULTIPART_MAX_BYTES as MULTIPART_MAX_BYTES
from doccheck.domain import UPLOAD_MAX_BYTES as UPLOAD_MAX_BYTES
from doccheck.domain import UPLOAD_URL_LIFETIME_SECONDS as UPLOAD_URL_LIFETIME_SECONDS
from doccheck.domain import billed_words as billed_words
from doccheck.domain import estimate_cost_cents as estimate_cost_cents
from doccheck.extract import SUPPORTED_TYPES as _EXTRACT_TYPES

# --- Versioning and paths -------------------------------------------------------------
#: The base URL must end with this segment (interface, "Versioning"); the settings check it.
CHECKS_PATH = "/checks"
UPLOADS_PATH = "/uploads"
WEBHOOK_PATH = "/webhook"
WEBHOOK_ROTATE_PATH = "/webhook/rotate"


def check_path(check_id: str) -> str:
    """``GET /checks/{id}``: not shown by the interface, fixed by DESIGN.md."""
    return f"{CHECKS_PATH}/{check_id}"


def check_file_path(check_id: str, kind: str) -> str:
    """``GET /checks/{id}/files/{kind}``: not shown by the interface, fixed by DESIGN.md."""
    return f"{CHECKS_PATH}/{check_id}/files/{kind}"


# --- Headers ----------------------------------------------------------------------------
IDEMPOTENCY_HEADER = "Idempotency-Key"
#: Set to "true" on a create-check answer that replays an earlier check for the same key.
REPLAY_HEADER = "Idempotent-Replayed"
REQUEST_ID_HEADER = "X-Request-Id"
RETRY_AFTER_HEADER = "Retry-After"

# --- Products, statuses, files ----------------------------------------------------------
PRODUCTS: frozenset[str] = frozenset(domain.PRODUCTS)
DEFAULT_PRODUCTS: tuple[str, ...] = domain.DEFAULT_PRODUCTS
#: Only ``processing`` is shown; the rest come from DESIGN.md.
CHECK_STATUSES: frozenset[str] = frozenset(s.value for s in domain.ProductState)
TERMINAL_STATUSES: frozenset[str] = frozenset(domain.TERMINAL_PRODUCT_STATES)
PRODUCT_STATUSES: frozenset[str] = CHECK_STATUSES
AI_LABELS: frozenset[str] = frozenset({"human", "mixed", "ai"})
SOURCE_KINDS: frozenset[str] = frozenset({"submission", "reference"})
FILE_KINDS: frozenset[str] = frozenset({"similarity_pdf", "pdf", "original"})
EVENT_TYPES: frozenset[str] = frozenset({"check.completed", "check.failed"})

# --- Supported file types ---------------------------------------------------------------
#: The file types the service reads; ``doccheck.extract`` is the source of truth.
SUPPORTED_TYPES: dict[str, str] = dict(_EXTRACT_TYPES)


def content_type_for(filename: str) -> str | None:
    """MIME type for ``filename`` by its (case-insensitive) extension, or None if unsupported."""
    dot = filename.rfind(".")
    if dot < 0:
        return None
    return SUPPORTED_TYPES.get(filename[dot:].lower())


# --- Errors -----------------------------------------------------------------------------
#: Error bodies look like ``{"error": {"code": "...", "message": "..."}}``.
ERROR_ENVELOPE_KEY = "error"

#: Responses that prove the request did no work at the service, so even a non-idempotent
#: POST (an upload, which takes one of the 50 waiting slots) can be sent again: the rate
#: limiter answers 429 before the handler runs, and 503 is reserved for "not accepting
#: work right now" (overload / maintenance) by convention, answered before the handler.
#: A 500/502/504 may come after the handler created something, so it is NOT in this set.
NOT_REACHED_STATUSES: frozenset[int] = frozenset({429, 503})

# --- Idempotency-Key retention ---------------------------------------------------------
# How long the service remembers a key is the service profile's ``key_retention_seconds``
# (:mod:`doccheck.client._profile`, with every other choice the interface leaves "not shown").
#: Clock difference tolerated between this machine and the service when paging
#: ``GET /checks`` back to a first attempt's time (and taken off the retention).
SERVICE_CLOCK_MARGIN_SECONDS = 600
#: The metadata key that carries a hash of the Idempotency-Key on every check, so that a
#: check whose answer was lost can be found again in the service's list.
REFERENCE_METADATA_KEY = "doccheck_ref"

# --- Billing (DESIGN.md: "charged at creation, refunded when a product fails") ----------
#: The create answer's ``cost.total_cents`` is what the check was charged, once per check
#: id: an idempotent replay returns the same check and charges nothing more.
CHARGE_FIELD = "total_cents"
#: A failed product refunds what it contributed: ``cost.<product>_cents``.
PRODUCT_CENTS_FIELD = "{product}_cents"
#: Not shown by the interface: a service that states the refund on the check's ``cost``
#: (the emulator does) is believed, but never below what the failed products imply.
REFUND_FIELD = "refunded_cents"


def charged_cents(cost: object) -> int:
    """What a check was charged at creation (``cost.total_cents``); 0 when unknown."""
    return _cost_int(cost, CHARGE_FIELD)


def product_cents(cost: object, product: str) -> int:
    """What one product contributed to a check's charge (refunded when it fails)."""
    return _cost_int(cost, PRODUCT_CENTS_FIELD.format(product=product))


def refunded_cents(cost: object, failed_products: Iterable[str], stated: int | None = None) -> int:
    """The refund of a check whose ``failed_products`` failed.

    ``stated`` is a refund the service itself reported (``cost.refunded_cents``), which may
    be older than the events we have seen; the larger of the two is the truth so far, and
    never more than the charge.
    """
    implied = sum(product_cents(cost, p) for p in set(failed_products))
    return min(max(implied, int(stated or 0)), charged_cents(cost))


def _cost_int(cost: object, name: str) -> int:
    if cost is None:
        return 0
    value = cost.get(name) if isinstance(cost, dict) else getattr(cost, name, None)
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0
