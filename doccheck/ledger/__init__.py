"""The SQLModel ledger: runs, documents, submissions, per-product outcomes, webhook events.

``Ledger(database_url)`` works on SQLite (a file, WAL) and PostgreSQL (psycopg 3) and
creates its schema on first use. See docs/ledger.md.

Every module of the package is private (``_name.py``): callers outside the ledger import the
names below, so a module can be split, merged or renamed without a hunt through the pipeline,
the outputs and the commands. The row classes are exported for annotations and tests; the
shipped code outside the ledger never imports them at run time (it asks the ledger by name,
tests/unit/ledger/test_ledger_tables_stay_inside.py).
"""

from __future__ import annotations

from doccheck.ledger._bulk import (
    Answer,
    ClaimRequest,
    Prepare,
    document_row,
    previous_submissions,
    record_answers_and_claims,
    record_documents,
    record_plan_group,
    record_prepares,
)
from doccheck.ledger._campaign_budget import (
    budget_state,
    keep_budget_until_priced,
    reclaim_budget_holds,
    release_budget,
    reserve_budget,
)
from doccheck.ledger._claims import DEFAULT_LEASE_SECONDS, Doubt, new_owner_id
from doccheck.ledger._data_purge import drop_event_bodies, execute_purge, legacy_secret_rows, plan_purge
from doccheck.ledger._dispositions import Disposition
from doccheck.ledger._document_reads import count_misnamed
from doccheck.ledger._engine import create_ledger_engine, normalize_url, redact_url
from doccheck.ledger._facade import Ledger
from doccheck.ledger._money import campaign_money, total_money
from doccheck.ledger._notices import describe_contradiction, describe_failure
from doccheck.ledger._pair_passages import PairKey, keep_passages, kept_passages
from doccheck.ledger._purge_residue import scan_run_folders
from doccheck.ledger._queries import PendingCheck
from doccheck.ledger._refused_types import refused_types, remember_refused_type, service_key
from doccheck.ledger._report_inputs import report_inputs_digest, submitted_in_run
from doccheck.ledger._report_rows import LEDGER_PART, iter_report_chunks, resolve_run
from doccheck.ledger._run_rows import (
    document_hashes,
    document_names,
    recorded_rows,
    runs_with_pending,
    set_run_products,
)
from doccheck.ledger._signatures import (
    DocumentSignatureRow,
    iter_shingle_sets,
    iter_signatures,
    load_shingles,
    replace_cohort_matches,
    signature_keys,
    store_signatures,
)
from doccheck.ledger._submissions import campaign_of_check, in_doubt, in_doubt_reasons, submitted_times
from doccheck.ledger._tables import (
    ClaimRow,
    DocumentRow,
    ExtractedWordsRow,
    ListedFileRow,
    OutcomeRow,
    RejectionRow,
    RunRow,
    SubmissionRow,
    WebhookEventRow,
)
from doccheck.ledger._transient import RETRY_SECONDS, is_transient, on_wait, retry_transient, retry_transient_async
from doccheck.ledger._word_cache import LedgerWordStore

__all__ = [
    "DEFAULT_LEASE_SECONDS",
    "LEDGER_PART",
    "RETRY_SECONDS",
    "Answer",
    "ClaimRequest",
    "ClaimRow",
    "Disposition",
    "DocumentRow",
    "DocumentSignatureRow",
    "Doubt",
    "ExtractedWordsRow",
    "ListedFileRow",
    "Ledger",
    "LedgerWordStore",
    "OutcomeRow",
    "PairKey",
    "PendingCheck",
    "Prepare",
    "RejectionRow",
    "RunRow",
    "SubmissionRow",
    "WebhookEventRow",
    "budget_state",
    "campaign_money",
    "campaign_of_check",
    "count_misnamed",
    "create_ledger_engine",
    "describe_contradiction",
    "describe_failure",
    "document_hashes",
    "document_names",
    "document_row",
    "drop_event_bodies",
    "execute_purge",
    "in_doubt",
    "in_doubt_reasons",
    "is_transient",
    "iter_report_chunks",
    "iter_shingle_sets",
    "iter_signatures",
    "keep_budget_until_priced",
    "keep_passages",
    "kept_passages",
    "legacy_secret_rows",
    "load_shingles",
    "new_owner_id",
    "normalize_url",
    "on_wait",
    "plan_purge",
    "previous_submissions",
    "reclaim_budget_holds",
    "record_answers_and_claims",
    "record_documents",
    "record_plan_group",
    "record_prepares",
    "recorded_rows",
    "redact_url",
    "refused_types",
    "release_budget",
    "remember_refused_type",
    "report_inputs_digest",
    "replace_cohort_matches",
    "reserve_budget",
    "resolve_run",
    "retry_transient",
    "retry_transient_async",
    "runs_with_pending",
    "scan_run_folders",
    "service_key",
    "set_run_products",
    "signature_keys",
    "store_signatures",
    "submitted_in_run",
    "submitted_times",
    "total_money",
]
