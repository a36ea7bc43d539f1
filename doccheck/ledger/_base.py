"""What the ledger's modules share: the engine and one short transaction at a time
(:class:`Database`, which :class:`~doccheck.ledger._facade.Ledger` is), the facade's methods that
the grouped writes fall back to (:class:`LedgerLike`), and the JSON/time helpers used when storing
service answers.

The ledger's functions take the session (or, for Core statements, the connection) first and
never open a transaction themselves: the facade's methods do, one short transaction each.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError
from sqlmodel import Session, SQLModel

from doccheck.ledger._engine import create_ledger_engine
from doccheck.ledger._tables import LEDGER_TABLES, SubmissionRow

if TYPE_CHECKING:
    from doccheck.client import Check

#: A check as the service answered it (the client's model), or the same as a mapping (tools, tests).
CheckLike: TypeAlias = "Check | Mapping[str, Any]"


class ReadLike(Protocol):
    """What the ledger keeps of how a file was read (sources' ``ManifestDocument``, planning's
    ``PlannedDocument``): the pipeline is above the ledger, so the ledger names the fields it
    reads, not the class."""

    @property
    def document_id(self) -> str: ...

    @property
    def content_hash(self) -> str | None: ...

    @property
    def read_as(self) -> str | None: ...

    @property
    def named_as(self) -> str: ...


class PlannedLike(ReadLike, Protocol):
    """What the ledger reads of planning's ``PlannedDocument``; its other columns (row number,
    name, mode, size, words, estimated cost, metadata) are read when present."""

    @property
    def products(self) -> Sequence[str]: ...

    @property
    def idempotency_key(self) -> str: ...


class LedgerLike(Protocol):
    """The :class:`~doccheck.ledger._facade.Ledger` as the grouped writes (:mod:`~doccheck.ledger._bulk`)
    use it: its engine, and the one-by-one methods for what a grouped transaction leaves. Named here,
    below both, because the facade sits on top of the modules it calls and is imported by none."""

    @property
    def engine(self) -> Engine: ...

    def claim(self, key: str, owner: str, lease_seconds: float = ...) -> bool: ...

    def submission_for_key(self, idempotency_key: str) -> SubmissionRow | None: ...

    def submissions_for_keys(self, keys: Iterable[str]) -> dict[str, SubmissionRow]: ...

    def mark_submitted(
        self, idempotency_key: str, check: CheckLike, *, mode: str | None = ..., upload_id: str | None = ...
    ) -> None: ...

    def release_claim(self, key: str, owner: str, *, settled: bool = ...) -> None: ...


def dump(obj: object) -> dict[str, Any]:
    """A JSON-able dict from a pydantic model (client models) or a mapping."""
    if obj is None:
        return {}
    if hasattr(obj, "model_dump"):
        dumped: dict[str, Any] = obj.model_dump(mode="json", exclude_none=False)
        return dumped
    if isinstance(obj, Mapping):
        loaded: dict[str, Any] = json.loads(json.dumps(dict(obj), default=str))
        return loaded
    raise TypeError(f"cannot store {type(obj).__name__} in the ledger")


def parse_time(value: Any) -> datetime | None:
    """Aware-UTC datetime from an ISO string or datetime (None stays None; naive means UTC)."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        dt = value
    else:
        try:
            dt = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            return None
    if dt.tzinfo is None:
        return dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


class Database:
    """The engine and the transaction helper; created once per database URL."""

    engine: Engine

    def __init__(self, database_url: str) -> None:
        self.database_url = database_url
        self.engine = create_ledger_engine(database_url)
        self._create_schema()

    def _create_schema(self) -> None:
        """Create missing tables, and the indexes a newer release added to existing ones (a
        ledger from before keeps working and gains them); tolerate another process creating
        them at the same moment."""
        for attempt in range(3):
            try:
                SQLModel.metadata.create_all(self.engine, tables=LEDGER_TABLES)
                for table in LEDGER_TABLES:
                    for index in table.indexes:
                        index.create(self.engine, checkfirst=True)
                return
            except (IntegrityError, ProgrammingError, OperationalError):
                if attempt == 2:
                    raise

    @contextmanager
    def session(self) -> Iterator[Session]:
        """One short transaction: committed on success, rolled back on error."""
        with Session(self.engine, expire_on_commit=False) as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise

    def close(self) -> None:
        """Release pooled connections (tests, CLI exit)."""
        self.engine.dispose()
