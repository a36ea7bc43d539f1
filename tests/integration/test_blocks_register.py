"""The block types reach a real Prefect server both ways an integration's users expect:
the ``prefect.collections`` entry point (a server started beside the package registers
them on start) and ``prefect block register -m prefect_doccheck.credentials`` (for a
server that does not have the package installed)."""

from __future__ import annotations

import os
import subprocess
from typing import Any

import pytest

from doccheck.commands import prefect_command

pytestmark = [pytest.mark.integration, pytest.mark.prefect_server]

SLUGS = ("doccheck-credentials", "doccheck-webhook-secret")


def _slugs_on_server() -> set[str]:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return {t.slug for t in client.read_block_types()}


def _prefect(*args: str, api_url: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PREFECT_API_URL": api_url, "COLUMNS": "250"}
    return subprocess.run(prefect_command(*args), env=env, capture_output=True, text=True, timeout=120)


def test_the_server_registers_the_block_types_through_the_entry_point(prefect_server: Any) -> None:
    # the session's server runs from this environment, where the package is installed
    assert set(SLUGS) <= _slugs_on_server()


def test_prefect_block_register_m_registers_them_on_a_server_that_lacks_them(prefect_server: Any) -> None:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        for slug in SLUGS:
            client.delete_block_type(client.read_block_type_by_slug(slug).id)
    assert not set(SLUGS) & _slugs_on_server()

    registered = _prefect("block", "register", "-m", "prefect_doccheck.credentials", api_url=prefect_server.api_url)
    assert registered.returncode == 0, registered.stdout + registered.stderr
    assert "Successfully registered 2 blocks" in registered.stdout, registered.stdout

    assert set(SLUGS) <= _slugs_on_server()
    listed = _prefect("block", "type", "ls", api_url=prefect_server.api_url)
    assert (
        listed.returncode == 0
        and "doccheck-credentials" in listed.stdout
        and "doccheck-webhook-secret" in listed.stdout
    )
