"""A real run's manifest recorded once in batches and re-read one batch at a time (issue 10).

``record_plan`` must record exactly what ``load_plan`` plans, its refs must cover every valid
row once, and ``load_batch`` must give back the same ``PlannedDocument`` for a batch's rows
by seeking to its offset, whatever the file's BOM, line ends, quoted line breaks or rejected
rows; a file changed since the run was planned must not send what nobody planned.
"""

from __future__ import annotations

import json
import random
import tracemalloc
from contextlib import closing
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlmodel import select

from doccheck.ledger import DocumentRow, Ledger, RejectionRow
from doccheck.pipeline import Plan, PlanTally, iter_planned, load_plan
from doccheck.pipeline.planning._batches import MANIFEST_CHANGED, BatchRef, load_batch, read_batch, record_plan
from doccheck.sources.manifest import CompactIds, ManifestError, RejectCode
from tests.factories import random_text_manifest

SAMPLE = Path(__file__).parents[3] / "sample_data" / "manifest.csv"


def _csv_rows() -> list[str]:
    """Records (without line ends) of a CSV with everything that moves byte offsets."""
    return [
        "document_id,text,products,section",
        "a-1,Plain essay one about rivers,,A",
        '"a-2","A quoted essay, with a comma",ai,B',
        "",  # a blank line between records
        'a-3,"An essay over\r\nthree lines, with ""quotes""\r\nand CRLF inside",similarity,A',
        ",text without an id,,A",  # rejected: missing_id
        "a-4,Ünïcödé essay — ünïcödé words here,ai;similarity,C",
        "a-5,,,A",  # rejected: no_path_or_text
        "a-2,a duplicate id of row 2,,B",  # rejected: duplicate_id
        'a-6,"multi\nline with LF only",,A',
        "a-7,essay seven 🌍 with an emoji,,B",
        "a-8,essay eight,bogus,A",  # rejected: invalid_products
        "a-9,essay nine,,A",
        "a-10,essay ten,,A",
        "a-11,essay eleven,,A",
    ]


def _write_csv(path: Path, *, bom: bool, newline: str) -> Path:
    body = newline.join(_csv_rows()) + newline
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + body.encode("utf-8"))
    return path


def _write_jsonl(path: Path) -> Path:
    lines = [
        json.dumps({"document_id": "j-1", "text": "first essay", "section": "A"}),
        "",
        json.dumps({"document_id": "j-2", "text": "Ünïcödé — essay 🌍", "section": "B"}, ensure_ascii=False),
        "{not json",
        json.dumps({"document_id": "j-3", "text": "third\nessay", "section": "A"}),
        json.dumps({"document_id": "j-1", "text": "duplicate", "section": "A"}),
        json.dumps({"document_id": "j-4", "text": "fourth essay", "products": "similarity", "section": "C"}),
        json.dumps({"text": "no id", "section": "A"}),
        json.dumps({"document_id": "j-5", "text": "fifth essay", "section": "A"}),
        json.dumps({"document_id": "j-6", "text": "sixth essay", "section": "B"}),
    ]
    path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode("utf-8") + b"\r\n")
    return path


def _write_parquet(path: Path) -> Path:
    ids: list[str | None] = [f"p-{i}" for i in range(1, 15)]
    ids[4] = None  # missing id
    ids[9] = "p-2"  # duplicate
    texts: list[str | None] = [f"parquet essay number {i}" for i in range(1, 15)]
    texts[6] = None  # no text
    table = pa.table({"document_id": ids, "text": texts, "section": ["A", "B"] * 7})
    pq.write_table(table, path, row_group_size=4)
    return path


def _ledger(tmp_path: Path, name: str = "l.db") -> Ledger:
    return Ledger(f"sqlite:///{tmp_path / name}")


