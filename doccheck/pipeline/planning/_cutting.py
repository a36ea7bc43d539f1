"""Where a recorded manifest is cut: batches of whole rows, and groups of batches a transaction.

Why apart from the recording: what a batch is (a :class:`BatchRef`, safe as a task parameter)
and how rows are gathered into batches and batches into one write are rules of their own, read
by the sender and the shards as well as by :mod:`doccheck.pipeline.planning._batches`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from doccheck.pipeline.planning._plan import PlannedDocument
from doccheck.sources.manifest import Rejection, RowCursor, RowStart

__all__ = ["RECORD_GROUP_DOCUMENTS", "RECORD_GROUP_SECONDS", "BatchRef", "Batcher", "RecordGroup"]

#: Documents written to the ledger in one transaction at least: a group of whole batches, each
#: handed on once the group is committed. Why: a transaction (and, in the overlapped run, the
#: sender's one read of its keys' states) per batch of 100 cost a term of 100,000 rows 1,000 of
#: each; on PostgreSQL ~2 s of the command's CPU and ~4,800 statements more than groups of 500.
RECORD_GROUP_DOCUMENTS = 500
#: ...but a batch waits no longer than this for its group (files that are slow to read): the
#: first batch of a run is written at once, so the first request leaves as soon as it can.
RECORD_GROUP_SECONDS = 0.5


@dataclass(frozen=True)
class BatchRef:
    """One batch of a recorded run: which manifest rows, how many documents, where they start.

    Rows ``first_row``..``last_row`` are numbered as :attr:`Rejection.row_number` and
    ``ManifestDocument.row_number``; the refs of a run cover every valid row exactly once (rows
    rejected at planning lie in some ref too, and are never sent). ``offset``/``line``: the
    byte offset and physical line of ``first_row`` in a CSV or JSONL file (None for Parquet,
    which is read from ``first_row``'s row group). No text: safe as a task parameter.
    """

    number: int  # 1-based
    first_row: int
    last_row: int
    documents: int  # valid documents in it
    offset: int | None
    line: int | None = None
    estimated_cost_cents: int = 0
    #: The manifest's size and modification time when the batch was recorded (``manifest_stamp``):
    #: while they stay, a batch whose keys all have their checks is not read again.
    stamp: str | None = None

    def start(self) -> RowStart:
        """Where a reader starts to read this batch."""
        return RowStart(row=self.first_row, offset=self.offset or 0, line=self.line or 1)

    def to_dict(self) -> dict[str, int | None]:
        """Plain JSON values (what a Prefect parameter or a log line holds)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BatchRef:
        """The inverse of :meth:`to_dict`."""
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


class Batcher:
    """Cuts the row stream into refs of ``size`` documents, only where a row starts a record.

    A new batch opens at a valid document once the current one is full (documents always start
    a record of their own; rows swallowed by a broken CSV quote never do), so rejected rows
    after the last full batch extend it rather than making an empty batch.
    """

    def __init__(self, size: int, stamp: str | None = None) -> None:
        self.size = max(1, int(size))
        self.stamp = stamp
        self.number = 0
        self.first_row: int | None = None
        self.offset: int | None = None
        self.line: int | None = None
        self.documents = 0
        self.cost = 0
        self.last_row = 0

    def add(self, row: int, cursor: RowCursor, planned: PlannedDocument | None) -> BatchRef | None:
        """Count one row; returns the batch this row closed (the row opens the next), if any."""
        closed = None
        if planned is not None and self.documents >= self.size:
            closed = self._close()
        if self.first_row is None:
            self.first_row, self.offset, self.line = row, cursor.offset, cursor.line
        if planned is not None:
            self.documents += 1
            self.cost += planned.estimated_cost_cents
        self.last_row = row
        return closed

    def finish(self) -> BatchRef | None:
        """The last batch (None when no row was valid)."""
        return self._close() if self.documents else None

    def _close(self) -> BatchRef:
        assert self.first_row is not None
        self.number += 1
        ref = BatchRef(
            number=self.number,
            first_row=self.first_row,
            last_row=self.last_row,
            documents=self.documents,
            offset=self.offset,
            line=self.line,
            estimated_cost_cents=self.cost,
            stamp=self.stamp,
        )
        self.first_row = self.offset = self.line = None
        self.documents = self.cost = 0
        return ref


@dataclass
class RecordGroup:
    """Whole batches read and not written yet: their ledger rows and their refs, in order."""

    documents: list[dict[str, Any]] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    reads: list[PlannedDocument] = field(default_factory=list)
    refs: list[BatchRef] = field(default_factory=list)
    #: When its first batch was read (``time.monotonic``), None while empty.
    opened: float | None = None

    def take(self, ref: BatchRef | None, documents: list[dict[str, Any]], rejections: list[Rejection],
             reads: list[PlannedDocument]) -> None:  # fmt: skip
        """Move one batch's rows (the lists are emptied) and its ref into the group."""
        self.documents += documents
        self.rejections += rejections
        self.reads += reads
        documents.clear()
        rejections.clear()
        reads.clear()
        if ref is not None:
            self.refs.append(ref)
        if self.opened is None:
            self.opened = time.monotonic()
