"""Session-wide test set-up.

Fixtures live in ``tests/fixtures/`` (one module per running service) and are shared by
unit and integration tests. Every service the integration tests need (emulator,
receiver, Prefect server, PostgreSQL) is started once per session by those fixtures.
"""

from __future__ import annotations

import os
import tempfile

# Prefect must never write into the developer's ~/.prefect during tests, and its
# telemetry causes "database is locked" noise at exit.
os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="doccheck-prefect-home-"))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

pytest_plugins = [
    "tests.fixtures.emulator",
    "tests.fixtures.receiver",
    "tests.fixtures.postgres",
    "tests.fixtures.prefect_server",
]
