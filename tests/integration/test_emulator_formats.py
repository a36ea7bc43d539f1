"""The formats of issue 41 over HTTP: the emulator (the default service profile) takes .doc, .odt,
.rtf, .pptx and .pages and bills the words doccheck counts; a photo or a locked file is a 422 with
its reason in words that creates and charges nothing."""

from __future__ import annotations

import pytest

from doccheck.extract import content_type_for, count_words, extract_text
from tests import generated_documents as gen
from tests.fixtures.emulator import EmulatorHandle

pytestmark = pytest.mark.integration

ESSAY = ["Rivers carry sediment from the mountains to the sea.", "Deltas form where the current slows down."]


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("essay.odt", gen.odt_paragraphs(ESSAY)),
        ("essay.rtf", gen.rtf("\\par ".join(ESSAY))),
        ("essay.doc", gen.word97("\r".join(ESSAY) + "\r")),
        ("slides.pptx", gen.pptx([[p] for p in ESSAY])),
        ("essay.pages", gen.pages(gen.pdf_text(ESSAY))),
        ("misnamed.docx", gen.rtf("\\par ".join(ESSAY))),
    ],
)
def test_new_formats_are_checked_and_billed_by_their_words(
    emulator: EmulatorHandle, emulator_account: str, name: str, data: bytes
) -> None:
    expected = count_words(extract_text(data, name))
    assert expected == 16
    with emulator.client(emulator_account) as c:
        answer = c.post("/checks", files={"file": (name, data, content_type_for(name) or "")}, data={"products": "ai"})
    assert answer.status_code == 201, answer.text
    assert answer.json()["words"] == expected


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("photo.jpg", gen.png(), "image without machine-readable text (a photo or scan, e.g. handwriting)"),
        ("scan.pdf", gen.pdf_image_only(), "image-only PDF"),
        ("locked.docx", gen.locked_office(), "password-protected Office document"),
    ],
)
def test_the_unreadable_is_refused_with_its_reason_and_costs_nothing(
    emulator: EmulatorHandle, emulator_account: str, name: str, data: bytes, reason: str
) -> None:
    with emulator.client(emulator_account) as c:
        answer = c.post("/checks", files={"file": (name, data, "application/octet-stream")})
    assert answer.status_code in (415, 422), answer.text
    assert reason in answer.json()["error"]["message"]
    state = emulator.account_state(emulator_account)
    assert state["checks"] == 0 and state["charged_cents"] == 0
