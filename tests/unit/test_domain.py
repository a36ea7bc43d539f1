"""The domain's rules (``doccheck.domain``): the one price rule, the states' values, and
that every module that used to carry its own copy now reads this one."""

from __future__ import annotations

import pytest

from doccheck import domain
from doccheck.domain import (
    PRODUCTS,
    Product,
    ProductState,
    RunState,
    SubmissionState,
    estimate_cost_cents,
    product_prices,
)


@pytest.mark.parametrize(
    ("words", "products", "cents"),
    [
        (0, ["ai"], 1),  # the 100-word minimum
        (100, ["ai"], 1),
        (101, ["ai"], 2),  # per STARTED 100 words
        (250, ["ai", "similarity"], 3 + 6),
        (99, ["similarity"], 2),
        (1000, ["similarity", "similarity"], 20),  # a product counts once
    ],
)
def test_price_rule(words: int, products: list[str], cents: int) -> None:
    assert estimate_cost_cents(words, products) == cents


def test_product_prices_name_every_product() -> None:
    assert product_prices(101, ["similarity"]) == {"ai": 0, "similarity": 4}


def test_unknown_product_is_named() -> None:
    with pytest.raises(KeyError, match="plagiarism"):
        estimate_cost_cents(10, ["ai", "plagiarism"])


def test_state_values_are_the_stored_strings() -> None:
    # The ledger and the reports store these strings: the enums must not change them.
    assert [s.value for s in SubmissionState] == [
        "planned", "submitting", "uploading", "submitted", "failed", "rejected", "skipped_budget", "in_doubt",
    ]  # fmt: skip
    assert [s.value for s in ProductState] == ["processing", "completed", "failed"]
    assert [s.value for s in RunState] == ["running", "finished", "failed"]
    assert SubmissionState.SUBMITTED == "submitted" and f"{ProductState.FAILED}" == "failed"
    assert PRODUCTS == ("ai", "similarity") == tuple(Product)


def test_former_copies_read_the_domain_module() -> None:
    """The client's and the manifest's; the planner's and the emulator's are pinned beside their
    other unit tests (``tests/unit/pipeline/test_planning.py``, ``tests/unit/emulator/``)."""
    from doccheck.client import assumptions
    from doccheck.sources import manifest

    assert assumptions.estimate_cost_cents is domain.estimate_cost_cents
    assert assumptions.CENTS_PER_100_WORDS is domain.CENTS_PER_100_WORDS
    assert set(manifest.KNOWN_PRODUCTS) == set(assumptions.PRODUCTS) == set(domain.PRODUCTS)
    assert manifest.MAX_FILE_BYTES == assumptions.UPLOAD_MAX_BYTES == domain.UPLOAD_MAX_BYTES
    assert manifest.MULTIPART_MAX_BYTES == domain.MULTIPART_MAX_BYTES


def test_secrets_accepted_during_and_after_a_rotation() -> None:
    from datetime import UTC, datetime, timedelta

    from doccheck.domain import secrets_accepted_at

    end = datetime(2026, 12, 1, tzinfo=UTC)
    assert secrets_accepted_at("new", "old", end, end - timedelta(microseconds=1)) == ["new", "old"]
    assert secrets_accepted_at("new", "old", end, end) == ["new"]
    assert secrets_accepted_at("new", "old", None, end) == ["new"]  # no end: never accepted
    assert secrets_accepted_at(" new ", "  ", end, end - timedelta(days=1)) == ["new"]


def test_a_file_sent_as_text_has_its_own_key_and_says_so() -> None:
    from doccheck.domain import base_key, sent_as, text_key

    assert text_key("dc1-ab") == "dc1-ab:text" == text_key("dc1-ab:text")
    assert base_key("dc1-ab:text") == "dc1-ab" == base_key("dc1-ab")
    assert (sent_as("dc1-ab:text"), sent_as("dc1-ab"), sent_as(None)) == ("text", "original", None)
