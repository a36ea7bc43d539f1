"""Ledger behaviour on a real SQLite file (the same tests run on PostgreSQL in
tests/integration/test_ledger_postgres.py by overriding the ``ledger`` fixture)."""

from __future__ import annotations

import concurrent.futures
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from doccheck.client import Check, Event
from doccheck.ledger import Ledger
from doccheck.outputs import LedgerReportTables
from doccheck.pipeline import PlannedDocument
from doccheck.sources.manifest import Rejection
from tests.factories import check_json, planned, record
from tests.fixtures.events import event_body


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    led = Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    yield led
    led.close()


def submit(ledger: Ledger, run_id: str, doc: PlannedDocument, check_id: str) -> None:
    ledger.record_documents(run_id, [doc])
    ledger.mark_submitting(
        doc.idempotency_key, campaign="c1", document_id=doc.document_id, products=doc.products, mode=doc.mode
    )
    ledger.mark_submitted(doc.idempotency_key, Check.model_validate(check_json(check_id, doc.products)))


def test_schema_created_on_first_use_and_reopen(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    first = Ledger(url)
    run_id = first.start_run(campaign="c1", manifest="m.csv", products=["ai"], params={"concurrency": 4})
    first.close()
    second = Ledger(url)  # existing schema is reused, not recreated
    run = second.get_run(run_id)
    assert run is not None and run.campaign == "c1" and run.params == {"concurrency": 4}
    assert run.status == "running" and run.started_at.tzinfo is not None
    second.finish_run(run_id, summary={"documents": 0})
    run = second.get_run(run_id)
    assert run.status == "finished" and run.summary == {"documents": 0} and run.finished_at is not None
    second.close()


def test_unknown_run_raises(ledger: Ledger) -> None:
    with pytest.raises(KeyError):
        ledger.finish_run("nope")
    with pytest.raises(KeyError):
        ledger.campaign_of("nope")


def test_submission_state_machine(ledger: Ledger) -> None:
    run_id = ledger.start_run(campaign="c1")
    doc = planned("d1", ("ai", "similarity"), mode="upload")
    ledger.record_documents(run_id, [doc])
    assert ledger.submission_for_key(doc.idempotency_key) is None
    ledger.mark_submitting(doc.idempotency_key, campaign="c1", document_id="d1", products=doc.products, mode="upload")
    sub = ledger.submission_for_key(doc.idempotency_key)
    assert sub.state == "submitting" and sub.attempts == 1
    ledger.mark_upload_created(doc.idempotency_key, "up-1")
    sub = ledger.submission_for_key(doc.idempotency_key)
    assert sub.state == "uploading" and sub.upload_id == "up-1"
    ledger.mark_submitted(doc.idempotency_key, Check.model_validate(check_json("chk-1", doc.products)))
    sub = ledger.submission_for_key(doc.idempotency_key)
    assert (sub.state, sub.check_id, sub.cost_cents, sub.upload_id, sub.words) == ("submitted", "chk-1", 3, "up-1", 40)
    # a late failure report never downgrades a check we hold
    ledger.mark_submit_failed(doc.idempotency_key, code="x", message="y")
    assert ledger.submission_for_key(doc.idempotency_key).state == "submitted"
    outcomes = ledger.pending_outcomes(run_id=run_id)
    assert sorted(o.product for o in outcomes) == ["ai", "similarity"]
    assert all(o.status == "processing" and o.campaign == "c1" for o in outcomes)


def test_failed_submission_is_retriable_and_keeps_reason(ledger: Ledger) -> None:
    run_id = ledger.start_run(campaign="c1")
    doc = planned("d1")
    ledger.record_documents(run_id, [doc])
    ledger.mark_submitting(doc.idempotency_key, campaign="c1", document_id="d1", products=doc.products, mode="text")
    ledger.mark_submit_failed(doc.idempotency_key, code="insufficient_balance", message="balance too low")
    sub = ledger.submission_for_key(doc.idempotency_key)
    assert (sub.state, sub.error_code) == ("failed", "insufficient_balance")
    ledger.mark_submitting(doc.idempotency_key, campaign="c1", document_id="d1", products=doc.products, mode="text")
    sub = ledger.submission_for_key(doc.idempotency_key)
    assert sub.attempts == 2 and sub.error_code is None and sub.state == "submitting"


def test_record_event_is_idempotent(ledger: Ledger) -> None:
    body = event_body("evt-1", "chk-1", "ai")
    assert record(ledger, body) is True
    assert record(ledger, body) is False
    assert record(ledger, body) is False
    events = ledger.events()
    assert len(events) == 1 and events[0].payload == json.loads(body) and not events[0].applied
    assert ledger.unapplied_event_count() == 1


def test_apply_events_then_fetch_completes_outcome(ledger: Ledger) -> None:
    run_id = ledger.start_run(campaign="c1")
    doc = planned("d1", ("ai", "similarity"))
    submit(ledger, run_id, doc, "chk-1")
    record(ledger, event_body("evt-ai", "chk-1", "ai"))
    record(ledger, event_body("evt-sim", "chk-1", "similarity", "check.failed",
                              error={"code": "processing_failed", "message": "boom"}))  # fmt: skip
    assert ledger.apply_pending_events() == 2
    assert ledger.apply_pending_events() == 0
    [pc] = ledger.pending_checks(run_id=run_id)
    # ai completed by event but its score is not known yet: fetch it
    assert pc.check_id == "chk-1" and pc.awaiting_fetch and pc.silent_products == ()
    pending = ledger.pending_outcomes(run_id=run_id)
    assert [(o.product, o.status, o.fetched) for o in pending] == [("ai", "completed", False)]
    rows = ledger.report_rows(run_id=run_id)
    assert rows["ai_results"][0]["status"] == "pending"
    sim = rows["similarity_results"][0]
    assert sim["status"] == "failed" and sim["error_code"] == "processing_failed"
    done = check_json(
        "chk-1", ("ai", "similarity"), status="failed", completed_at="2026-01-01T00:02:00.000Z",
        ai={"status": "completed", "score": 0.91, "label": "ai"},
        similarity={"status": "failed", "error": {"code": "processing_failed", "message": "boom"}},
    )  # fmt: skip
    assert ledger.record_check(Check.model_validate(done), source="poll") == 1
    assert ledger.pending_outcomes(run_id=run_id) == []
    assert ledger.pending_checks(run_id=run_id) == []
    rows = ledger.report_rows(run_id=run_id)
    ai = rows["ai_results"][0]
    assert (ai["status"], ai["score"], ai["label"], ai["check_id"], ai["words"]) == (
        "completed",
        0.91,
        "ai",
        "chk-1",
        40,
    )
    assert ai["completed_at"] is not None
    # the outcome remembers that the webhook told us first
    [event] = [e for e in ledger.events() if e.event_id == "evt-ai"]
    assert event.applied


def test_event_before_submission_is_kept(ledger: Ledger) -> None:
    """The receiver can be faster than mark_submitted (or a crash lost that write)."""
    record(ledger, event_body("evt-early", "chk-9", "ai"))
    ledger.apply_pending_events()
    run_id = ledger.start_run(campaign="c1")
    submit(ledger, run_id, planned("d9"), "chk-9")
    [o] = ledger.pending_outcomes(run_id=run_id)
    assert (o.status, o.fetched, o.source, o.campaign) == ("completed", False, "webhook", "c1")
    assert o.event_at is not None


def test_poll_result_wins_and_late_event_does_not_regress(ledger: Ledger) -> None:
    run_id = ledger.start_run(campaign="c1")
    submit(ledger, run_id, planned("d1", ("similarity",)), "chk-1")
    done = check_json(
        "chk-1", ("similarity",), status="completed", completed_at="2026-01-01T00:02:00Z",
        similarity={"status": "completed", "score": 42.5, "matched_words": 17, "sources": [
            {"source_id": "s1", "title": "T", "url": None, "kind": "submission", "matched_words": 17, "percent": 42.5}]},
    )  # fmt: skip
    ledger.record_check(Check.model_validate(done))
    record(ledger, event_body("evt-late", "chk-1", "similarity"))
    ledger.apply_pending_events()
    ledger.record_check(Check.model_validate(check_json("chk-1", ("similarity",))))  # stale processing view
    rows = ledger.report_rows(run_id=run_id)
    sim = rows["similarity_results"][0]
    assert (sim["status"], sim["score"], sim["matched_words"], sim["source_count"]) == ("completed", 42.5, 17, 1)
    assert rows["similarity_sources"] == [
        {"document_id": "d1", "check_id": "chk-1", "source_id": "s1", "title": "T", "url": None,
         "kind": "submission", "matched_words": 17, "percent": 42.5, "matched_document_id": None}
    ]  # fmt: skip
    [o] = list(ledger.pending_outcomes(run_id=run_id)) or [None]
    assert o is None


def test_report_rows_cover_every_row(ledger: Ledger) -> None:
    run_id = ledger.start_run(campaign="c1")
    ok, failed, skipped, unsent = (
        planned("ok", row=1),
        planned("bad", row=2),
        planned("poor", row=3),
        planned("later", row=4),
    )
    submit(ledger, run_id, ok, "chk-ok")
    ledger.record_documents(run_id, [failed, skipped, unsent])
    ledger.mark_submitting(failed.idempotency_key, campaign="c1", document_id="bad", products=("ai",), mode="text")
    ledger.mark_submit_failed(failed.idempotency_key, code="unsupported_file_type", message="no")
    ledger.mark_submit_failed(skipped.idempotency_key, code="budget_exceeded", message="cap", state="skipped_budget",
                              campaign="c1", document_id="poor", products=("ai",), mode="text")  # fmt: skip
    assert (
        ledger.record_rejections(run_id, [Rejection(5, "dup", "document_id", "duplicate_id", "row 5: duplicate")]) == 1
    )
    assert (
        ledger.record_rejections(run_id, [Rejection(5, "dup", "document_id", "duplicate_id", "row 5: duplicate")]) == 0
    )
    rows = ledger.report_rows(run_id=run_id)
    by_id = {r["document_id"]: r for r in rows["submissions"]}
    assert (
        by_id["ok"]["status"] == "submitted" and by_id["ok"]["check_id"] == "chk-ok" and by_id["ok"]["cost_cents"] == 1
    )
    assert (by_id["bad"]["status"], by_id["bad"]["error_code"], by_id["bad"]["cost_cents"]) == (
        "failed",
        "unsupported_file_type",
        0,
    )
    assert by_id["poor"]["status"] == "skipped_budget"
    assert by_id["later"]["status"] == "unsent"
    assert (by_id["dup"]["status"], by_id["dup"]["error_code"], by_id["dup"]["error_message"]) == (
        "rejected",
        "duplicate_id",
        "row 5: duplicate",
    )
    assert [r["document_id"] for r in rows["ai_results"]] == ["ok"]
    assert rows["ai_results"][0]["status"] == "pending"
    summary = ledger.run_summary(run_id)
    assert summary["documents"] == 4 and summary["rejected"] == 1 and summary["checks"] == 1
    assert summary["submissions"] == {"submitted": 1, "failed": 1, "skipped_budget": 1, "unsent": 1}
    assert summary["cost_cents"] == 1 and summary["products"] == {"ai": {"pending": 1}}
    # metadata is kept for the report join, never the text
    assert ledger.document_metadata(run_id)["ok"] == {"document_id": "ok", "group": "A"}
    # campaign scope finds the latest run
    assert ledger.report_rows(campaign="c1")["submissions"] == rows["submissions"]
    with pytest.raises(KeyError):
        ledger.report_rows(campaign="nope")


def test_documents_are_recorded_once_per_run(ledger: Ledger) -> None:
    run_id = ledger.start_run(campaign="c1")
    assert ledger.record_documents(run_id, [planned("a"), planned("b", row=2)]) == 2
    assert ledger.record_documents(run_id, [planned("a"), planned("c", row=3)]) == 1


def test_no_text_is_stored(ledger: Ledger, tmp_path: Path) -> None:
    run_id = ledger.start_run(campaign="c1")
    ledger.record_documents(run_id, [planned("a", text="VERY-PRIVATE-ESSAY-TEXT " * 5)])
    with ledger.session() as s:
        dump = "\n".join(str(r) for r in s.exec(__import__("sqlmodel").text("select * from documents")).all())
    assert "VERY-PRIVATE" not in dump


def test_repr_hides_password() -> None:
    from doccheck.ledger._engine import normalize_url, redact_url

    assert normalize_url("postgresql://u:pw@h/db").startswith("postgresql+psycopg://")
    assert "pw" not in redact_url("postgresql://u:pw@h/db")


def test_concurrent_duplicate_events_stored_once(ledger: Ledger) -> None:
    """A redelivery racing the first attempt (two threads of the receiver) stores one row."""
    body = event_body("evt-race", "chk-race", "ai")
    event = Event.model_validate_json(body)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: ledger.record_event(event, body), range(16)))
    assert results.count(True) == 1 and results.count(False) == 15
    assert len(ledger.events(check_id="chk-race")) == 1


