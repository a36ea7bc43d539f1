"""Hostile documents stop within their limits, in a worker process that is replaced, with a reason.

Each test generates its file (tests/hostile_documents.py). The structural limits refuse the
issue-13 files in about a second; with those limits lifted, the worker's wall-clock, CPU and
memory limits still stop the same files, which shows the OS-level limits really stop the work.
"""

from __future__ import annotations

import resource
import struct
import threading
import time

import pytest

from doccheck.extract import (
    ExtractionError,
    ExtractionLimitExceeded,
    ExtractionLimits,
    count_words,
    extract_text,
    shutdown_workers,
    worker_pids,
)
from tests.hostile_documents import docx_bomb, docx_package, nested_tables, para, pdf_shared_stream

# Real worker processes (started, killed, replaced): seconds, not the unit suite's milliseconds.
pytestmark = pytest.mark.integration

#: Structural limits out of the way, so that only the OS-level ones can stop the work.
_LIFTED = dict(max_part_bytes=10**11, max_inflated_bytes=10**11, max_compression_ratio=10**9,
               max_text_chars=10**11, max_pdf_content_bytes=10**11)  # fmt: skip


@pytest.fixture(scope="module")
def bomb() -> bytes:
    return docx_bomb(200 * 1024 * 1024)


@pytest.fixture(scope="module")
def shared_pdf() -> bytes:
    return pdf_shared_stream(pages=40, stream_bytes=8 * 1024 * 1024)


def _warm() -> None:
    """Start a worker outside the timed part (a start costs ~0.5 s of imports, once)."""
    assert count_words(extract_text(docx_package(para("warm up")), "w.docx")) == 2


def _timed_rejection(data: bytes, name: str, limits: ExtractionLimits | None = None) -> tuple[str, float]:
    _warm()
    parent_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    with pytest.raises(ExtractionLimitExceeded) as info:
        extract_text(data, name, **({"limits": limits} if limits else {}))
    elapsed = time.monotonic() - started
    # The parent never parsed anything: its peak RSS grew by less than the input's size.
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - parent_rss < 64 * 1024
    return str(info.value), elapsed


def test_docx_bomb_is_refused_fast(bomb: bytes) -> None:
    assert len(bomb) < 1024 * 1024  # small on disk, 200 MB inflated
    message, elapsed = _timed_rejection(bomb, "bomb.docx")
    assert message == "document.xml inflates past 50 MiB"
    assert elapsed < 10


def test_docx_bomb_that_lies_about_its_size_is_still_bounded(bomb: bytes) -> None:
    """A forged small declared size passes the declared check; zipfile then stops inflating at it (bad CRC)."""
    forged = _forge_declared_size(bomb, "word/document.xml", 1000)
    with pytest.raises(ExtractionError, match=r"not a readable .docx file \(document.xml"):
        extract_text(forged, "forged.docx")


def _forge_declared_size(data: bytes, member: str, size: int) -> bytes:
    """Rewrite the central directory's uncompressed size of ``member`` (zip64 extra field or not)."""
    buf = bytearray(data)
    name = member.encode()
    pos = buf.find(b"PK\x01\x02")
    while (
        struct.unpack_from("<H", buf, pos + 28)[0] != len(name) or bytes(buf[pos + 46 : pos + 46 + len(name)]) != name
    ):
        pos = buf.find(b"PK\x01\x02", pos + 4)
        assert pos >= 0, "member not found"
    if struct.unpack_from("<I", buf, pos + 24)[0] == 0xFFFFFFFF:  # zip64: the size is in the extra field
        extra = pos + 46 + len(name)
        assert struct.unpack_from("<H", buf, extra)[0] == 1
        struct.pack_into("<Q", buf, extra + 4, size)
    else:
        struct.pack_into("<I", buf, pos + 24, size)
    return bytes(buf)


def test_docx_bomb_stopped_by_wall_clock_when_structural_limits_are_lifted(bomb: bytes) -> None:
    shutdown_workers()  # one warm worker, whatever earlier tests of the session left in the pool
    _warm()
    before = worker_pids()
    message, elapsed = _timed_rejection(bomb, "bomb.docx", ExtractionLimits(**_LIFTED, wall_seconds=1.5))
    assert message == "extraction took over 1.5 s"
    assert elapsed < 5
    assert not set(before) & set(worker_pids())  # the runaway worker was killed, not reused
    _warm()  # and a fresh one serves the next document


def test_pdf_sharing_one_stream_is_refused_fast(shared_pdf: bytes) -> None:
    assert len(shared_pdf) < 64 * 1024
    message, elapsed = _timed_rejection(shared_pdf, "shared.pdf")
    assert message.startswith("the PDF's page content passes 32 MiB at page 5")
    assert elapsed < 10


def test_pdf_pages_invoking_one_big_form_xobject_are_refused_fast() -> None:
    data = pdf_shared_stream(pages=40, stream_bytes=8 * 1024 * 1024, via_form=True)
    message, elapsed = _timed_rejection(data, "form.pdf")
    assert message.startswith("the PDF's page content passes 32 MiB at page 4")
    assert elapsed < 10


def test_pdf_stopped_by_cpu_limit(shared_pdf: bytes) -> None:
    message, elapsed = _timed_rejection(
        shared_pdf, "s.pdf", ExtractionLimits(**_LIFTED, cpu_seconds=1, wall_seconds=60)
    )
    assert message == "extraction used over 1 s of CPU"
    assert elapsed < 30  # 1 s of CPU; the rest is waiting for a core on a shared machine


