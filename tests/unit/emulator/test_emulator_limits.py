"""The emulator's numbers are the interface's: its prices, products and limits read the domain
module, and the manifest's bounds (which the library repeats so that it never imports the
emulator) are the ones the emulator enforces."""

from __future__ import annotations

from doccheck import domain
from doccheck.emulator import _billing as billing
from doccheck.emulator import _inputs as inputs
from doccheck.emulator import _service_limits as limits
from doccheck.emulator import _store as store
from doccheck.sources import manifest


def test_limits_agree_with_the_manifest() -> None:
    assert manifest.JSON_BODY_MAX_BYTES == limits.JSON_BODY_LIMIT
    assert manifest.MULTIPART_MAX_BYTES == limits.MULTIPART_FILE_LIMIT
    assert manifest.MAX_FILE_BYTES == limits.UPLOAD_LIMIT
    assert manifest.MAX_NAME_CHARS == inputs.MAX_NAME_LENGTH
    assert manifest.MAX_METADATA_CHARS == inputs.MAX_METADATA_BYTES


def test_prices_products_and_limits_read_the_domain_module() -> None:
    assert billing.CENTS_PER_100_WORDS is domain.CENTS_PER_100_WORDS
    assert set(store.PRODUCTS) == set(domain.PRODUCTS)
    assert limits.UPLOAD_LIMIT == domain.UPLOAD_MAX_BYTES
    assert limits.MULTIPART_FILE_LIMIT == domain.MULTIPART_MAX_BYTES
    assert billing.price(101, ["ai", "similarity"]) == {
        "ai_cents": 2, "similarity_cents": 4, "total_cents": 6, "billed_words": 101,
    }  # fmt: skip
