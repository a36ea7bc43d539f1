"""The end-of-run summary tells documents, checks and money as the ledger knows them at the
end (issue 8, defect 8): an error that another process recovered meanwhile is not counted,
rows sharing a check are one check, and money is charged/refunded/net."""

from __future__ import annotations

from pathlib import Path

from doccheck.ledger import Ledger
from doccheck.pipeline import BatchResult, Plan, RowFailure
from doccheck.pipeline._orchestrate import Prepared, close_run
from doccheck.pipeline._summary import products_from_summary
from tests.factories import BOTH, apply_event, check_json, planned


def test_summary_counts_errors_recovered_since_and_checks_once(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'ledger.db'}"
    ledger = Ledger(db)
    docs = [
        planned("d1", BOTH, row=1),
        planned("d2", BOTH, row=2, idempotency_key="k-shared"),
        planned("d3", BOTH, row=3, idempotency_key="k-shared"),  # identical content: one check
    ]
    run_id = ledger.start_run(campaign="c1")
    ledger.record_documents(run_id, docs)
    # this run's request for d1 failed (503 after retries) ...
    ledger.mark_submit_failed(docs[0].idempotency_key, code="service_unavailable", message="x", campaign="c1",
                              document_id="d1", products=BOTH, mode="text")  # fmt: skip
    # ... and a concurrent run sent it successfully before this run finished
    ledger.mark_submitting(docs[0].idempotency_key, campaign="c1", document_id="d1", products=BOTH, mode="text")
    ledger.mark_submitted(docs[0].idempotency_key, check_json("chk-1", BOTH))
    ledger.mark_submitting("k-shared", campaign="c1", document_id="d2", products=BOTH, mode="text")
    ledger.mark_submitted("k-shared", check_json("chk-2", BOTH))
    apply_event(ledger, "evt-1", "chk-2", "similarity", failed=True)
    batch = BatchResult(total=3, submitted=1, already_done=1, failed=1, cost_cents=3,
                        failures=[RowFailure("d1", docs[0].idempotency_key, "service_unavailable", "x")])  # fmt: skip
    plan = Plan(campaign="c1", documents=docs, rejections=[], manifest=tmp_path / "m.csv")
    prepared = Prepared(run_id=run_id, manifest="m.csv", plan=plan, documents=3, products=6, batches=[])
    summary = close_run(ledger, prepared, batch=batch, waited=None, wait=False, started=0.0)
    assert summary.submit_failed == 0  # recovered by the other process
    assert summary.documents == 3 and summary.checks == 2
    assert (summary.charged_cents, summary.refunded_cents, summary.net_cents) == (6, 2, 4)
    md = summary.as_markdown()
    assert "| documents not submitted (errors) | 0 |" in md and "| checks | 2 |" in md
    assert "| net cost (cents) | 4 |" in md
    ledger.close()


def test_products_from_ledger_counts() -> None:
    raw = {"ai_completed": 3, "ai_failed": 1, "similarity_pending": 2}
    assert products_from_summary(raw) == {"ai": {"completed": 3, "failed": 1}, "similarity": {"pending": 2}}
