"""The :class:`Ledger`: every durable fact of the pipeline, behind methods named for what
the flows and the receiver need.

Why methods and not raw sessions for callers: the state machine of a submission (see
:class:`~doccheck.ledger.tables.SubmissionRow`) is what guarantees "at most one billed
check per row", so its transitions live here, in one place, and are each one short
transaction (safe for the receiver process writing at the same time).

The facade composes one mixin per job, each in its own module:

- :mod:`~doccheck.ledger.runs`: runs, their documents and rejections;
- :mod:`~doccheck.ledger.submissions`: the submission state machine (claims on keys in
  flight are :mod:`~doccheck.ledger.claims`, reached as ``Ledger.claims``);
- :mod:`~doccheck.ledger.outcomes`: per-product outcomes, merged by the pure rules of
  :mod:`~doccheck.ledger.merge`;
- :mod:`~doccheck.ledger.events`: webhook events, stored then applied;
- :mod:`~doccheck.ledger.queries`: pending work, counts, reports and summaries;
- :mod:`~doccheck.ledger.webhook_secrets`: the webhook secret kept in the database (legacy).
"""

from __future__ import annotations

from doccheck.ledger._base import LedgerBase
from doccheck.ledger._base import dump as _dump
from doccheck.ledger._base import parse_time as _parse_time
from doccheck.ledger.claims import Claims
from doccheck.ledger.engine import redact_url
from doccheck.ledger.events import EventsMixin
from doccheck.ledger.merge import PRODUCTS, TERMINAL
from doccheck.ledger.merge import product_fields as _product_fields
from doccheck.ledger.queries import PendingCheck, QueriesMixin
from doccheck.ledger.runs import RunsMixin
from doccheck.ledger.submissions import SubmissionsMixin
from doccheck.ledger.webhook_secrets import WebhookSecretsMixin

__all__ = ["PRODUCTS", "TERMINAL", "Ledger", "LedgerBase", "PendingCheck", "_dump", "_parse_time", "_product_fields"]


class Ledger(RunsMixin, SubmissionsMixin, EventsMixin, QueriesMixin, WebhookSecretsMixin):
    """The pipeline's durable record (SQLite or PostgreSQL via SQLAlchemy URL).

    The schema is created on first use, so a fresh ``sqlite:///doccheck.db`` just works.
    The ledger never stores document texts, the API key, or (unless the webhook was
    configured through doccheck) the webhook secret.
    """

    def __init__(self, database_url: str) -> None:
        super().__init__(database_url)
        #: Ownership of keys in flight and sends in doubt (:mod:`doccheck.ledger.claims`).
        self.claims = Claims(self.engine)

    def __repr__(self) -> str:
        return f"Ledger({redact_url(self.database_url)!r})"
