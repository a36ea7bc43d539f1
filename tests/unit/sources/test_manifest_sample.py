"""The committed sample corpus: what the demo and the end-to-end tests rely on."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import pytest

from doccheck.domain import MULTIPART_MAX_BYTES, UPLOAD_MAX_BYTES
from doccheck.extract import words_of
from doccheck.pipeline import load_plan

SAMPLE = Path(__file__).resolve().parents[3] / "sample_data"
MANIFESTS = ["manifest.csv", "manifest.jsonl", "manifest.parquet"]
EXPECTED_REJECTS = {
    "envs101-w6-014": "file_not_found",
    "envs101-w6-015": "path_escapes_manifest_dir",
    "envs101-w6-003": "duplicate_id",
    "envs101-w6-016": "both_path_and_text",
    "envs101-w6-017": "image_without_text",
    "envs101-w6-018": "empty_document",
    "envs101-w6-019": "invalid_products",
}


@pytest.fixture(scope="module")
def plans() -> dict[str, object]:
    return {
        m: load_plan(SAMPLE / m, campaign="envs101-w6", products="ai,similarity", metadata_columns=["section"])
        for m in MANIFESTS
    }


def test_sample_plan(plans) -> None:
    plan = plans["manifest.csv"]
    assert plan.counts_by_mode() == {"text": 2, "multipart": 10, "upload": 1, "rejected": 7}
    assert {r.document_id: r.code for r in plan.rejections} == EXPECTED_REJECTS
    suffixes = {d.path.suffix for d in plan.documents if d.path is not None}
    assert suffixes == {".txt", ".md", ".docx", ".pdf"}
    (large,) = [d for d in plan.documents if d.mode == "upload"]
    assert MULTIPART_MAX_BYTES < large.size_bytes <= UPLOAD_MAX_BYTES
    assert large.words and large.words > 100_000
    assert all(d.words and d.words >= 40 for d in plan.documents)
    # Only the allowlisted column is sent: student_email stays local.
    assert all(set(d.metadata) == {"document_id", "section"} for d in plan.documents)
    assert plan.documents[0].metadata == {"document_id": "envs101-w6-001", "section": "A"}


def test_three_formats_plan_identically(plans) -> None:
    def shape(plan):
        return (
            [
                (d.row_number, d.document_id, d.mode, d.products, d.idempotency_key, d.words, d.name)
                for d in plan.documents
            ],
            [(r.row_number, r.document_id, r.code, r.field) for r in plan.rejections],
        )

    csv_shape = shape(plans["manifest.csv"])
    assert shape(plans["manifest.jsonl"]) == csv_shape
    assert shape(plans["manifest.parquet"]) == csv_shape


def test_near_duplicates_overlap_and_request_similarity(plans) -> None:
    docs = {d.document_id: d for d in plans["manifest.csv"].documents}
    a, b = docs["envs101-w6-007"], docs["envs101-w6-008"]
    assert "similarity" in a.products and "similarity" in b.products
    assert a.content_hash != b.content_hash

    def shingles(path: Path) -> set[tuple[str, ...]]:
        words = words_of(path.read_text(encoding="utf-8"))
        return {tuple(words[i : i + 5]) for i in range(len(words) - 4)}

    sa, sb = shingles(a.path), shingles(b.path)
    assert len(sa & sb) / len(sa | sb) > 0.5
    other = shingles(docs["envs101-w6-001"].path)
    assert len(sa & other) / len(sa | other) < 0.05


def test_large_file_is_reproducible_and_corpus_small() -> None:
    spec = importlib.util.spec_from_file_location("make_corpus", SAMPLE / "make_corpus.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    committed = (SAMPLE / "submissions" / module.LARGE_NAME).read_bytes()
    assert hashlib.sha256(module.large_text()).hexdigest() == hashlib.sha256(committed).hexdigest()
    total = sum(p.stat().st_size for p in SAMPLE.rglob("*") if p.is_file())
    assert total < 6 * 1024 * 1024
