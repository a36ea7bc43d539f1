"""A throwaway PostgreSQL cluster for benchmarks, started like the tests' ``postgres_url`` fixture.

Why: the marginal-throughput figures compare SQLite with PostgreSQL in the same run, and a
benchmark should not need a server set up by hand. ``initdb`` + ``pg_ctl`` of the
distribution (run as the ``postgres`` user when we are root, since PostgreSQL refuses
root), data and socket in a temporary folder, a free port of 127.0.0.1, trust
authentication, ``fsync=off`` (as in the tests: the benchmark measures the ledger's
statements and round trips, not the disk). Stopped and deleted on exit.
"""

from __future__ import annotations

import contextlib
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.fixtures.postgres import ClusterUnavailable, throwaway_cluster  # noqa: E402


@contextlib.contextmanager
def throwaway_postgres(extra_options: str = "") -> Iterator[str]:
    """Yield the URL of a fresh cluster (``tests.fixtures.postgres.throwaway_cluster``);
    without PostgreSQL installed, exit naming ``--postgres URL``."""
    try:
        cluster = throwaway_cluster(prefix="doccheck-bench-pg-", extra_options=extra_options)
        url = cluster.__enter__()
    except ClusterUnavailable as exc:
        raise SystemExit(f"{exc}, or pass --postgres URL instead") from None
    try:
        yield url
    finally:
        cluster.__exit__(None, None, None)


def fresh_database(server_url: str, name: str | None = None) -> str:
    """A new empty database on ``server_url``; returns its URL."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from doccheck.ledger import normalize_url

    name = name or f"bench_{uuid.uuid4().hex[:10]}"
    url = make_url(normalize_url(server_url))
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return url.set(database=name).render_as_string(hide_password=False)