def test_pdf_stopped_by_memory_limit() -> None:
    big = pdf_shared_stream(pages=1, stream_bytes=60 * 1024 * 1024)  # 180 KB that decode to 60 MB
    message, _ = _timed_rejection(big, "m.pdf", ExtractionLimits(**_LIFTED, memory_bytes=32 * 1024 * 1024))
    assert "over 32 MiB of memory" in message


def test_page_and_object_counts() -> None:
    small = pdf_shared_stream(pages=12, stream_bytes=1000)
    with pytest.raises(ExtractionLimitExceeded, match="12 pages, over the limit of 10"):
        extract_text(small, "p.pdf", limits=ExtractionLimits(max_pdf_pages=10))
    with pytest.raises(ExtractionLimitExceeded, match="objects, over the limit of 5"):
        extract_text(small, "p.pdf", limits=ExtractionLimits(max_pdf_objects=5))


def test_deeply_nested_tables_are_refused_fast() -> None:
    started = time.monotonic()
    with pytest.raises(ExtractionLimitExceeded, match="document.xml is nested over 256 levels deep"):
        extract_text(docx_package(nested_tables(200)), "deep.docx")
    assert time.monotonic() - started < 5
    with pytest.raises(ExtractionLimitExceeded, match="nested over 40 levels"):
        extract_text(docx_package(nested_tables(20)), "deep.docx", limits=ExtractionLimits(max_xml_depth=40))


def test_one_huge_text_run_is_refused() -> None:
    data = docx_bomb(20 * 1024 * 1024, one_text_node=True)
    with pytest.raises(ExtractionLimitExceeded, match="text run over 10 MB"):
        extract_text(data, "run.docx", limits=ExtractionLimits(max_compression_ratio=10**9))


def test_too_many_zip_members() -> None:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for i in range(30):
            z.writestr(f"junk/{i}.xml", "")
    with pytest.raises(ExtractionLimitExceeded, match="lists 30 parts, over the limit of 20"):
        extract_text(buf.getvalue(), "many.docx", limits=ExtractionLimits(max_zip_members=20))


def test_a_million_zip_entries_are_refused_before_zipfile_reads_them() -> None:
    """The entry count comes from the end record; zipfile would build a ZipInfo for each first."""
    buf = bytearray()
    central = b"PK\x01\x02" + bytes(42) + b"a"  # a minimal central entry, repeated
    count = 1_000_000
    start = len(buf)
    buf += central * count
    buf += b"PK\x05\x06" + bytes(4) + (0xFFFF).to_bytes(2, "little") * 2
    buf += (len(central) * count).to_bytes(4, "little") + start.to_bytes(4, "little") + bytes(2)
    zip64_at = len(buf) - 22
    end = bytes(buf[zip64_at:])
    record = (b"PK\x06\x06" + (44).to_bytes(8, "little") + bytes(4) + bytes(8)
              + count.to_bytes(8, "little") * 2 + (len(central) * count).to_bytes(8, "little")
              + start.to_bytes(8, "little"))  # fmt: skip
    data = bytes(buf[:zip64_at]) + record + end
    started = time.monotonic()
    with pytest.raises(ExtractionLimitExceeded, match="lists 1000000 parts, over the limit of 2000"):
        extract_text(data, "million.docx")
    assert time.monotonic() - started < 5


def test_input_size_limit_checked_before_any_work() -> None:
    with pytest.raises(ExtractionLimitExceeded, match="the file is 2000 bytes, over the 1048 bytes limit"):
        extract_text(b"x" * 2000, "big.txt", limits=ExtractionLimits(max_input_bytes=1048))


def test_shutdown_ends_a_running_extraction_at_once(bomb: bytes) -> None:
    """What the emulator's SIGTERM does: waiting callers are released now, not at their time limit."""
    _warm()
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            extract_text(bomb, "bomb.docx", limits=ExtractionLimits(**_LIFTED, wall_seconds=60))
        except BaseException as exc:  # noqa: BLE001  (the test inspects it)
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    time.sleep(0.5)  # a real process is working; no emulator clock applies here
    started = time.monotonic()
    shutdown_workers()
    thread.join(timeout=10)
    assert not thread.is_alive() and time.monotonic() - started < 5
    assert type(outcome[0]).__name__ == "ExtractionStopped"
    _warm()  # later extractions start new workers


def test_concurrent_documents_share_the_pool() -> None:
    results: list[int] = []

    def one(i: int) -> None:
        results.append(count_words(extract_text(docx_package(para(f"doc number {i}")), f"{i}.docx")))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert results == [3] * 8
    assert len(worker_pids()) <= 2


def test_a_structural_refusal_keeps_the_worker() -> None:
    """Only the OS-level limits cost a new process; a refused bomb does not."""
    _warm()
    shutdown_workers()  # one warm worker, whatever earlier tests of the session left in the pool
    _warm()
    before = worker_pids()
    with pytest.raises(ExtractionLimitExceeded):
        extract_text(docx_package(nested_tables(200)), "deep.docx")
    _warm()
    assert worker_pids() == before


def test_a_worker_that_died_while_idle_is_replaced_without_failing_the_document() -> None:
    import os
    import signal

    _warm()
    for pid in worker_pids():
        os.kill(pid, signal.SIGKILL)
    time.sleep(0.2)  # let the kernel reap them; a real process, no emulator clock applies
    assert count_words(extract_text(docx_package(para("still served")), "s.docx")) == 2