def _check_recorded_like_load_plan(ledger: Ledger, manifest: Path, batch_size: int, **kwargs: object) -> Plan:
    plan = load_plan(manifest, **kwargs)  # type: ignore[arg-type]
    handed: list[BatchRef] = []
    recorded = record_plan(ledger, manifest, batch_size=batch_size, on_batch=handed.append, **kwargs)  # type: ignore[arg-type]
    refs = recorded.batches
    assert handed == refs and [r.number for r in refs] == list(range(1, len(refs) + 1))
    # Refs are disjoint, in order, and hold every valid row exactly once.
    for before, after in zip(refs, refs[1:], strict=False):
        assert before.last_row < after.first_row
    rows = [d.row_number for d in plan.documents]
    covered = [row for row in rows for ref in refs if ref.first_row <= row <= ref.last_row]
    assert covered == rows
    assert [r.documents for r in refs] == [sum(ref.first_row <= row <= ref.last_row for row in rows) for ref in refs]
    assert all(0 < r.documents <= batch_size for r in refs)
    # The tally and the ledger hold what load_plan planned (no texts in the ledger).
    assert recorded.tally.rejections == plan.rejections
    assert recorded.tally.counts_by_mode() == plan.counts_by_mode()
    assert recorded.tally.estimated_cost_cents() == plan.estimated_cost_cents()
    with ledger.session() as s:
        docs = s.exec(select(DocumentRow).where(DocumentRow.run_id == recorded.run_id)).all()
        rejected = s.exec(select(RejectionRow).where(RejectionRow.run_id == recorded.run_id)).all()
    assert sorted((d.row_number, d.document_id, d.idempotency_key) for d in docs) == [
        (d.row_number, d.document_id, d.idempotency_key) for d in plan.documents
    ]
    assert sorted((r.row_number, r.code) for r in rejected) == [(r.row_number, r.code) for r in plan.rejections]
    assert ledger.document_metadata(recorded.run_id) == plan.metadata_by_document()
    # Each batch, re-read on its own from its offset, is load_plan's documents of those rows.
    loaded = []
    for ref in refs:
        batch = load_batch(
            ledger,
            recorded.run_id,
            manifest,
            BatchRef.from_dict(json.loads(json.dumps(ref.to_dict()))),
            campaign=recorded.campaign,
            products=kwargs.get("products"),  # type: ignore[arg-type]
            metadata_columns=kwargs.get("metadata_columns", ()),  # type: ignore[arg-type]
        )
        assert batch == [d for d in plan.documents if ref.first_row <= d.row_number <= ref.last_row]
        loaded.extend(batch)
    assert loaded == plan.documents
    return plan


@pytest.mark.parametrize("bom", [True, False])
@pytest.mark.parametrize("newline", ["\r\n", "\n"])
@pytest.mark.parametrize("batch_size", [1, 2, 3, 100])
def test_csv_batches_cover_every_row_and_reload_like_load_plan(
    tmp_path: Path, bom: bool, newline: str, batch_size: int
) -> None:
    manifest = _write_csv(tmp_path / "term.csv", bom=bom, newline=newline)
    with closing(_ledger(tmp_path)) as ledger:
        plan = _check_recorded_like_load_plan(ledger, manifest, batch_size, metadata_columns=["section"])
    assert len(plan.documents) == 9
    assert {r.code for r in plan.rejections} == {
        RejectCode.MISSING_ID,
        RejectCode.NO_PATH_OR_TEXT,
        RejectCode.DUPLICATE_ID,
        RejectCode.INVALID_PRODUCTS,
    }


def test_csv_offsets_point_at_the_first_row_of_each_batch(tmp_path: Path) -> None:
    manifest = _write_csv(tmp_path / "term.csv", bom=True, newline="\r\n")
    raw = manifest.read_bytes()
    with closing(_ledger(tmp_path)) as ledger:
        recorded = record_plan(ledger, manifest, batch_size=1)
    by_row = {d.row_number: d.document_id for d in load_plan(manifest).documents}
    assert recorded.batches[0].offset == raw.index(b"a-1")
    for ref in recorded.batches:
        assert ref.offset is not None
        assert raw[ref.offset :].lstrip(b'"').startswith(by_row[ref.first_row].encode())


def test_rows_swallowed_by_a_broken_quote_never_start_a_batch(tmp_path: Path) -> None:
    lines = ["document_id,path,text"]
    lines += [f"d-{i},,essay {i}" for i in range(1, 4)]
    lines += ['d-4,,"an essay whose quote never closes']
    lines += [f"d-{i},essays/e{i}.txt," for i in range(5, 9)]
    lines += ['still inside",']
    lines += [f"d-{i},,essay {i}" for i in range(9, 12)]
    manifest = tmp_path / "broken.csv"
    manifest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with closing(_ledger(tmp_path)) as ledger:
        plan = _check_recorded_like_load_plan(ledger, manifest, 1)
    assert any(r.code == RejectCode.UNTERMINATED_QUOTE for r in plan.rejections)


