"""The ledger side of cohort matching on PostgreSQL: the unit tests that use a ledger, again."""

from __future__ import annotations

import pytest

from doccheck.ledger import Ledger
from tests.fixtures.postgres import postgres_ledger
from tests.unit.matching.test_matching import (  # noqa: F401 - re-run these tests on PostgreSQL
    test_pairs_are_stored_per_run_and_reported,
    test_second_run_compares_new_documents_with_stored_signatures_only,
)

pytestmark = [pytest.mark.integration, pytest.mark.postgres]
ledger = postgres_ledger  # the SQLite contract's ``ledger``, on PostgreSQL


def test_two_processes_storing_the_same_signatures_keep_one_row_each(postgres_database: str) -> None:
    """Overlapping runs of one campaign: the unique key keeps one row per document."""
    import subprocess
    import sys

    from doccheck.ledger import DocumentSignatureRow

    script = (
        "import random,sys\n"
        "from types import SimpleNamespace as D\n"
        "from doccheck.ledger import Ledger\n"
        "from doccheck.matching import LedgerStore, match_cohort\n"
        "from tests.matching_corpus import essay\n"
        "rng = random.Random(1)\n"
        "docs = [D(document_id=f'd{i}', content_hash=f'h{i}', text=essay(rng, 300), path=None) for i in range(60)]\n"
        "led = Ledger(sys.argv[1])\n"
        "match_cohort(docs, campaign='race', run_id=sys.argv[2], store=LedgerStore(led))\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, postgres_database, f"run-{i}"]) for i in range(2)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    led = Ledger(postgres_database)
    try:
        with led.session() as s:
            rows = s.exec(DocumentSignatureRow.__table__.select()).all()
        assert len(rows) == 60 and len({r.document_id for r in rows}) == 60
    finally:
        led.close()
