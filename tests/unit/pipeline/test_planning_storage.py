"""A run's planning from a bucket manifest (issue 48): recorded in one pass with each document
fetched once, its batches re-read from the same listing, and a rerun with nothing changed that
decides from the listing alone: no GET and no HEAD of a document."""

from __future__ import annotations

import hashlib
from contextlib import closing
from pathlib import Path

from fsspec.implementations.memory import MemoryFileSystem

from doccheck.ledger import Ledger, SubmissionRow
from doccheck.pipeline import dry_run
from doccheck.pipeline.planning._batches import load_batch, read_batch, record_plan
from doccheck.storage import display
from tests.fixtures.memory_bucket import Requests
from tests.generated_documents import pdf_text
from tests.hostile_documents import docx_package, para

Bucket = tuple[MemoryFileSystem, Requests]
URL = "memory://term/course-a/manifest.csv"


def _term(fs: MemoryFileSystem, count: int = 9) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for i in range(count):
        words = f"essay {i} written by student {i} about rivers and their deltas"
        if i % 3 == 0:
            files[f"docs/e{i}.txt"] = words.encode()
        elif i % 3 == 1:
            files[f"docs/e{i}.docx"] = docx_package(para(words))
        else:
            files[f"docs/e{i}.pdf"] = pdf_text([words])
    rows = "".join(f"s{i},{name}\n" for i, name in enumerate(files))
    fs.pipe({f"/term/course-a/{name}": data for name, data in files.items()})
    fs.pipe({"/term/course-a/manifest.csv": f"document_id,path\n{rows}x1,../escape.txt\n".encode()})
    fs.pipe({"/term/escape.txt": b"outside the prefix"})
    return files


def _settle(ledger: Ledger, keys: list[str]) -> None:
    with ledger.session() as s:
        for n, key in enumerate(keys):
            s.add(SubmissionRow(campaign="manifest", document_id=f"d{n}", idempotency_key=key, state="submitted"))


def test_a_run_reads_each_document_once_and_its_rerun_reads_none(bucket: Bucket, tmp_path: Path) -> None:
    fs, requests = bucket
    files = _term(fs)
    with closing(Ledger(f"sqlite:///{tmp_path / 'l.db'}")) as ledger:
        first = record_plan(ledger, URL, batch_size=4)
        assert first.documents == len(files) and [r.code for r in first.tally.rejections] == [
            "path_escapes_manifest_dir"
        ]
        assert requests.documents_read() == {f"/term/course-a/{name}": 1 for name in files}  # prefetched, once
        assert sum(requests.lists.values()) == 1
        assert "/term/escape.txt" not in requests.gets
        requests.clear()
        loaded = [d for ref in first.batches for d in load_batch(ledger, first.run_id, URL, ref)]
        assert [d.content_hash for d in loaded] == [hashlib.sha256(data).hexdigest() for data in files.values()]
        # the batches re-read the manifest, from the run's one listing, and no document
        assert requests.documents_read() == {} and sum(requests.lists.values()) == 0
        assert {display(d.path) for d in loaded} == {f"memory://term/course-a/{name}" for name in files}  # type: ignore[arg-type]
        _settle(ledger, [d.idempotency_key for d in loaded])

        requests.clear()
        rerun = record_plan(ledger, URL, batch_size=4)
        settled = [read_batch(ledger, rerun.run_id, URL, ref) for ref in rerun.batches]
        assert sum(b.settled for b in settled) == len(files) and all(not b.documents for b in settled)
        assert requests.documents_read() == {}  # no GET of a document
        assert not [p for p in requests.heads if "/docs/" in p]  # nor a HEAD
        assert sum(requests.lists.values()) == 1  # one LIST of the prefix
        assert sum(requests.heads.values()) <= 2  # the manifest: asked of the store once a run


def test_a_document_changed_since_is_read_again_alone(bucket: Bucket, tmp_path: Path) -> None:
    fs, requests = bucket
    files = _term(fs, 4)
    with closing(Ledger(f"sqlite:///{tmp_path / 'l.db'}")) as ledger:
        first = record_plan(ledger, URL)
        before = {
            d.document_id: d.content_hash for ref in first.batches for d in load_batch(ledger, first.run_id, URL, ref)
        }
        fs.pipe({"/term/course-a/docs/e0.txt": b"a rewritten essay with other words"})
        requests.clear()
        rerun = record_plan(ledger, URL)
        assert requests.documents_read() == {"/term/course-a/docs/e0.txt": 1}
        after = {
            d.document_id: d.content_hash for ref in rerun.batches for d in load_batch(ledger, rerun.run_id, URL, ref)
        }
        assert after["s0"] != before["s0"] and {k: v for k, v in after.items() if k != "s0"} == {
            k: v for k, v in before.items() if k != "s0"
        }
        assert len(files) == len(after)


