"""The SQLite engine's transactions: writers take the lock at BEGIN, a read-only connection does not."""

from __future__ import annotations

import threading
from pathlib import Path

from sqlalchemy import text

from doccheck.ledger._engine import READ_ONLY, create_ledger_engine


def test_a_read_only_connection_reads_while_a_writer_holds_the_lock(tmp_path: Path) -> None:
    """A writer's transaction (``BEGIN IMMEDIATE``) is open; a connection marked ``READ_ONLY``
    reads the last committed state at once instead of waiting out the busy timeout."""
    engine = create_ledger_engine(f"sqlite:///{tmp_path / 'l.db'}")
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE t (x INTEGER)"))
        conn.execute(text("INSERT INTO t VALUES (1)"))
    writer = engine.connect()
    writer.begin()
    writer.execute(text("INSERT INTO t VALUES (2)"))  # uncommitted, the write lock held
    seen: list[int] = []

    def read() -> None:
        with engine.connect() as conn:
            conn.execution_options(**{READ_ONLY: True})
            seen.extend(conn.execute(text("SELECT x FROM t")).scalars())

    reader = threading.Thread(target=read)
    reader.start()
    reader.join(timeout=5)
    try:
        assert not reader.is_alive(), "the read waited for the writer"
        assert seen == [1]
    finally:
        writer.rollback()
        writer.close()
        reader.join()
        engine.dispose()
