"""Which runs of a campaign still wait for results (``collect_results`` by campaign).

Why by campaign and not by the latest run: a schedule or an event trigger names the
campaign, and products of EARLIER runs (a timeout, ``--no-wait``, dropped deliveries)
would otherwise stay ``processing`` forever. Collecting a campaign polls every pending
check of it and rewrites the reports of every run whose documents they belong to.
"""

from __future__ import annotations

from doccheck import ledger as ledger_reads
from doccheck.ledger import Ledger


def runs_with_pending(ledger: Ledger, campaign: str) -> list[str]:
    """Ids of the campaign's runs with a product not final yet (fetched), oldest first."""
    with ledger.session() as s:
        return ledger_reads.runs_with_pending(s, campaign)
