"""The shard's submit task: ``submit_batch`` through a client paced by the fleet's rate limit.

Why a task of its own rather than ``submit_documents``: the fleet-wide rate limit has to
sit under every request the client makes (see :mod:`doccheck.pipeline.sending._pacing`), so the
task builds its client with a :class:`~doccheck.pipeline.PacedTransport`. The
rest is ``submit_documents``'s contract: same retries on transient errors only, same
ledger (claims make a retried batch or a rerun shard safe), no key in parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
from prefect import task

from doccheck.client import AsyncDocCheckClient, lanes_for, tls_context
from doccheck.pipeline import DEFAULT_SUBMIT, BatchResult, PacedTransport, SubmitOptions, ledger_for, submit_batch
from prefect_doccheck.tasks._pipeline import TRANSIENT_RETRIES, open_client
from prefect_doccheck.tasks._rate_limit import FleetRateLimit, fleet_pacer
from prefect_doccheck.tasks._service_access import KeySource

__all__ = ["open_paced_client", "submit_shard_batch"]


def open_paced_client(
    base_url: str, api_key_block: KeySource, limit: FleetRateLimit | None, *, concurrency: int = 0
) -> AsyncDocCheckClient:
    """An async client whose service requests wait for the fleet's rate limit (uploads to
    the storage origin are not paced: the service's limit does not count them)."""
    pacer = fleet_pacer(limit) if limit is not None else None
    transport = upload = None
    if pacer is not None:
        transport = PacedTransport(pacer, max_connections=lanes_for(concurrency))
        upload = httpx.AsyncHTTPTransport(verify=tls_context())  # not the paced one
    client: AsyncDocCheckClient = open_client(
        base_url, api_key_block, concurrency=concurrency, transport=transport, upload_transport=upload
    )
    return client


@task(
    name="submit shard batch",
    task_run_name="shard {shard}: submit batch {batch_number}",
    **TRANSIENT_RETRIES,
)
async def submit_shard_batch(
    documents: Sequence[Any],
    *,
    run_id: str,
    shard: int,
    batch_number: int,
    base_url: str,
    database_url: str,
    api_key_block: KeySource = None,
    send: SubmitOptions = DEFAULT_SUBMIT,
    rate_limit: FleetRateLimit | None = None,
) -> BatchResult:
    """Submit one batch of the shard's documents with ``send`` under the fleet's rate limit."""
    ledger = ledger_for(database_url)
    async with open_paced_client(base_url, api_key_block, rate_limit, concurrency=send.concurrency) as client:
        return await submit_batch(client, ledger, run_id, documents, send)
