"""The SQLModel ledger: runs, documents, submissions, per-product outcomes, webhook events.

``Ledger(database_url)`` works on SQLite (a file, WAL) and PostgreSQL (psycopg 3) and
creates its schema on first use. See docs/ledger.md.
"""

from __future__ import annotations

from doccheck.ledger.bulk import document_row, record_plan_group
from doccheck.ledger.ledger import Ledger, PendingCheck
from doccheck.ledger.runs import (
    document_hashes,
    document_names,
    recorded_rows,
    runs_with_pending,
    set_run_products,
)
from doccheck.ledger.submissions import campaign_of_check, in_doubt, in_doubt_reasons, submitted_times
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
    "campaign_of_check",
    "document_hashes",
    "document_row",
    "document_names",
    "in_doubt",
    "in_doubt_reasons",
    "record_plan_group",
    "recorded_rows",
    "runs_with_pending",
    "set_run_products",
    "submitted_times",
]
