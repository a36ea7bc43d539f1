"""The domain's rules in one place: products, states, size limits and the price rule.

Why one module: these facts used to be written out in up to five places (the client's
assumptions, the planner, the manifest reader, the ledger, the emulator's billing) and
a test existed only to keep two of the copies equal. Every one of those modules now
imports from here, so a change to the service's price or limits is one edit.

The interface of the service does not show most of these; ``docs/contracts.md``
("Assumptions shared by the emulator and the client") fixes them. This module imports
nothing from the project, so every part of it (the emulator included) may use it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from enum import StrEnum


# --- Products ---------------------------------------------------------------------------
class Product(StrEnum):
    """What a check can be asked for (the service's ``products`` values)."""

    AI = "ai"
    SIMILARITY = "similarity"


#: Every product, in the order reports and the service list them.
PRODUCTS: tuple[str, ...] = tuple(p.value for p in Product)
DEFAULT_PRODUCTS: tuple[str, ...] = (Product.AI.value,)


# --- States -----------------------------------------------------------------------------
class SubmissionState(StrEnum):
    """The life of one idempotency key in the ledger.

    planned → submitting → (uploading →) submitted, or failed / rejected / skipped_budget.
    ``submitting`` is written before the request, so a crash leaves a row that the resume
    replays with the same key.
    """

    PLANNED = "planned"
    SUBMITTING = "submitting"
    UPLOADING = "uploading"
    SUBMITTED = "submitted"
    FAILED = "failed"
    REJECTED = "rejected"
    SKIPPED_BUDGET = "skipped_budget"
    #: An earlier request may have made a check that no lookup could find or rule out:
    #: never sent again on absence of evidence (``doccheck resolve`` settles it).
    IN_DOUBT = "in_doubt"


class ProductState(StrEnum):
    """The state of one product of one check (the service's ``status`` values)."""

    PROCESSING = "processing"
    COMPLETED = "completed"
    FAILED = "failed"


#: Product states that never change again.
TERMINAL_PRODUCT_STATES: tuple[str, ...] = (ProductState.COMPLETED.value, ProductState.FAILED.value)


class RunState(StrEnum):
    """The state of one run in the ledger."""

    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"


# --- Limits -----------------------------------------------------------------------------
#: "4 MB" and "50 MB" are read as binary megabytes (MiB), by the client and the emulator.
MEGABYTE = 1024 * 1024
#: Files up to this size go inline (multipart); larger ones through ``POST /uploads``.
MULTIPART_MAX_BYTES = 4 * MEGABYTE
#: The largest file the service accepts at all (through an upload).
UPLOAD_MAX_BYTES = 50 * MEGABYTE
#: How long a signed upload address stays valid.
UPLOAD_URL_LIFETIME_SECONDS = 600
#: Uploads created but not yet used in a check, per account.
MAX_WAITING_UPLOADS = 50


# --- The price rule ---------------------------------------------------------------------
#: A document is billed at least this many words.
MIN_BILLED_WORDS = 100
#: Cents per started 100 billed words, per product.
CENTS_PER_100_WORDS: dict[str, int] = {Product.AI.value: 1, Product.SIMILARITY.value: 2}


def billed_words(words: int) -> int:
    """Words billed for a document of ``words`` words (the 100-word minimum charge)."""
    return max(int(words), MIN_BILLED_WORDS)


def product_prices(words: int, products: Iterable[str]) -> dict[str, int]:
    """Cents each product in ``products`` costs for a document of ``words`` words
    (every product present, 0 for those not asked for)."""
    blocks = math.ceil(billed_words(words) / 100)
    wanted = set(products)
    return {p: CENTS_PER_100_WORDS[p] * blocks if p in wanted else 0 for p in PRODUCTS}


def estimate_cost_cents(words: int, products: Iterable[str]) -> int:
    """Total cents a check of ``words`` words with ``products`` costs.

    Raises KeyError for an unknown product (callers validate products first). The
    service's ``cost`` is authoritative; this is what budgets are planned with.
    """
    wanted = set(products)
    if not wanted.issubset(CENTS_PER_100_WORDS):
        raise KeyError(f"unknown product(s) {sorted(wanted - set(PRODUCTS))}")
    # product_prices' sum without its dict: a term plans 100,000 of these (~0.5 s of a rerun's CPU).
    return sum(CENTS_PER_100_WORDS[p] for p in wanted) * math.ceil(billed_words(words) / 100)


# --- Webhook secret rotation ------------------------------------------------------------
def secrets_accepted_at(
    current: str, previous: str | None, previous_valid_until: datetime | None, now: datetime | None = None
) -> list[str]:
    """The signing secrets a delivery may carry at ``now`` (default: the current time),
    newest first: ``current``, then ``previous`` while ``now < previous_valid_until``.

    A previous secret without an end is not accepted (it would be accepted for ever);
    blank values are dropped.
    """
    moment = now or datetime.now(UTC)
    accepted = [current.strip()] if current.strip() else []
    if previous and previous.strip() and previous_valid_until is not None and moment < previous_valid_until:
        accepted.append(previous.strip())
    return accepted


#: An LMS export's document id: ``<lms>-<owner: 12 hex>-<file: 16 hex>`` (doccheck.sources.lms).
_LMS_ID = re.compile(r"^(?:moodle|canvas|blackboard)-([0-9a-f]{12})-[0-9a-f]{16}$")


def document_owner(document_id: str) -> str:
    """Who a document belongs to, for cohort matching: a student's own files never pair.

    An LMS export's ids carry the hash of the student's id (every file of one student shares
    it); any other id is its own owner.
    """
    m = _LMS_ID.match(document_id)
    return f"lms:{m[1]}" if m else document_id


# --- How a document is sent ---------------------------------------------------------------
#: A file sent as its extracted text has its own Idempotency-Key: the file's + this suffix
#: (another body is another check at the service, and the file's key may have been refused).
TEXT_KEY_SUFFIX = ":text"


def text_key(key: str) -> str:
    """The Idempotency-Key of a file sent as its extracted text (deterministic, its own)."""
    return key if key.endswith(TEXT_KEY_SUFFIX) else key + TEXT_KEY_SUFFIX


def base_key(key: str) -> str:
    """The key of the document itself, whichever way it is sent (a text key without its suffix)."""
    return key.removesuffix(TEXT_KEY_SUFFIX)


def sent_as(key: str | None) -> str | None:
    """``text`` for a file sent as its extracted text, ``original`` for the rest (the file, or a
    text row's own text); None without a key (a rejected row: nothing was sent)."""
    if not key:
        return None
    return "text" if key.endswith(TEXT_KEY_SUFFIX) else "original"
