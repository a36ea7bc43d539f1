"""Local cohort matching: near-duplicate and copied-section pairs among a campaign's documents.

No Prefect, no network: a dry run can list the pairs before anything is paid. See
docs/matching.md for the method and the choice of library.

Callers import from here. The modules are private: ``_shingles`` and ``_minhash`` (the
hashes and signatures), ``_block_signatures`` (a block of documents signed at once),
``_containment`` (copied sections), ``_cohort_columns`` (what is kept per document),
``_cohort`` (the matcher), ``_signature_store`` and ``_spill`` (where signatures live),
``_run_matching`` (one call per place a user looks) and ``_background`` (a dry run's matching in
a second process).
"""

from doccheck.matching._background import match_in_background
from doccheck.matching._cohort import KINDS, CohortResult, MatchOptions, match_cohort, scheme_name
from doccheck.matching._run_matching import match_documents, match_plan, match_stream, pairs_table, summary_of
from doccheck.matching._signature_store import LedgerStore, MemoryStore, existing_ledger
from doccheck.matching._spill import SpillStore

__all__ = [
    "KINDS",
    "CohortResult",
    "LedgerStore",
    "MatchOptions",
    "MemoryStore",
    "SpillStore",
    "existing_ledger",
    "match_cohort",
    "match_documents",
    "match_in_background",
    "match_plan",
    "match_stream",
    "pairs_table",
    "scheme_name",
    "summary_of",
]
