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
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from doccheck.commands.services import free_port

PG_USER = "postgres"


def find_pg_bin() -> Path | None:
    """The newest ``/usr/lib/postgresql/*/bin`` with initdb and pg_ctl, or PATH's."""
    env = os.environ.get("DOCCHECK_PG_BIN")
    candidates = [Path(env)] if env else []
    candidates += sorted(
        (Path(p) for p in glob.glob("/usr/lib/postgresql/*/bin")),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
        reverse=True,
    )
    which = shutil.which("initdb")
    if which:
        candidates.append(Path(which).parent)
    return next((c for c in candidates if (c / "initdb").exists() and (c / "pg_ctl").exists()), None)


def _as_postgres(args: list[str]) -> subprocess.CompletedProcess[str]:
    if os.geteuid() == 0:
        args = ["runuser", "-u", PG_USER, "--", *args]
    return subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[str]:
    """Yield ``postgresql+psycopg://postgres@127.0.0.1:<port>/postgres`` of a fresh cluster."""
    bin_dir = find_pg_bin()
    if bin_dir is None:
        raise SystemExit("PostgreSQL is not installed (no initdb/pg_ctl): pass --postgres URL instead")
    root = Path(tempfile.mkdtemp(prefix="doccheck-bench-pg-"))
    data, sock = root / "data", root / "sock"
    data.mkdir()
    sock.mkdir()
    if os.geteuid() == 0:
        pw = pwd.getpwnam(PG_USER)
        for p in (root, data, sock):
            os.chown(p, pw.pw_uid, pw.pw_gid)
    port = free_port()
    try:
        init = _as_postgres([str(bin_dir / "initdb"), "-D", str(data), "-U", PG_USER, "--auth=trust",
                             "--no-sync", "-E", "UTF8"])  # fmt: skip
        if init.returncode != 0:
            raise SystemExit(f"initdb failed:\n{init.stdout}\n{init.stderr}")
        options = f"-k {sock} -p {port} -h 127.0.0.1 -c fsync=off -c full_page_writes=off"
        started = _as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(root / "server.log"),
                                "-o", options, "-w", "-t", "60", "start"])  # fmt: skip
        if started.returncode != 0:
            raise SystemExit(f"pg_ctl start failed:\n{started.stdout}\n{started.stderr}")
        url = f"postgresql+psycopg://{PG_USER}@127.0.0.1:{port}/postgres"
        _wait_ready(url)
        yield url
    finally:
        if (data / "postmaster.pid").exists():
            _as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"])
        shutil.rmtree(root, ignore_errors=True)


def _wait_ready(url: str, timeout: float = 30.0) -> None:
    import psycopg

    dsn = url.replace("postgresql+psycopg://", "postgresql://")
    deadline = time.monotonic() + timeout
    while True:
        try:
            with psycopg.connect(dsn, connect_timeout=2) as conn:
                conn.execute("select 1")
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def fresh_database(server_url: str, name: str | None = None) -> str:
    """A new empty database on ``server_url``; returns its URL."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from doccheck.ledger.engine import normalize_url

    name = name or f"bench_{uuid.uuid4().hex[:10]}"
    url = make_url(normalize_url(server_url))
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return url.set(database=name).render_as_string(hide_password=False)
