"""The webhook signing secret, when the webhook was configured through doccheck (legacy).

Part of the :class:`~doccheck.ledger.ledger.Ledger` facade. The preferred home of the
secret is the webhook-secret block (``prefect_doccheck``); the ledger keeps one only
when asked, and from then on the database must be protected like the API key. The
previous secret is kept so deliveries signed before a rotation still verify.
"""

from __future__ import annotations

from pydantic import SecretStr
from sqlmodel import col, select

from doccheck.ledger._base import LedgerBase
from doccheck.ledger.tables import WebhookSecretRow, utcnow


class WebhookSecretsMixin(LedgerBase):
    """Store, rotate, forget and list the webhook secrets (current first)."""

    def store_webhook_secret(self, secret: str | SecretStr, scope: str = "default") -> None:
        """Keep the account signing secret returned by PUT /webhook or a rotation.

        Only call this when the user configured the webhook through doccheck: from then
        on the database holds a secret and must be protected like the API key. The
        previous secret is kept so deliveries signed before a rotation still verify.
        """
        value = secret.get_secret_value() if isinstance(secret, SecretStr) else str(secret)
        if not value:
            raise ValueError("empty webhook secret")
        with self.session() as s:
            row = s.get(WebhookSecretRow, scope)
            if row is None:
                row = WebhookSecretRow(scope=scope, secret=value)
            elif row.secret != value:
                row.previous_secret, row.secret = row.secret, value
            row.updated_at = utcnow()
            s.add(row)

    def delete_webhook_secret(self, scope: str = "default") -> None:
        """Forget a stored secret (the webhook was deleted)."""
        with self.session() as s:
            row = s.get(WebhookSecretRow, scope)
            if row is not None:
                s.delete(row)

    def webhook_secrets(self) -> list[SecretStr]:
        """Every stored secret (current ones first, then the previous ones)."""
        with self.session() as s:
            rows = s.exec(select(WebhookSecretRow).order_by(col(WebhookSecretRow.updated_at).desc())).all()
            current = [SecretStr(r.secret) for r in rows]
            previous = [SecretStr(r.previous_secret) for r in rows if r.previous_secret]
        return current + previous
