"""Engine creation for SQLite and PostgreSQL, with the settings each needs for a ledger
shared by several processes (the pipeline and the webhook receiver write concurrently).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.pool import ConnectionPoolEntry, StaticPool
from sqlmodel import create_engine

SQLITE_BUSY_TIMEOUT_MS = 30_000


def normalize_url(database_url: str) -> str:
    """Use psycopg 3 for PostgreSQL: plain ``postgresql://`` would ask for psycopg2,
    which is not installed."""
    url = make_url(database_url)
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    return url.render_as_string(hide_password=False)


#: Execution option of a connection that only reads (``conn.execution_options(**{READ_ONLY: True})``
#: before its first statement): on SQLite its transaction begins deferred, see :func:`create_ledger_engine`.
READ_ONLY = "doccheck_read_only"


def create_ledger_engine(database_url: str) -> Engine:
    """An engine tuned for the ledger's access pattern (short transactions, two processes).

    SQLite: WAL (readers never block the writer), a busy timeout (the receiver and the
    pipeline wait for each other instead of failing), ``check_same_thread=False`` (the
    receiver writes from a thread pool), and ``BEGIN IMMEDIATE`` for every transaction so
    that a read-then-write never fails with a busy snapshot error halfway through; a connection
    marked :data:`READ_ONLY` begins deferred instead (it never writes, so never upgrades).
    """
    url = make_url(normalize_url(database_url))
    if url.get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True)
    kwargs: dict[str, Any] = {
        "connect_args": {"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
    }
    in_memory = url.database in (None, "", ":memory:")
    if in_memory:
        kwargs["poolclass"] = StaticPool
    engine = create_engine(url, **kwargs)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: sqlite3.Connection, _record: ConnectionPoolEntry) -> None:
        dbapi_connection.isolation_level = None  # we emit BEGIN ourselves
        cursor = dbapi_connection.cursor()
        if not in_memory:
            cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        # A connection that only reads begins deferred: no write lock, so in WAL mode it never
        # waits for the writer nor makes it wait (a rerun's pre-checks and its recording did).
        read_only = connection.get_execution_options().get(READ_ONLY)
        connection.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")

    return engine


def redact_url(database_url: str) -> str:
    """The URL with its password hidden, for messages and logs."""
    return make_url(normalize_url(database_url)).render_as_string(hide_password=True)
