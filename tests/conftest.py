"""Session-wide test set-up.

Fixtures live in ``tests/fixtures/`` (one module per running service) and are shared by
unit and integration tests. Every service the integration tests need (emulator,
receiver, Prefect server, PostgreSQL, S3) is started once per session by those fixtures.
"""

from __future__ import annotations

import os
import tempfile

import pytest

# Prefect must never write into the developer's ~/.prefect during tests, and its
# telemetry causes "database is locked" noise at exit.
# Each pytest-xdist worker gets its own (they inherit the controller's environment).
if "PYTEST_XDIST_WORKER" in os.environ or "PREFECT_HOME" not in os.environ:
    os.environ["PREFECT_HOME"] = tempfile.mkdtemp(prefix="doccheck-prefect-home-")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

pytest_plugins = [
    "tests.fixtures.emulator",
    "tests.fixtures.receiver",
    "tests.fixtures.postgres",
    "tests.fixtures.prefect_server",
    "tests.fixtures.s3",
    "tests.fixtures.service_profile",
    "tests.fixtures.memory_bucket",
    "tests.fixtures.memory_store",
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``slow`` (a minute or more; ``make test`` lists the slowest) run first, those
    that set themselves a longer ``timeout`` than the suite's (the shard tests) first of all.

    ``make test`` spreads the integration suite over several workers by file (``--dist loadfile``:
    a module's fixtures start once, in one worker), handing the files out in the order their first
    test has here (``--no-loadscope-reorder``; xdist's default hands out the files with the most
    tests first): a file with a long test is started first, beside the other ones, instead of one
    of them being the last left running while the other workers idle. (``worksteal`` gave the first
    third of this order, every long test, to one worker, which ran them one after the other: the
    run's critical path.) The order is the same in every worker, as xdist requires; it is otherwise
    the collection order.
    """
    items.sort(key=lambda item: (item.get_closest_marker("slow") is None, -_own_timeout(item)))


def _own_timeout(item: pytest.Item) -> float:
    """The seconds of the test's own ``pytest.mark.timeout``, 0 without one."""
    marker = item.get_closest_marker("timeout")
    return float(marker.args[0]) if marker is not None and marker.args else 0.0