def test_a_dry_run_of_a_bucket_manifest(bucket: Bucket) -> None:
    fs, _ = bucket
    files = _term(fs, 6)
    summary = dry_run(URL, match=True)
    assert summary.manifest == URL and summary.campaign == "manifest"
    assert summary.documents == len(files) and summary.rejected == 1
    assert summary.total_words == sum(len(f"essay {i} written by student {i} about rivers and their deltas".split())
                                      for i in range(6))  # fmt: skip


def test_shards_of_a_recorded_run_read_no_document_again(bucket: Bucket, tmp_path: Path) -> None:
    """Each shard plans the whole manifest to find its own documents: what the run's planning read
    is known from the ledger by its listing identity, so the shards together read none again, and
    between them they hold every document once."""
    from doccheck.pipeline import iter_shard

    fs, requests = bucket
    files = _term(fs, 12)
    with closing(Ledger(f"sqlite:///{tmp_path / 'l.db'}")) as ledger:
        run = record_plan(ledger, URL, batch_size=4)
        planned = [d for ref in run.batches for d in load_batch(ledger, run.run_id, URL, ref)]
        requests.clear()
        shards = [
            list(iter_shard(URL, ledger, run_id=run.run_id, campaign="manifest", shard=n, shards=3)) for n in range(3)
        ]
        assert requests.documents_read() == {}  # no GET of a document
        assert not [p for p in requests.heads if "/docs/" in p]  # nor a HEAD
        keys = sorted(d.idempotency_key for shard in shards for d in shard)
        assert keys == sorted(d.idempotency_key for d in planned) and len(keys) == len(files)
        assert all(shards), "a shard with no document: the split proves little"


def test_a_file_whose_bytes_were_refused_is_refused_again_unread(bucket: Bucket, tmp_path: Path) -> None:
    """A photo, a scanned PDF and an archive named ``.docx`` are read once; a rerun refuses their
    rows with the same code and reason from the listing alone, and a photo replaced by a typed
    copy (a new ETag) is read again."""
    from tests.generated_documents import pdf_image_only, png

    fs, requests = bucket
    refused = {"docs/photo.png": png(), "docs/scan.pdf": pdf_image_only(), "docs/sheet.docx": b"PK\x03\x04 not a zip"}
    rows = "".join(f"r{i},{name}\n" for i, name in enumerate(refused))
    fs.pipe({f"/term/course-a/{name}": data for name, data in refused.items()})
    fs.pipe({URL.removeprefix("memory:/"): f"document_id,path\n{rows}".encode()})
    with closing(Ledger(f"sqlite:///{tmp_path / 'l.db'}")) as ledger:
        first = record_plan(ledger, URL)
        said = {(r.document_id, r.code, r.reason) for r in first.tally.rejections}
        assert {code for _, code, _ in said} == {"image_without_text", "image_only_pdf", "unreadable_file"}
        assert set(requests.documents_read()) == {f"/term/course-a/{name}" for name in refused}

        requests.clear()
        rerun = record_plan(ledger, URL)
        assert {(r.document_id, r.code, r.reason) for r in rerun.tally.rejections} == said
        assert requests.documents_read() == {} and not [p for p in requests.heads if "/docs/" in p]

        fs.pipe({"/term/course-a/docs/photo.png": pdf_text(["a typed copy of the photographed essay"])})
        requests.clear()
        again = record_plan(ledger, URL)
        assert requests.documents_read() == {"/term/course-a/docs/photo.png": 1}
        assert {r.document_id for r in again.tally.rejections} == {"r1", "r2"}


def test_a_closed_recording_lets_its_listing_go(bucket: Bucket, tmp_path: Path) -> None:
    """Once a run's batches are sent its listing is not held through the reports (a term's 100,000
    keys: ~20 MB where the run's memory peaks): neither by the recording, which refers to itself
    through its row stream (a cycle the reports' frozen collections would keep), nor by the run's
    shared listing. A batch read after it lists the prefix again."""
    import gc
    import weakref

    from doccheck.pipeline.planning._batches import start_recording
    from doccheck.pipeline.planning._run_files import run_files

    fs, requests = bucket
    _term(fs, 6)
    with closing(Ledger(f"sqlite:///{tmp_path / 'l.db'}")) as ledger:
        recording = start_recording(ledger, URL, batch_size=4)
        run = recording.finish()
        listing = weakref.ref(run_files(run.run_id, URL).listing)
        gc.disable()  # what is let go goes by reference counting alone
        try:
            recording.close()
            del recording
            assert listing() is None
        finally:
            gc.enable()
        requests.clear()
        assert [d.document_id for d in load_batch(ledger, run.run_id, URL, run.batches[0])] == ["s0", "s1", "s2", "s3"]
        assert sum(requests.lists.values()) == 1 and requests.documents_read() == {}
