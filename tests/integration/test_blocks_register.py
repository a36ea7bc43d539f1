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

SLUGS = ("doccheck-credentials", "doccheck-webhook-secret", "doccheck-storage")


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
    assert "Successfully registered 3 blocks" in registered.stdout, registered.stdout

    assert set(SLUGS) <= _slugs_on_server()
    listed = _prefect("block", "type", "ls", api_url=prefect_server.api_url)
    assert listed.returncode == 0 and all(slug in listed.stdout for slug in SLUGS), listed.stdout


def test_a_flow_run_reads_the_storage_block_it_is_named(prefect_server: Any, monkeypatch: Any) -> None:
    """A DocCheckStorage block saved on the server, named by DOCCHECK_STORAGE_BLOCK as a container's job
    variables name it: within the flow run's ``storage_block`` the seam resolves a URL with its options;
    the server hands the options back masked to anyone who does not ask for the secrets."""
    import asyncio
    import uuid

    from prefect.client.orchestration import get_client

    from doccheck.storage import resolve
    from prefect_doccheck import DocCheckStorage
    from prefect_doccheck.tasks import storage_block

    name = f"term-storage-{uuid.uuid4().hex[:8]}"
    secret = f"s3cret-{uuid.uuid4().hex}"
    DocCheckStorage(options={"s3": {"key": "AKIA_INTEGRATION", "secret": secret}}).save(name)
    monkeypatch.delenv("DOCCHECK_STORAGE_OPTIONS", raising=False)
    monkeypatch.setenv("DOCCHECK_STORAGE_BLOCK", name)

    async def in_the_flow() -> dict[str, Any]:
        async with storage_block():
            return dict(resolve("s3://term-data/reports").storage_options)  # type: ignore[union-attr]

    options = asyncio.run(in_the_flow())
    assert (options["key"], options["secret"]) == ("AKIA_INTEGRATION", secret)
    with get_client(sync_client=True) as client:
        document = client.read_block_document_by_name(name, "doccheck-storage", include_secrets=False)
    assert secret not in str(document.data) and "AKIA_INTEGRATION" not in str(document.data)
