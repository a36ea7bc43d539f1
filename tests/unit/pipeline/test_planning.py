"""Planning: modes by size, the Idempotency-Key formula (pinned), cost estimates, load_plan."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection
from pathlib import Path

import pytest

from doccheck.pipeline.planning._plan import (
    MULTIPART_MAX_BYTES,
    UPLOAD_MAX_BYTES,
    PlannedDocument,
    estimate_cost_cents,
    idempotency_key,
    load_plan,
)
from doccheck.sources.manifest import ManifestError

HASH = hashlib.sha256(b"hello").hexdigest()


def test_key_is_pinned() -> None:
    # If this value changes, every rerun after an upgrade would pay twice: bump KEY_PREFIX instead.
    assert idempotency_key("course-101/essay-1", HASH, ["similarity", "ai"]) == (
        "dc1-842cc7a7c8bfa962b0f376b20564add2f4f3fb10af2eeeeabb96577a140fab03"
    )


def test_key_formula_matches_docs() -> None:
    payload = json.dumps(
        {"campaign": "c", "content_sha256": HASH, "products": ["ai", "similarity"]},
        sort_keys=True,
        separators=(",", ":"),
    )
    expected = "dc1-" + hashlib.sha256(payload.encode()).hexdigest()
    assert idempotency_key("c", HASH, ("similarity", "ai")) == expected


@pytest.mark.parametrize("campaign", ["c", "course 101/ü", 'q"uote\\back', "line\u2028sep", "😀", "\x7f\x01"])
@pytest.mark.parametrize("products", [("ai",), ["similarity", "ai", "ai"], ("ai", "similarity"), {"similarity"}])
def test_key_written_from_its_parts_is_the_documented_json(campaign: str, products: Collection[str]) -> None:
    """The key's JSON is written from its parts (issue 49); it must stay byte for byte the
    documented ``json.dumps`` (sorted keys, compact), or every rerun would pay twice. The
    products also come as a one-pass iterator."""
    wanted = list(products)
    payload = json.dumps(
        {"campaign": campaign, "content_sha256": HASH, "products": sorted(set(wanted))},
        sort_keys=True,
        separators=(",", ":"),
    )
    assert idempotency_key(campaign, HASH, iter(wanted)) == "dc1-" + hashlib.sha256(payload.encode()).hexdigest()


def test_key_properties() -> None:
    base = idempotency_key("c", HASH, ["ai"])
    assert base == idempotency_key("c", HASH, ("ai", "ai"))
    assert base != idempotency_key("d", HASH, ["ai"])
    assert base != idempotency_key("c", HASH, ["ai", "similarity"])
    assert base != idempotency_key("c", hashlib.sha256(b"other").hexdigest(), ["ai"])
    assert len(base) == 4 + 64
    with pytest.raises(ValueError):
        idempotency_key("", HASH, ["ai"])


def test_cost_rule() -> None:
    assert estimate_cost_cents(0, ["ai"]) == 1
    assert estimate_cost_cents(100, ["ai"]) == 1
    assert estimate_cost_cents(101, ["ai"]) == 2
    assert estimate_cost_cents(250, ["ai", "similarity"]) == 3 + 6
    assert estimate_cost_cents(99, ["similarity"]) == 2


def test_the_cost_rule_and_the_sizes_are_the_domain_modules() -> None:
    from doccheck import domain

    assert estimate_cost_cents is domain.estimate_cost_cents
    assert MULTIPART_MAX_BYTES == domain.MULTIPART_MAX_BYTES and UPLOAD_MAX_BYTES == domain.UPLOAD_MAX_BYTES


def _sparse(path: Path, size: int) -> None:
    with open(path, "wb") as f:
        f.truncate(size)


def test_modes_by_size_and_plan_helpers(tmp_path: Path) -> None:
    (tmp_path / "small.txt").write_text("word " * 250, encoding="utf-8")
    (tmp_path / "edge.txt").write_bytes(b"w" * MULTIPART_MAX_BYTES)  # exactly 4 MiB, one (long) word
    _sparse(tmp_path / "over.pdf", MULTIPART_MAX_BYTES + 1)
    _sparse(tmp_path / "max.pdf", UPLOAD_MAX_BYTES)
    _sparse(tmp_path / "toobig.pdf", UPLOAD_MAX_BYTES + 1)
    (tmp_path / "m.csv").write_text(
        "document_id,path,text,products,section\n"
        "t,,some inline text,ai;similarity,A\n"
        "s,small.txt,,,B\n"
        "e,edge.txt,,,B\n"
        "o,over.pdf,,,C\n"
        "x,max.pdf,,,C\n"
        "big,toobig.pdf,,,C\n",
        encoding="utf-8",
    )
    plan = load_plan(tmp_path / "m.csv", metadata_columns="section")
    assert plan.campaign == "m"
    modes = {d.document_id: d.mode for d in plan.documents}
    assert modes == {"t": "text", "s": "multipart", "e": "multipart", "o": "upload", "x": "upload"}
    assert plan.counts_by_mode() == {"text": 1, "multipart": 2, "upload": 2, "rejected": 1}
    assert plan.rejections[0].code == "file_too_large"
    docs = {d.document_id: d for d in plan.documents}
    assert all(isinstance(d, PlannedDocument) for d in plan.documents)
    assert docs["t"].estimated_cost_cents == 3  # 3 words → billed 100 → 1 + 2
    assert docs["s"].words == 250 and docs["s"].estimated_cost_cents == 3
    assert docs["e"].words == 1
    # Unknown words (large pdf): over-estimated from the size, 1 word per 6 bytes.
    assert docs["o"].words is None
    assert docs["o"].estimated_cost_cents == estimate_cost_cents(-(-(MULTIPART_MAX_BYTES + 1) // 6), ["ai"])
    assert plan.total_words() == 3 + 250 + 1
    assert plan.unknown_word_documents() == 2
    assert plan.estimated_cost_cents() == sum(d.estimated_cost_cents for d in plan.documents)
    assert plan.metadata_by_document()["o"] == {"document_id": "o", "section": "C"}
    assert docs["t"].idempotency_key == idempotency_key("m", docs["t"].content_hash, ["ai", "similarity"])


def test_same_content_same_key_across_manifests_and_names(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "x.txt").write_text("identical essay text", encoding="utf-8")
    (tmp_path / "b" / "y.txt").write_text("identical essay text", encoding="utf-8")
    (tmp_path / "a" / "week1.csv").write_text("document_id,path,name\n1,x.txt,first\n", encoding="utf-8")
    (tmp_path / "b" / "other.csv").write_text("document_id,path,name\nzz,y.txt,second\n", encoding="utf-8")
    first = load_plan(tmp_path / "a" / "week1.csv", campaign="course")
    second = load_plan(tmp_path / "b" / "other.csv", campaign="course")
    assert first.documents[0].idempotency_key == second.documents[0].idempotency_key
    # Text with the same bytes as a file yields the same key too (the service hashes bytes).
    (tmp_path / "a" / "t.csv").write_text("document_id,text\n1,identical essay text\n", encoding="utf-8")
    assert load_plan(tmp_path / "a" / "t.csv", campaign="course").documents[0].idempotency_key == (
        first.documents[0].idempotency_key
    )
    # Default campaign is the manifest's stem, so another manifest name is another namespace.
    assert load_plan(tmp_path / "a" / "week1.csv").documents[0].idempotency_key != first.documents[0].idempotency_key


def test_load_plan_config_errors(tmp_path: Path) -> None:
    (tmp_path / "m.csv").write_text("document_id,text\n1,words\n", encoding="utf-8")
    with pytest.raises(ManifestError, match="products"):
        load_plan(tmp_path / "m.csv", products="ai,bogus")
    with pytest.raises(ManifestError, match="campaign"):
        load_plan(tmp_path / "m.csv", campaign="  ")
    plan = load_plan(tmp_path / "m.csv", products="similarity, ai")
    assert plan.documents[0].products == ("ai", "similarity")
    assert load_plan(tmp_path / "m.csv", products=["similarity"]).documents[0].products == ("similarity",)
