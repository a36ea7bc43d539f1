"""The SQLModel ledger: runs, documents, submissions, per-product outcomes, webhook events.

``Ledger(database_url)`` works on SQLite (a file, WAL) and PostgreSQL (psycopg 3) and
creates its schema on first use. See docs/ledger.md.
"""

from __future__ import annotations

from doccheck.ledger.ledger import Ledger, PendingCheck
from doccheck.ledger.tables import (
    DocumentRow,
    OutcomeRow,
    RejectionRow,
    RunRow,
    SubmissionRow,
    WebhookEventRow,
)

__all__ = [
    "DocumentRow",
    "Ledger",
    "OutcomeRow",
    "PendingCheck",
    "RejectionRow",
    "RunRow",
    "SubmissionRow",
    "WebhookEventRow",
]
