"""A store's files read a few chunks ahead of the rows (issue 48): a row waits for its own file's
chunk only, the reader stays within its bound while no row waits, and neither side waits for ever."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping

import pytest

from doccheck.extract._read_ahead import ReadAhead


class Reader:
    """Records the chunks read."""

    def __init__(self) -> None:
        self.chunks: list[list[int]] = []
        self.read = threading.Event()

    def __call__(self, batch: Mapping[int, str]) -> None:
        self.chunks.append(list(batch))
        self.read.set()


def test_a_row_waits_for_its_own_chunk_and_the_reader_stays_within_its_bound() -> None:
    reader = Reader()
    ahead = ReadAhead(((i, f"f{i}") for i in range(100)), reader, chunk=10, chunks_ahead=2).start()
    try:
        ahead.wait_for(0)  # the first chunk read
        assert reader.chunks[0] == list(range(10))
        threading.Event().wait(0.3)  # the reader's time to run ahead: two chunks' room, no further
        assert len(reader.chunks) <= 3
        ahead.wait_for(35)  # a later file: the reader goes on until its chunk is read
        assert [35 in c for c in reader.chunks].count(True) == 1
    finally:
        ahead.stop()
    assert ahead.error is None


def test_a_file_the_reader_never_reads_does_not_hold_its_row_for_ever() -> None:
    reader = Reader()
    ahead = ReadAhead(((i, "") for i in range(0, 50, 2)), reader, chunk=5, chunks_ahead=1).start()
    try:
        ahead.wait_for(7)  # odd: never listed; returns once the reader has read everything
        assert sum(len(c) for c in reader.chunks) == 25
        ahead.wait_for(2)  # an earlier one, forgotten: the reader has ended
    finally:
        ahead.stop()


def test_stopping_a_reader_that_waits_for_room_ends_it() -> None:
    reader = Reader()
    ahead = ReadAhead(((i, "") for i in range(1000)), reader, chunk=10, chunks_ahead=1).start()
    reader.read.wait(5)
    ahead.stop()  # it was waiting for the rows to make room
    assert len(reader.chunks) == 1


def test_an_error_of_the_reader_is_kept_and_the_rows_go_on() -> None:
    def files() -> Iterator[tuple[int, str]]:
        yield 1, "a"
        raise OSError("the manifest could not be read further")

    ahead = ReadAhead(files(), lambda batch: None, chunk=10).start()
    ahead.wait_for(5)  # the reader ended: the row reads its own file
    ahead.stop()
    assert isinstance(ahead.error, OSError)


def test_a_chunk_that_fails_is_marked_read_so_its_rows_read_their_own() -> None:
    def fail(batch: Mapping[int, str]) -> None:
        raise RuntimeError("the store is down")

    ahead = ReadAhead(((i, "") for i in range(3)), fail, chunk=10).start()
    ahead.wait_for(1)
    ahead.stop()
    assert isinstance(ahead.error, RuntimeError)
    with pytest.raises(RuntimeError):
        raise ahead.error
