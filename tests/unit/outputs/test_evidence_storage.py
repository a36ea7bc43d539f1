"""The report page's evidence texts read again from a bucket manifest (issue 48): a row's file
confined to the manifest's prefix as the run confined it, read through the storage seam, and
only while its bytes are those the run checked."""

from __future__ import annotations

import hashlib

from fsspec.implementations.memory import MemoryFileSystem

from doccheck.ledger import DocumentRow, Ledger
from doccheck.outputs.instructor._evidence_texts import ManifestTexts, manifest_texts
from tests.fixtures.memory_bucket import Requests

LEFT = "My essay begins with a question about cities and the rivers that made them grow."
RIGHT = "Historians disagree on many points, yet the rivers made the cities grow as they did."


def _record(ledger: Ledger, run_id: str, doc: str, data: bytes) -> None:
    with ledger.session() as s:
        s.add(DocumentRow(run_id=run_id, campaign="c", document_id=doc, idempotency_key=f"k-{run_id}-{doc}",
                          content_hash=hashlib.sha256(data).hexdigest()))  # fmt: skip
        s.commit()


def test_texts_of_a_bucket_manifest(ledger: Ledger, bucket: tuple[MemoryFileSystem, Requests]) -> None:
    fs, requests = bucket
    fs.pipe({
        "/term/course-a/essays/d1.txt": LEFT.encode(),
        "/term/course-a/essays/d3.txt": (RIGHT + " edited later").encode(),
        "/term/secret.txt": RIGHT.encode(),
        "/term/course-a/template.txt": b"Answer the question: how did the rivers shape the growth of cities in the nineteenth century",
        "/term/course-a/manifest.csv": (
            "document_id,path,text\nd1,essays/d1.txt,\nd2,,\"" + RIGHT + "\"\nd3,essays/d3.txt,\n"
            "d4,../secret.txt,\nd5,s3://other/x.txt,\n"
        ).encode(),
    })  # fmt: skip
    run = ledger.start_run(campaign="c", manifest="memory://term/course-a/manifest.csv",
                           params={"templates": ["memory://term/course-a/template.txt"]})  # fmt: skip
    for doc, data in (("d1", LEFT), ("d2", RIGHT), ("d3", RIGHT), ("d4", RIGHT), ("d5", RIGHT)):
        _record(ledger, run, doc, data.encode())
    pairs = [{"document_id": "d1", "matched_document_id": d} for d in ("d2", "d3", "d4", "d5")]
    texts = ManifestTexts(ledger, run, pairs)
    assert texts("d1", None) == LEFT
    assert texts("d2", run) == RIGHT
    assert texts("d3", None) is None  # changed since the run
    assert texts("d4", None) is None and texts("d5", None) is None  # outside the prefix: never fetched
    assert "/term/secret.txt" not in requests.gets and not requests.lists
    assert manifest_texts(ledger, run, pairs).template  # the template read from the bucket
    assert requests.gets["/term/course-a/template.txt"] == 1


SHARED = "the factory clock replaced the rhythm of the seasons as the measure of a working day"


def test_a_pairs_passages_are_kept_and_the_next_page_reads_no_document(
    ledger: Ledger, bucket: tuple[MemoryFileSystem, Requests]
) -> None:
    """Passages found once are kept by campaign and both sides' hashes: the next page with the same
    bytes reads neither document (nor the manifest); a side whose bytes changed is read again."""
    from doccheck.outputs.instructor._evidence import pair_evidence

    fs, requests = bucket
    files = {"e/d1.txt": f"My essay: {SHARED}. Then mine.", "e/d2.txt": f"Yet {SHARED}; says another.",
             "e/d3.txt": "An essay of other words entirely, about nothing the first one says at all."}  # fmt: skip
    fs.pipe({f"/term/course-a/{name}": text.encode() for name, text in files.items()})
    fs.pipe({"/term/course-a/m.csv": b"document_id,path\nd1,e/d1.txt\nd2,e/d2.txt\nd3,e/d3.txt\n"})
    pairs = [{"document_id": "d1", "matched_document_id": "d2"}, {"document_id": "d1", "matched_document_id": "d3"}]

    def page(run: str) -> list[tuple[list[str], str | None]]:
        texts = manifest_texts(ledger, run, pairs)
        shown, _ = pair_evidence(pairs, texts.text_of, template=texts.template, kept=texts.kept)
        return [([p.left.match for p in e.passages], e.note) for e in shown]

    runs = []
    for _ in range(2):
        runs.append(ledger.start_run(campaign="c", manifest="memory://term/course-a/m.csv"))
        for doc in ("d1", "d2", "d3"):
            _record(ledger, runs[-1], doc, files[f"e/{doc}.txt"].encode())
    first = page(runs[0])
    assert first[0] == ([SHARED], None) and first[1][0] == [] and "edited text" in str(first[1][1])
    assert requests.documents_read() == {f"/term/course-a/{name}": 1 for name in files}

    requests.clear()
    assert page(runs[1]) == first  # the rerun's page: the same passages, kept
    assert requests.gets == {} and requests.heads == {}  # no document, no manifest read

    changed = f"Now {SHARED}, rewritten."
    fs.pipe({"/term/course-a/e/d2.txt": changed.encode()})
    third = ledger.start_run(campaign="c", manifest="memory://term/course-a/m.csv")
    for doc, text in (("d1", files["e/d1.txt"]), ("d2", changed), ("d3", files["e/d3.txt"])):
        _record(ledger, third, doc, text.encode())
    requests.clear()
    assert page(third) == first
    assert requests.documents_read() == {"/term/course-a/e/d1.txt": 1, "/term/course-a/e/d2.txt": 1}