def test_report_tables_write_parquet_with_the_report_schemas(ledger: Ledger, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from doccheck.outputs import SCHEMAS, ReportTables, write_reports

    run_id = ledger.start_run(campaign="c1")
    submit(ledger, run_id, planned("d1", ("ai", "similarity")), "chk-1")
    ledger.record_rejections(run_id, [Rejection(2, "bad", "path", "file_not_found", "row 2: missing")])
    done = check_json(
        "chk-1", ("ai", "similarity"), status="completed", completed_at="2026-01-01T00:02:00Z",
        ai={"status": "completed", "score": 0.5, "label": "mixed"},
        similarity={"status": "completed", "score": 12.0, "matched_words": 4, "sources": [
            {"source_id": "s", "title": "t", "url": "https://example.org", "kind": "reference",
             "matched_words": 4, "percent": 12.0}]},
    )  # fmt: skip
    ledger.record_check(Check.model_validate(done))
    tables = LedgerReportTables.from_ledger(ledger, run_id=run_id)
    assert isinstance(tables, ReportTables)
    paths = write_reports(tmp_path / "reports", "run1", tables, metadata=ledger.document_metadata(run_id))
    for name, schema in SCHEMAS.items():
        table = pq.read_table(paths.files()[name])
        for f in schema:
            assert table.schema.field(f.name).type == f.type, (name, f.name)
    subs = pq.read_table(paths.submissions).to_pylist()
    assert {(r["document_id"], r["status"], r["mode"]) for r in subs} == {
        ("d1", "submitted", "text"),
        ("bad", "rejected", "rejected"),
    }
    assert [r["meta_group"] for r in subs if r["document_id"] == "d1"] == ["A"]
    [ai] = pq.read_table(paths.ai_results).to_pylist()
    assert ai["score"] == 0.5 and ai["completed_at"].isoformat().startswith("2026-01-01T00:02:00")
    assert len(pq.read_table(paths.similarity_sources)) == 1


def test_each_facade_method_is_a_transaction_around_a_session_first_function(ledger: Ledger) -> None:
    """``Ledger`` is the transaction seam of functions grouped by table family: a method that
    calls one function of the same name takes that function's parameters but the session (or
    connection) it opens; no part object holds the database, and the parts are modules of
    functions, not classes (a function added without its method, or a signature drifting from
    its method's, fails here)."""
    import inspect

    from doccheck.ledger import _claims, _dispositions, _outcomes, _queries, _run_rows, _submissions, _webhook_events

    families = (_run_rows, _submissions, _claims, _outcomes, _webhook_events, _queries, _dispositions)
    paired = 0
    for module in families:
        assert not [n for n, c in inspect.getmembers(module, inspect.isclass) if c.__module__ == module.__name__
                    and "db" in inspect.signature(c).parameters]  # fmt: skip
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if fn.__module__ != module.__name__ or name.startswith("_") or not hasattr(Ledger, name):
                continue
            first, *rest = inspect.signature(fn).parameters.values()
            assert first.name in ("session", "conn"), name
            method = list(inspect.signature(getattr(Ledger, name)).parameters.values())[1:]
            assert [(p.name, p.kind, p.default) for p in method] == [(p.name, p.kind, p.default) for p in rest], name
            paired += 1
    assert paired >= 25
    for part in ("runs", "submissions", "claims", "outcomes", "webhook_events", "queries", "dispositions"):
        assert not hasattr(ledger, part), part
    run_id = ledger.start_run(campaign="c1")
    assert ledger.get_run(run_id) is not None and ledger.run_summary(run_id)["documents"] == 0


def test_document_metadata_is_read_as_it_is_used(ledger: Ledger, tmp_path: Path) -> None:
    """Issue 28: a term's metadata is not held whole while its reports are written; the mapping
    reads the ledger (walks it in chunks, or one query per chunk of ids) and says its columns."""
    import pyarrow.parquet as pq

    from doccheck.ledger._run_rows import RunMetadata
    from doccheck.outputs import write_reports

    run_id = ledger.start_run(campaign="c1")
    docs = [planned(f"d{i}", row=i, metadata={"document_id": f"d{i}", "course": f"c{i % 3}", **({"late": "yes"}
            if i == 4 else {})}) for i in range(1, 8)]  # fmt: skip
    ledger.record_documents(run_id, docs)
    other = ledger.start_run(campaign="c1")
    ledger.record_documents(other, [planned("x", metadata={"course": "elsewhere"})])
    meta = ledger.document_metadata(run_id)
    RunMetadata.CHUNK = 3  # several chunks of a walk
    try:
        assert dict(meta) == {d.document_id: dict(d.metadata or {}) for d in docs} and len(meta) == 7
        assert meta.columns() == ["course", "late"]
    finally:
        RunMetadata.CHUNK = 2000
    assert meta.for_ids(["d2", "nope", "x"]) == {"d2": {"document_id": "d2", "course": "c2"}}
    # first seen: by document, then by place in it (not sorted); none from an empty or null object
    shuffled = ledger.start_run(campaign="c1")
    ledger.record_documents(shuffled, [planned(f"s{i}", row=i, metadata=m) for i, m in enumerate(
        [{}, None, {"zeta": "1", "alpha": "2"}, {"alpha": "3", "mid": "4"}, {"document_id": "s4", "last": "5"}])])  # fmt: skip
    assert ledger.document_metadata(shuffled).columns() == ["zeta", "alpha", "mid", "last"]
    assert meta["d4"]["late"] == "yes" and "x" not in meta
    paths = write_reports(tmp_path / "reports", "run1", LedgerReportTables.from_ledger(ledger, run_id=run_id),
                          metadata=meta)  # fmt: skip
    subs = pq.read_table(paths.submissions).to_pylist()
    assert [(r["document_id"], r["meta_course"], r["meta_late"]) for r in subs][3] == ("d4", "c1", "yes")


def test_a_ledger_from_an_older_release_gains_the_new_indexes(tmp_path: Path) -> None:
    """``create_all`` adds missing tables only; an index added to an existing table (the
    documents' (run, row number), issue 28) is created when an older ledger is opened."""
    import sqlite3

    url = f"sqlite:///{tmp_path / 'old.db'}"
    Ledger(url).close()
    with sqlite3.connect(tmp_path / "old.db") as conn:
        conn.execute("DROP INDEX ix_documents_run_row")
    Ledger(url).close()
    with sqlite3.connect(tmp_path / "old.db") as conn:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "ix_documents_run_row" in names


def test_one_of_finds_what_in_finds_as_one_short_statement(ledger: Ledger) -> None:
    """``in_list.one_of``: the rows ``IN`` finds, 1,200 values at once (some absent); on
    PostgreSQL as ``= ANY(array)``, a statement text that does not grow with the values."""
    from sqlalchemy import select

    from doccheck.ledger._in_list import one_of
    from doccheck.ledger._sqltypes import table_of
    from doccheck.ledger._tables import SubmissionRow

    keys = [f"k{i}" for i in range(30)]
    for key in keys:
        ledger.mark_submitting(key, campaign="c", document_id=key, products=["ai"], mode="text")
    t = table_of(SubmissionRow)
    wanted = [*keys[::2], *(f"absent-{i}" for i in range(1_200))]
    with ledger.engine.connect() as conn:
        clause = one_of(t.c.idempotency_key, wanted, conn)
        found = set(conn.execute(select(t.c.idempotency_key).where(clause)).scalars())
        text = str(select(t.c.idempotency_key).where(clause).compile(dialect=conn.dialect))
    assert found == set(keys[::2])
    if ledger.engine.dialect.name == "postgresql":
        assert "ANY" in text and len(text) < 300


def test_one_of_on_sqlite_sends_odd_ids_as_one_json_text(ledger: Ledger) -> None:
    """On SQLite ``one_of`` of strings is ``IN (SELECT value FROM json_each(:values))``: one
    parameter and a short text, whatever the count, and ids with quotes, backslashes, non-ASCII
    or JSON's own escapes are found exactly (issue 49). On PostgreSQL (this contract is run there
    too, tests/integration/test_ledger_postgres.py) the same ids go as one array."""
    from sqlalchemy import select

    from doccheck.ledger._in_list import one_of
    from doccheck.ledger._sqltypes import table_of
    from doccheck.ledger._tables import SubmissionRow

    odd = ['q"uote', "back\\slash", "ü-é", "line\u2028sep", "tab\tkey", "[1]", "null", "😀"]
    for key in odd:
        ledger.mark_submitting(key, campaign="c", document_id=key, products=["ai"], mode="text")
    t = table_of(SubmissionRow)
    wanted = [*odd[::2], *(f"absent-{i}" for i in range(1_000))]
    with ledger.engine.connect() as conn:
        stmt = select(t.c.idempotency_key).where(one_of(t.c.idempotency_key, wanted, conn))
        found = set(conn.execute(stmt).scalars())
        compiled = stmt.compile(dialect=conn.dialect)
    assert found == set(odd[::2])
    # one parameter whatever the count: SQLite's JSON text, PostgreSQL's array (= ANY)
    form = "json_each" if ledger.engine.dialect.name == "sqlite" else "ANY"
    assert form in str(compiled) and len(str(compiled)) < 300 and len(compiled.params) <= 2


def test_documents_recorded_on_sqlite_count_the_new_and_keep_their_json(ledger: Ledger) -> None:
    """A batch's documents go into SQLite through the driver's executemany: the count is of the
    new rows only (a document already recorded for the run is skipped), and the JSON columns read
    back as written (issue 49)."""
    from sqlmodel import select

    from doccheck.ledger._tables import DocumentRow

    run_id = ledger.start_run(campaign="c1")
    docs = [planned("a", row=1), planned("b", ("ai", "similarity"), row=2, metadata={"document_id": "b", "g": 'ü"x'})]
    assert ledger.record_documents(run_id, docs) == 2
    assert ledger.record_documents(run_id, [*docs, planned("c", row=3)]) == 1
    with ledger.session() as s:
        rows = {r.document_id: r for r in s.exec(select(DocumentRow).where(DocumentRow.run_id == run_id))}
    assert sorted(rows) == ["a", "b", "c"]
    assert rows["b"].products == ["ai", "similarity"] and rows["b"].doc_metadata == {"document_id": "b", "g": 'ü"x'}
    assert (rows["a"].row_number, rows["a"].words, rows["a"].estimated_cost_cents) == (1, 40, 3)