def test_jsonl_batches_cover_every_line_and_reload_like_load_plan(tmp_path: Path) -> None:
    manifest = _write_jsonl(tmp_path / "term.jsonl")
    for size in (1, 2, 4):
        with closing(_ledger(tmp_path, f"j{size}.db")) as ledger:
            plan = _check_recorded_like_load_plan(ledger, manifest, size, metadata_columns="section")
    assert len(plan.documents) == 6 and len(plan.rejections) == 3


def test_parquet_batches_read_from_their_row_group(tmp_path: Path) -> None:
    manifest = _write_parquet(tmp_path / "term.parquet")
    assert pq.ParquetFile(manifest).metadata.num_row_groups == 4
    for size in (1, 3, 5, 50):
        with closing(_ledger(tmp_path, f"p{size}.db")) as ledger:
            plan = _check_recorded_like_load_plan(ledger, manifest, size, products="ai,similarity")
            assert all(ref.offset is None for ref in record_plan(ledger, manifest, batch_size=size).batches)
    assert len(plan.documents) == 11


def test_parquet_batches_resume_where_the_previous_read_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A manifest written as ONE row group (pandas' default) is decoded once for all its
    batches read in order, not once per batch from its first row; a batch read out of order
    or a file changed since is read afresh, and an edited row is still refused."""
    manifest = tmp_path / "one-group.parquet"
    ids = [f"g-{i}" for i in range(1, 3001)]
    pq.write_table(pa.table({"document_id": ids, "text": [f"essay {i} on tides" for i in range(1, 3001)]}), manifest)
    assert pq.ParquetFile(manifest).metadata.num_row_groups == 1
    opened: list[int] = []
    original = pq.ParquetFile.iter_batches

    def counted(self: pq.ParquetFile, *args: object, **kwargs: object) -> object:
        opened.append(1)
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", counted)
    with closing(_ledger(tmp_path)) as ledger:
        recorded = record_plan(ledger, manifest, batch_size=100)
        assert len(recorded.batches) == 30
        opened.clear()
        read = [d.document_id for ref in recorded.batches for d in load_batch(ledger, recorded.run_id, manifest, ref)]
        assert read == ids
        assert len(opened) == 1  # one decoding pass for the 30 batches
        again = load_batch(ledger, recorded.run_id, manifest, recorded.batches[4])  # out of order: afresh
        assert [d.document_id for d in again] == ids[400:500] and len(opened) == 2
        texts = [f"essay {i} on tides" for i in range(1, 3001)]
        texts[2949] = "an essay rewritten after planning"
        pq.write_table(pa.table({"document_id": ids, "text": texts}), manifest)
        loaded = read_batch(ledger, recorded.run_id, manifest, recorded.batches[-1])
        assert [f.document_id for f in loaded.failures] == ["g-2950"]
        assert loaded.failures[0].code == MANIFEST_CHANGED and len(loaded.documents) == 99


def test_the_sample_manifest_with_files(tmp_path: Path) -> None:
    with closing(_ledger(tmp_path)) as ledger:
        _check_recorded_like_load_plan(ledger, SAMPLE, 2, products="ai,similarity")


def test_a_duplicate_in_a_later_batch_stays_unsent(tmp_path: Path) -> None:
    """load_batch sees only its own rows, so it cannot tell a duplicate: the ledger decides."""
    manifest = tmp_path / "dups.csv"
    manifest.write_text("document_id,text\nx,one\ny,two\nz,three\nx,one again\nw,four\n", encoding="utf-8")
    with closing(_ledger(tmp_path)) as ledger:
        recorded = record_plan(ledger, manifest, batch_size=2)
        last = recorded.batches[-1]
        assert (last.first_row, last.last_row) == (3, 5)
        assert [d.document_id for d in load_batch(ledger, recorded.run_id, manifest, last)] == ["z", "w"]


def test_recording_is_idempotent_for_a_retried_run(tmp_path: Path) -> None:
    with closing(_ledger(tmp_path)) as ledger:
        _check_recording_is_idempotent(ledger, tmp_path)


def _check_recording_is_idempotent(ledger: Ledger, tmp_path: Path) -> None:
    """A run recorded again (a retried step) keeps one row per document and rejection (the
    documents' unique (run, document) constraint skips those there already)."""
    manifest = _write_csv(tmp_path / "term.csv", bom=False, newline="\n")
    first = record_plan(ledger, manifest, batch_size=3, params={"concurrency": 4})
    again = record_plan(ledger, manifest, batch_size=3, run_id=first.run_id)
    assert again.run_id == first.run_id and again.batches == first.batches
    assert len(ledger.document_metadata(first.run_id)) == 9
    with ledger.session() as s:
        assert len(s.exec(select(DocumentRow).where(DocumentRow.run_id == first.run_id)).all()) == 9
        assert len(s.exec(select(RejectionRow).where(RejectionRow.run_id == first.run_id)).all()) == 4
    run = ledger.get_run(first.run_id)
    assert run is not None and run.products == ["ai", "similarity"] and run.params == {"concurrency": 4}


def test_a_bad_manifest_records_no_run(tmp_path: Path) -> None:
    manifest = tmp_path / "bad.csv"
    manifest.write_text("id,text\n1,hello\n", encoding="utf-8")
    with closing(_ledger(tmp_path)) as ledger:
        with pytest.raises(ManifestError, match="document_id"):
            record_plan(ledger, manifest)
        with ledger.session() as s:
            from doccheck.ledger import RunRow

            assert s.exec(select(RunRow)).all() == []


def test_a_row_changed_since_planning_is_not_sent(tmp_path: Path) -> None:
    manifest = _write_csv(tmp_path / "term.csv", bom=False, newline="\n")
    with closing(_ledger(tmp_path)) as ledger:
        recorded = record_plan(ledger, manifest, batch_size=3)
        ref = next(r for r in recorded.batches if r.first_row <= 8 <= r.last_row)  # a-6 is row 8
        original = load_batch(ledger, recorded.run_id, manifest, ref)
        # Same length, other words: every offset stays valid, one text differs.
        manifest.write_bytes(manifest.read_bytes().replace(b"multi\nline", b"MULTI\nLINE"))
        loaded = read_batch(ledger, recorded.run_id, manifest, ref)
        assert [d.document_id for d in loaded.documents] == [d.document_id for d in original if d.document_id != "a-6"]
        [failure] = loaded.failures
        assert failure.document_id == "a-6" and failure.code == MANIFEST_CHANGED
        assert "row 8, field 'text': manifest changed since the run was planned" in failure.message
        assert loaded.result().failed == 1
        sub = ledger.submission_for_key(failure.idempotency_key)
        assert sub is not None and sub.state == "failed" and sub.error_code == MANIFEST_CHANGED


def test_a_shortened_or_rewritten_file_fails_its_rows_not_the_run(tmp_path: Path) -> None:
    manifest = _write_csv(tmp_path / "term.csv", bom=False, newline="\n")
    with closing(_ledger(tmp_path)) as ledger:
        recorded = record_plan(ledger, manifest, batch_size=3)
        last = recorded.batches[-1]
        manifest.write_text("document_id,text\na-1,short\n", encoding="utf-8")
        loaded = read_batch(ledger, recorded.run_id, manifest, last)
        assert loaded.documents == [] and len(loaded.failures) == last.documents
        assert all("manifest changed since the run was planned" in f.message for f in loaded.failures)
        # An earlier batch whose offset now lands inside another row: its rows differ or are gone.
        first = read_batch(ledger, recorded.run_id, manifest, recorded.batches[1])
        assert first.documents == [] and len(first.failures) == recorded.batches[1].documents


def test_products_change_names_the_field(tmp_path: Path) -> None:
    manifest = tmp_path / "p.csv"
    manifest.write_text("document_id,text,products\nq-1,essay,ai\nq-2,essay two,ai\n", encoding="utf-8")
    with closing(_ledger(tmp_path)) as ledger:
        recorded = record_plan(ledger, manifest, batch_size=10)
        manifest.write_text("document_id,text,products\nq-1,essay,sim\nq-2,essay two,ai\n", encoding="utf-8")
        loaded = read_batch(ledger, recorded.run_id, manifest, recorded.batches[0])
        assert [d.document_id for d in loaded.documents] == ["q-2"]
        assert "row 1, field 'products'" in loaded.failures[0].message


def _recording_peak(tmp_path: Path, rows: int) -> int:
    manifest = random_text_manifest(tmp_path / f"m{rows}.csv", rows, words=60)
    with closing(_ledger(tmp_path, f"m{rows}.db")) as ledger:
        tracemalloc.start()
        try:
            recorded = record_plan(ledger, manifest, batch_size=500)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert recorded.documents == rows
    return peak


def test_recording_memory_is_flat_in_the_manifests_size(tmp_path: Path) -> None:
    small = _recording_peak(tmp_path, 2_500)
    large = _recording_peak(tmp_path, 10_000)
    # Holding the plan would cost > 10,000 × 1 KB of text alone (10 MB); recording keeps one batch.
    assert large < 1.5 * small, (small, large)
    assert large < 6 * 1024 * 1024, large


def _jsonl_peak(path: Path, rows: int) -> int:
    vocabulary = [f"word{i}" for i in range(2000)]
    rnd = random.Random(7)
    with path.open("w", encoding="utf-8") as handle:
        for i in range(rows):
            handle.write(json.dumps({"document_id": f"s-{i:06d}", "text": " ".join(rnd.choices(vocabulary, k=30))}))
            handle.write("\n")
    tally = PlanTally(campaign="term", manifest=path)
    tracemalloc.start()
    try:
        for _ in iter_planned(path, tally):
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_jsonl_streams_in_flat_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """JSONL used to be read whole first (its columns are its lines' keys); now it streams.

    What may grow is the compact duplicate-id index (12 bytes per row, ×3 while it merges);
    each row's text alone is ~240 bytes, so holding the rows would grow by far more.

    The index grows in steps: ids wait in a dict (~100 bytes each) until ``merge_every`` of
    them fold into the arrays. At the default (8,192) both 2,000 and 8,000 rows sit wholly in
    that dict, so the slope would measure the dict, not the index. Merging every 512 ids puts
    both sizes in the arrays' regime at a quarter of the rows the default needed (10k vs 40k).
    """
    monkeypatch.setattr(CompactIds, "MERGE_EVERY", 512)
    small = _jsonl_peak(tmp_path / "small.jsonl", 2_000)
    large = _jsonl_peak(tmp_path / "large.jsonl", 8_000)
    assert (large - small) / 6_000 < 64, (small, large)
    assert large < 4 * 1024 * 1024, large


def test_jsonl_column_checks_still_see_every_line(tmp_path: Path) -> None:
    """The column scan stops early only once everything needed is seen; a late column is found."""
    manifest = tmp_path / "late.jsonl"
    lines = [json.dumps({"document_id": f"d{i}", "text": "an essay"}) for i in range(50)]
    lines.append(json.dumps({"document_id": "d50", "text": "an essay", "section": "B"}))
    manifest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    plan = load_plan(manifest, metadata_columns="section")
    assert plan.documents[-1].metadata == {"document_id": "d50", "section": "B"}
    with pytest.raises(ManifestError, match="metadata column"):
        load_plan(manifest, metadata_columns="cohort")
    no_ids = tmp_path / "no_ids.jsonl"
    no_ids.write_text('{"text": "a"}\n{"text": "b", "name": "x"}\n', encoding="utf-8")
    with pytest.raises(ManifestError, match=r"'document_id' is missing \(columns found: 'text', 'name'\)"):
        load_plan(no_ids)


def test_recording_a_batch_again_looks_up_only_its_own_ids(tmp_path: Path) -> None:
    """``submit_batch`` records its documents again; that must not read the whole run's ids per batch."""
    from sqlalchemy import event

    manifest = tmp_path / "many.csv"
    manifest.write_text("document_id,text\n" + "".join(f"m-{i},essay {i}\n" for i in range(600)), encoding="utf-8")
    with closing(_ledger(tmp_path)) as ledger:
        recorded = record_plan(ledger, manifest, batch_size=50)
        docs = load_batch(ledger, recorded.run_id, manifest, recorded.batches[3])
        seen: list[str] = []

        def remember(conn: object, cursor: object, statement: str, *args: object) -> None:
            if "documents" in statement:
                seen.append(" ".join(statement.upper().split()))

        event.listen(ledger.engine, "after_cursor_execute", remember)
        try:
            assert ledger.record_documents(recorded.run_id, docs) == 0
        finally:
            event.remove(ledger.engine, "after_cursor_execute", remember)
        # one insert that skips the documents already there, by the unique (run, document) constraint
        assert [s.split(" (")[0] for s in seen] == ["INSERT INTO DOCUMENTS"], seen
        assert "ON CONFLICT (RUN_ID, DOCUMENT_ID) DO NOTHING" in seen[0], seen


def test_cohort_matching_rides_along_the_recording(tmp_path: Path) -> None:
    """One pass: match_cohort consumes recording.documents() while the batches are recorded."""
    from doccheck.matching import LedgerStore, match_cohort, match_plan
    from doccheck.pipeline.planning._batches import start_recording

    plan = load_plan(SAMPLE, products="ai,similarity")
    with closing(_ledger(tmp_path, "whole.db")) as whole_ledger, closing(_ledger(tmp_path, "streamed.db")) as ledger:
        whole = match_plan(plan, run_id=whole_ledger.start_run(campaign=plan.campaign), ledger=whole_ledger)
        recording = start_recording(ledger, SAMPLE, products="ai,similarity", batch_size=2)
        streamed = match_cohort(
            recording.documents(), campaign=recording.campaign, run_id=recording.run_id, store=LedgerStore(ledger)
        )
        recorded = recording.finish()
        assert recording.finish() is recorded  # finishing twice is harmless
    assert streamed.summary() == whole.summary() and streamed.summary()["pairs"] >= 1
    assert streamed.top() == whole.top()
    assert recorded.documents == len(plan.documents) == sum(r.documents for r in recorded.batches)
    assert recorded.tally.products == sum(len(d.products) for d in plan.documents)


def test_a_recording_left_unread_is_finished_whole(tmp_path: Path) -> None:
    from doccheck.pipeline.planning._batches import start_recording

    manifest = _write_csv(tmp_path / "term.csv", bom=True, newline="\r\n")
    with closing(_ledger(tmp_path)) as ledger:
        recording = start_recording(ledger, manifest, batch_size=2)
        first = next(recording.documents())
        assert first.document_id == "a-1" and first.text == "Plain essay one about rivers"
        recorded = recording.finish()
        assert recorded.documents == 9 and len(ledger.document_metadata(recorded.run_id)) == 9


def test_a_batch_ref_is_a_plain_json_parameter() -> None:
    """Prefect serialises task parameters with pydantic: a ref must survive that round trip."""
    from pydantic import TypeAdapter
    from pydantic_core import to_jsonable_python

    ref = BatchRef(
        number=3, first_row=201, last_row=305, documents=100, offset=512_000, line=420, estimated_cost_cents=7
    )
    assert to_jsonable_python(ref) == ref.to_dict() == json.loads(json.dumps(ref.to_dict()))
    assert TypeAdapter(BatchRef).validate_python(ref.to_dict()) == ref == BatchRef.from_dict(ref.to_dict())


def test_a_batch_whose_keys_all_have_checks_is_not_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The weekly rerun (issue 28): nothing of a settled batch would be sent, so while the
    manifest is the one recorded (size, modification time) its rows are not re-read and count
    as already done; one unsettled key, or an edited manifest, and the batch is read as before."""
    import os

    from doccheck.ledger import SubmissionRow
    from doccheck.pipeline.planning import _batches as batches

    manifest = _write_csv(tmp_path / "term.csv", bom=False, newline="\n")
    with closing(_ledger(tmp_path)) as ledger:
        recorded = record_plan(ledger, manifest, batch_size=3)
        first, second = recorded.batches[0], recorded.batches[1]
        keys = {d.document_id: d.idempotency_key for d in load_batch(ledger, recorded.run_id, manifest, first)}
        keys_second = [d.idempotency_key for d in load_batch(ledger, recorded.run_id, manifest, second)]
        with ledger.session() as s:
            for number, key in enumerate([*keys.values(), keys_second[0]]):
                s.add(SubmissionRow(campaign="term", document_id=f"d{number}", idempotency_key=key, state="submitted"))
            s.commit()
        reads: list[object] = []
        real = batches.iter_manifest
        monkeypatch.setattr(batches, "iter_manifest", lambda *a, **k: reads.append(a) or real(*a, **k))
        loaded = read_batch(ledger, recorded.run_id, manifest, first)
        assert loaded.documents == [] and loaded.failures == [] and loaded.settled == first.documents == len(keys)
        result = loaded.result()
        assert (result.total, result.already_done, result.failed) == (len(keys), len(keys), 0) and reads == []
        partly = read_batch(ledger, recorded.run_id, manifest, second)
        assert partly.settled == 0 and len(partly.documents) == second.documents and len(reads) == 1
        os.utime(manifest, ns=(0, 0))  # the manifest is not the one recorded any more: read it again
        again = read_batch(ledger, recorded.run_id, manifest, first)
        assert again.settled == 0 and len(again.documents) == len(keys) and len(reads) == 2
