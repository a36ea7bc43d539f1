"""Local cohort matching: near-duplicate and copied-section pairs among a campaign's documents.

No Prefect, no network: a dry run can list the pairs before anything is paid. See
docs/matching.md for the method and the choice of library.
"""

from doccheck.matching.cohort import KINDS, CohortResult, MatchOptions, match_cohort, scheme_name
from doccheck.matching.runs import match_plan, pairs_table, summary_of
from doccheck.matching.store import LedgerStore, MemoryStore

__all__ = [
    "KINDS",
    "CohortResult",
    "LedgerStore",
    "MatchOptions",
    "MemoryStore",
    "match_cohort",
    "match_plan",
    "pairs_table",
    "scheme_name",
    "summary_of",
]
