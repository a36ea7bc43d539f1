"""Pure parts of the emulator: price rule, similarity, AI heuristic, clock, scheduler, URLs."""

from __future__ import annotations

import asyncio
import re
from collections import deque

import pytest

from doccheck.emulator._ai_heuristic import label_for, score_text
from doccheck.emulator._api_errors import ApiError
from doccheck.emulator._billing import price, product_cents
from doccheck.emulator._clock import VirtualClock, iso
from doccheck.emulator._faults import Faults, FaultSettings
from doccheck.emulator._reference import reference_index, reference_text
from doccheck.emulator._scheduler import Scheduler
from doccheck.emulator._similarity import ShingleIndex, SourceInfo, compare
from doccheck.emulator._webhook_urls import WebhookUrlError, is_public_address, vet_url
from doccheck.extract import words_of


@pytest.mark.parametrize(
    ("words", "products", "expected"),
    [
        (0, ["ai"], (1, 0, 1, 100)),
        (100, ["ai", "similarity"], (1, 2, 3, 100)),
        (101, ["ai", "similarity"], (2, 4, 6, 101)),
        (1000, ["similarity"], (0, 20, 20, 1000)),
    ],
)
def test_price_rule(words: int, products: list[str], expected: tuple[int, int, int, int]) -> None:
    cost = price(words, products)
    assert (cost["ai_cents"], cost["similarity_cents"], cost["total_cents"], cost["billed_words"]) == expected
    assert product_cents(cost, "similarity") == expected[1]


def test_similarity_counts_matched_words_per_source() -> None:
    index = ShingleIndex()
    a = "the cat sat on the mat and looked out of the window at the rain"
    index.add(SourceInfo("s1", "first", None, "submission", 1), words_of(a))
    index.add(SourceInfo("s3", "later", None, "submission", 3), words_of(a))
    sub = words_of("yesterday the cat sat on the mat and slept")  # 9 words, 'the cat sat on the mat and' = 7
    result = compare(sub, [index], exclude="s2", before_seq=2)
    assert result["matched_words"] == 7 and result["score"] == round(700 / 9, 1)
    assert [s["source_id"] for s in result["sources"]] == ["s1"]  # s3 is later, not compared
    assert result["sources"][0] == {"source_id": "s1", "title": "first", "url": None, "kind": "submission",
                                    "matched_words": 7, "percent": round(700 / 9, 1)}  # fmt: skip
    assert compare(["too", "short"], [index], exclude="x", before_seq=9) == {
        "score": 0.0,
        "matched_words": 0,
        "sources": [],
    }


def test_reference_corpus_is_bundled_and_matches_itself() -> None:
    index = reference_index()
    assert len(index.sources) >= 5 and all(s.kind == "reference" and s.url for s in index.sources.values())
    text = reference_text("ref-river-mill")
    assert text
    result = compare(words_of(text), [index], exclude="", before_seq=0)
    assert result["score"] == 100.0 and result["sources"][0]["source_id"] == "ref-river-mill"
    assert reference_text("ref-nope") is None


def test_ai_heuristic_is_deterministic_bounded_and_directional() -> None:
    machine = (
        "Furthermore, it is important to note that technology plays a crucial role in society. "
        "Moreover, digital tools enhance various aspects of modern education significantly. "
        "Additionally, robust frameworks foster comprehensive and seamless learning experiences. "
        "In conclusion, leveraging innovation is essential for navigating the evolving landscape."
    )
    person = (
        "I missed the bus again! Honestly, I don't know why I bother. My sister says I should just walk, "
        "but it's three miles and it was raining. Who walks three miles in the rain? Not me. "
        "Anyway, I got there late."
    )
    m, p = score_text(machine), score_text(person)
    assert score_text(machine) == m
    assert 0.0 <= p.score < m.score <= 1.0
    assert m.label == "ai" and p.label == "human"
    assert label_for(0.39) == "human" and label_for(0.4) == "mixed" and label_for(0.7) == "ai"
    assert 0.0 <= score_text("").score <= 1.0


def test_virtual_clock_and_iso() -> None:
    clock = VirtualClock()
    before = clock.now()
    clock.advance(3600)
    assert clock.now() - before >= 3600 and clock.offset == 3600
    with pytest.raises(ValueError):
        clock.advance(-1)
    assert iso(0) == "1970-01-01T00:00:00.000Z"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", iso(1_700_000_000.1234))


def test_scheduler_pops_due_jobs_in_order() -> None:
    s, ran = Scheduler(), []
    s.at(5, lambda: ran.append("b"))
    s.at(1, lambda: ran.append("a"))
    s.at(9, lambda: ran.append("c"))
    for job in s.pop_due(6):
        job.run()
    assert ran == ["a", "b"] and len(s) == 1


def test_faults_seeded_partial_and_rate_limited() -> None:
    f1, f2 = Faults(FaultSettings(error_rate=0.5), seed=3), Faults(FaultSettings(error_rate=0.5), seed=3)
    assert [f1.roll(0.5) for _ in range(20)] == [f2.roll(0.5) for _ in range(20)]
    f1.update({"latency_ms": 5})
    assert f1.settings.error_rate == 0.5 and f1.settings.latency_ms == 5
    assert f1.reset().latency_ms == 0
    f1.update({"rate_limit_per_s": 2})
    recent: deque[float] = deque()
    f1.check_rate_limit(recent)
    f1.check_rate_limit(recent)
    with pytest.raises(ApiError) as info:
        f1.check_rate_limit(recent)
    assert info.value.status == 429 and int(info.value.headers["Retry-After"]) >= 1


@pytest.mark.parametrize(
    ("address", "public"),
    [("8.8.8.8", True), ("127.0.0.1", False), ("10.0.0.1", False), ("169.254.169.254", False), ("::1", False),
     ("::ffff:10.0.0.1", False), ("224.0.0.1", False), ("2606:4700::1111", True), ("0.0.0.0", False)],
)  # fmt: skip
def test_public_addresses(address: str, public: bool) -> None:
    assert is_public_address(address) is public


@pytest.mark.parametrize(
    ("url", "allow_private", "ok"),
    [
        ("https://93.184.216.34/hook", False, True),
        ("http://93.184.216.34/hook", False, False),
        ("http://93.184.216.34/hook", True, False),
        ("https://127.0.0.1/hook", False, False),
        ("https://localhost/hook", False, False),
        ("http://127.0.0.1:8000/hook", True, True),
        ("http://localhost:8000/hook", True, True),
        ("https://[::1]/hook", True, True),
        ("ftp://93.184.216.34/", False, False),
        ("https://user:pw@93.184.216.34/", False, False),
        ("https://example.invalid/", False, False),  # offline: never asks DNS
        ("https://[::1/", False, False),
    ],
)
def test_vet_url(url: str, allow_private: bool, ok: bool) -> None:
    async def run() -> None:
        if ok:
            assert await vet_url(url, allow_private=allow_private, offline=True) == url
        else:
            with pytest.raises(WebhookUrlError):
                await vet_url(url, allow_private=allow_private, offline=True)

    asyncio.run(run())
