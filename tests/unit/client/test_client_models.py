"""Models keep unknown fields and parse every shape DESIGN.md fixes."""

from __future__ import annotations

from doccheck.client import Check, CheckList, Event, Upload, Webhook, estimate_cost_cents
from tests.factories import CHECK

COMPLETED = dict(
    CHECK,
    status="completed",
    products=["ai", "similarity"],
    completed_at="2026-01-01T00:01:00.123Z",
    ai={"status": "completed", "score": 0.42, "label": "mixed", "model": "stylometry-v0"},
    similarity={
        "status": "completed",
        "score": 37.5,
        "matched_words": 120,
        "sources": [
            {
                "source_id": "s1",
                "title": "T",
                "url": None,
                "kind": "reference",
                "matched_words": 120,
                "percent": 37.5,
                "extra": "x",
            }
        ],
    },
    files={"similarity_pdf": True, "pdf": True, "original": True, "docx": False},
    region="eu",
)


def test_processing_check_parses() -> None:
    c = Check.model_validate(CHECK)
    assert c.status == "processing" and not c.is_terminal and c.completed_at is None
    assert c.cost.total_cents == 1 and c.similarity is None and c.ai is not None


def test_completed_check_keeps_unknown_fields() -> None:
    c = Check.model_validate(COMPLETED)
    assert c.is_terminal and c.ai and c.ai.label == "mixed" and c.ai.model_extra == {"model": "stylometry-v0"}
    assert (
        c.similarity
        and c.similarity.sources[0].kind == "reference"
        and c.similarity.sources[0].model_extra == {"extra": "x"}
    )
    assert c.files.pdf and c.files.model_extra == {"docx": False}
    assert c.model_extra == {"region": "eu"}
    dumped = c.model_dump(mode="json")
    assert dumped["region"] == "eu" and "replayed" not in dumped


def test_unknown_status_values_accepted() -> None:
    c = Check.model_validate(dict(CHECK, status="queued", ai={"status": "retrying"}))
    assert c.status == "queued" and not c.is_terminal


def test_failed_product_error() -> None:
    c = Check.model_validate(
        dict(CHECK, status="failed", error=None, ai={"status": "failed", "error": {"code": "x", "message": "m"}})
    )
    assert c.ai and c.ai.error and c.ai.error.code == "x"


def test_list_upload_webhook_event() -> None:
    lst = CheckList.model_validate({"object": "list", "data": [CHECK], "has_more": True, "url": "/checks"})
    assert lst.has_more and lst.data[0].id == CHECK["id"] and lst.model_extra == {"url": "/checks"}
    up = Upload.model_validate(
        {
            "object": "upload",
            "upload_id": "u",
            "upload_url": "http://s/u",
            "expires_in": 600,
            "content_type": "application/pdf",
            "instructions": "PUT",
            "max_bytes": 1,
        }
    )
    assert up.content_type == "application/pdf" and up.model_extra == {"max_bytes": 1}
    wh = Webhook.model_validate({"object": "webhook", "url": "https://x", "secret": "whsec_1"})
    assert "whsec_1" not in repr(wh) and "whsec_1" not in str(wh.model_dump())
    ev = Event.model_validate(
        {"id": "e", "type": "check.completed", "product": "similarity", "check": {"id": "c"}, "error": None}
    )
    assert ev.check.id == "c"


def test_estimate_cost_cents_price_rule() -> None:
    assert estimate_cost_cents(3, ["ai"]) == 1  # 100-word minimum
    assert estimate_cost_cents(100, ["ai"]) == 1
    assert estimate_cost_cents(101, ["ai"]) == 2
    assert estimate_cost_cents(250, ["similarity"]) == 6
    assert estimate_cost_cents(250, ["ai", "similarity", "ai"]) == 9
