"""``set_disposition``: the notebook's ``doccheck review`` (same ledger table, same rules).

Why here too: a reviewer working through a cohort in Jupyter records decisions where they read
the results; the next report shows them either way (:mod:`doccheck.ledger._dispositions`).
"""

from __future__ import annotations

from doccheck.ledger import Disposition

__all__ = ["set_disposition"]


def set_disposition(
    campaign: str,
    document_id: str,
    status: str,
    *,
    note: str | None = None,
    decided_by: str | None = None,
    database_url: str | None = None,
) -> Disposition:
    """Record ``status`` (cleared, discussed or referred) for a document of ``campaign``;
    raises :class:`~doccheck.errors.DispositionError` for an unknown status or document."""
    from doccheck.config import load_settings
    from doccheck.ledger import Ledger

    ledger = Ledger(load_settings(database_url=database_url).ledger.database_url)
    try:
        return ledger.set_disposition(campaign, document_id, status, note=note, decided_by=decided_by)
    finally:
        ledger.close()
