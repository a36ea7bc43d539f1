"""Hostile documents sent to the emulator over HTTP: 422 with the reason, nothing created or
charged, the server responsive throughout, and SIGTERM not held up by a running extraction."""

from __future__ import annotations

import signal
import threading
import time

import httpx
import pytest

from tests.fixtures.emulator import EmulatorHandle, start_emulator, stop_emulator
from tests.hostile_documents import docx_bomb, docx_package, nested_tables, para, pdf_shared_stream, pdf_slow_page

pytestmark = pytest.mark.integration

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


@pytest.fixture(scope="module")
def hostile() -> dict[str, tuple[bytes, str, str]]:
    """name → (bytes, content type, the reason the emulator must give)."""
    return {
        "bomb.docx": (docx_bomb(200 * 1024 * 1024), DOCX, "document.xml inflates past 50 MiB"),
        "shared.pdf": (
            pdf_shared_stream(40, 8 * 1024 * 1024),
            "application/pdf",
            "page content passes 32 MiB at page 5",
        ),
        "deep.docx": (docx_package(nested_tables(200)), DOCX, "document.xml is nested over 256 levels deep"),
    }


def _assert_refused(response: httpx.Response, reason: str) -> None:
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_input" and reason in error["message"], error


def test_multipart_hostile_files_are_422_and_cost_nothing(
    emulator: EmulatorHandle, emulator_account: str, hostile: dict[str, tuple[bytes, str, str]]
) -> None:
    slowest_health = 0.0
    results: dict[str, httpx.Response] = {}

    def send(name: str) -> None:
        data, ctype, _ = hostile[name]
        with emulator.client(emulator_account) as c:
            results[name] = c.post("/checks", files={"file": (name, data, ctype)}, data={"products": "similarity"})

    threads = [threading.Thread(target=send, args=(name,)) for name in hostile]
    for t in threads:
        t.start()
    with httpx.Client(trust_env=False, timeout=5) as probe:
        while any(t.is_alive() for t in threads):
            started = time.monotonic()
            assert probe.get(f"{emulator.root_url}/_emulator/health").status_code == 200
            slowest_health = max(slowest_health, time.monotonic() - started)
            time.sleep(0.05)  # pacing the probe, not waiting for an outcome
    for t in threads:
        t.join()
    for name, (_, _, reason) in hostile.items():
        _assert_refused(results[name], reason)
    state = emulator.account_state(emulator_account)
    assert state["checks"] == 0 and state["charged_cents"] == 0
    assert slowest_health < 2.0  # the event loop never waited for an extraction
    with emulator.client(emulator_account) as c:  # and a good document right after is billed normally
        ok = c.post(
            "/checks", files={"file": ("fine.docx", docx_package(para("Seven honest words in this essay.")), DOCX)}
        )
    assert ok.status_code == 201 and ok.json()["words"] == 6


def test_uploaded_hostile_file_is_422_and_costs_nothing(
    emulator: EmulatorHandle, emulator_account: str, hostile: dict[str, tuple[bytes, str, str]]
) -> None:
    data, ctype, reason = hostile["shared.pdf"]
    with emulator.client(emulator_account) as c:
        up = c.post("/uploads", json={"filename": "shared.pdf", "size_bytes": len(data)}).json()
        assert (
            httpx.put(up["upload_url"], content=data, headers={"Content-Type": ctype}, trust_env=False).status_code
            == 200
        )
        _assert_refused(c.post("/checks", json={"upload_id": up["upload_id"]}), reason)
    state = emulator.account_state(emulator_account)
    assert state["checks"] == 0 and state["charged_cents"] == 0


def test_sigterm_is_not_held_up_by_a_running_extraction() -> None:
    """A PDF within the structural limits but slow to read (one page drawing a 1 MB form 2,000
    times) is in a worker when SIGTERM comes: the emulator exits at once, not when the 20 s limit ends it."""
    slow = pdf_slow_page()
    handle = start_emulator(api_key="sk_test_sigterm")
    answer: list[object] = []

    def send() -> None:
        try:
            with handle.client() as c:
                answer.append(c.post("/checks", files={"file": ("slow.pdf", slow, "application/pdf")}).status_code)
        except httpx.HTTPError as exc:
            answer.append(type(exc).__name__)

    thread = threading.Thread(target=send)
    try:
        thread.start()
        time.sleep(2.0)  # the request reaches the worker; a real process, no emulator clock applies
        assert thread.is_alive(), answer
        started = time.monotonic()
        handle.process.send_signal(signal.SIGTERM)
        code = handle.process.wait(timeout=15)
        elapsed = time.monotonic() - started
        thread.join(timeout=15)
    finally:
        stop_emulator(handle)
    assert code == 0, handle.log()
    # The 20 s wall limit would end the read 18 s after the signal; well before that is "at
    # once" (a loaded machine took 8 s to stop the process, so no tighter figure).
    assert elapsed < 14, elapsed
    assert answer == [503], answer  # the in-flight request is told to retry, not that the file is bad


def test_slow_document_hits_the_wall_limit_and_stops_burning_cpu(
    emulator: EmulatorHandle, emulator_account: str
) -> None:
    """The issue's emulator case: a file under every size limit but slow to read. It is answered
    422 at the 20 s wall limit, charges nothing, and no process keeps working on it afterwards."""
    import psutil

    slow = pdf_slow_page()
    started = time.monotonic()
    with emulator.client(emulator_account) as c:
        response = c.post("/checks", files={"file": ("slow.pdf", slow, "application/pdf")})
    assert time.monotonic() - started < 40
    # Under load the CPU limit may trip first; either way a bounded 422.
    assert response.status_code == 422, response.text
    message = response.json()["error"]["message"]
    assert "extraction took over 20 s" in message or "extraction used over 20 s of CPU" in message, message
    state = emulator.account_state(emulator_account)
    assert state["checks"] == 0 and state["charged_cents"] == 0
    workers = [p for p in psutil.Process(emulator.process.pid).children(recursive=True)
               if "doccheck.extract.worker" in " ".join(p.cmdline())]  # fmt: skip
    busy = sum(p.cpu_percent(interval=0.5) for p in workers)
    assert busy < 50, busy  # the worker that read slow.pdf was killed, the others idle
