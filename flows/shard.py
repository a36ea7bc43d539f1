"""The ``bulk-check-shard`` flow: one shard of a recorded run, submitted from a worker.

The parent (``bulk_check(..., shards=N)``, see :mod:`prefect_doccheck.flows._fan_out`)
records the run and every document in the ledger, then starts N runs of this flow's
deployment on a work pool. Each child streams the manifest itself
(:func:`doccheck.pipeline.iter_shard`: texts never travel through the Prefect API,
and memory stays one batch), keeps the documents whose Idempotency-Key hashes to its
shard (:mod:`doccheck.pipeline.planning._shards`) and submits them in batches. A file the
parent's planning read is known from the ledger by its listing identity: a shard reads a
document's bytes only to send it. Claims in the
shared ledger make a retried or re-run shard safe: a key already submitted is skipped,
a key whose request was in flight when a worker died is reconciled, never sent twice.

Parameters carry names and URLs only: ``credentials`` is the *name* of a
``DocCheckCredentials`` block, ``api_key_block`` of a Secret block; without either the
worker's ``DOCCHECK_API_KEY`` is used. The result is returned and also published as a
table artifact of this flow run, which is how the parent reads it from another machine
(a flow's return value is stored where the worker runs).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from functools import partial

from prefect import flow, get_run_logger
from prefect.artifacts import acreate_table_artifact

from doccheck.ledger import DEFAULT_LEASE_SECONDS
from doccheck.pipeline import (
    DEFAULT_CONCURRENCY,
    DEFAULT_SUBMIT_DEADLINE_SECONDS,
    BatchResult,
    PlannedDocument,
    ShardConfigError,
    SubmissionOptions,
    SubmitOptions,
    check_shared_ledger,
    iter_shard,
    ledger_for,
    validate_shard,
)
from prefect_doccheck.tasks import (
    base_url_of,
    rate_limit_from_env,
    resolve_base_url,
    resolve_credentials,
    resolve_database_url,
    submit_shard_batch,
    under_storage_block,
)

__all__ = ["SHARD_RESULT_DESCRIPTION", "bulk_check_shard", "result_row"]

#: Description of the table artifact holding a shard's result (the parent looks for it).
SHARD_RESULT_DESCRIPTION = "doccheck shard result"

#: BatchResult counters published by a shard (its ``failures`` are in the ledger).
RESULT_FIELDS = (
    "total", "submitted", "replayed", "already_done", "failed", "skipped_budget", "cost_cents",
    "retry_later", "in_flight_elsewhere", "reconciled", "requeued",
)  # fmt: skip


def result_row(result: BatchResult) -> dict[str, int]:
    """The shard's counters as one table row (JSON-safe)."""
    return {name: int(getattr(result, name)) for name in RESULT_FIELDS}


def _shard_run_name() -> str:
    from prefect.runtime import flow_run

    p = flow_run.parameters
    return f"shard {int(p.get('shard', 0)) + 1}/{p.get('shards', '?')} of {str(p.get('run_id', ''))[:8]}"


def _check_run_recorded(database_url: str, run_id: str) -> None:
    """Fail at once, naming the fix, when this worker's ledger is not the parent's."""
    from doccheck.ledger import redact_url
    from doccheck.pipeline import ledger_for

    if ledger_for(database_url).get_run(run_id) is None:
        raise ShardConfigError(
            f"run {run_id} is not in this worker's ledger ({redact_url(database_url)}): the parent and every "
            "worker must share one ledger; set DOCCHECK_DATABASE_URL on the workers to the parent's"
        )


# The DocCheckStorage block named by DOCCHECK_STORAGE_BLOCK holds the storage options for the whole shard
# (tasks/_storage_block.py; the decorator is Any to mypy, as every name of prefect_doccheck.tasks).
@flow(name="bulk-check-shard", flow_run_name=_shard_run_name, validate_parameters=True)
@under_storage_block  # type: ignore[untyped-decorator]
async def bulk_check_shard(
    run_id: str,
    shard: int,
    shards: int,
    manifest: str,
    campaign: str,
    products: list[str] = ["ai"],  # noqa: B006 - Prefect shows the default in the UI
    metadata_columns: list[str] = [],  # noqa: B006
    batch_size: int = 100,
    parallel_batches: int = 1,
    concurrency: int = DEFAULT_CONCURRENCY,
    base_url: str | None = None,
    database_url: str | None = None,
    credentials: str | None = None,
    api_key_block: str | None = None,
    webhook_url: str | None = None,
    submit_deadline: float = DEFAULT_SUBMIT_DEADLINE_SECONDS,
    max_spend_cents: int | None = None,
    rate_limit_name: str | None = None,
    rate_limit_per_second: float | None = None,
    rate_limit_chunk: int | None = None,
    claim_lease_seconds: float = DEFAULT_LEASE_SECONDS,
) -> dict[str, int]:
    """Submit the documents of shard ``shard`` of ``shards`` of the recorded run ``run_id``.

    ``campaign`` must be the parent's resolved campaign (it is part of every key).
    ``rate_limit_*`` name the fleet's global concurrency limit (``tasks/_rate_limit.py``);
    the parent creates it. ``parallel_batches``: batches in flight at once, sharing
    ``concurrency`` (1: each batch gets all of it; a shard does not know its size ahead
    of the stream, so splitting would starve a shard of one batch).
    ``claim_lease_seconds``: how long a dead worker's keys stay claimed before another
    shard run may take them over.
    """
    logger = get_run_logger()
    validate_shard(shard, shards)
    db_url = resolve_database_url(database_url)
    check_shared_ledger(db_url, shards)
    key_source = await resolve_credentials(credentials, api_key_block)
    base = resolve_base_url(base_url or base_url_of(key_source))
    _check_run_recorded(db_url, run_id)
    limit = rate_limit_from_env(rate_limit_name, rate_limit_per_second, rate_limit_chunk)
    submission = SubmissionOptions(
        concurrency=concurrency, webhook_url=webhook_url, submit_deadline=submit_deadline,
        max_spend_cents=max_spend_cents,
    )  # fmt: skip
    window = _BatchWindow(parallel_batches)
    send = SubmitOptions.for_run(submission).but(
        concurrency=max(1, concurrency // window.size), lease_seconds=claim_lease_seconds
    )
    submit = partial(
        submit_shard_batch, run_id=run_id, shard=shard, base_url=base, database_url=db_url, api_key_block=key_source,
        send=send, rate_limit=limit,
    )  # fmt: skip
    try:
        batches = _shard_batches(
            manifest, campaign, products, metadata_columns, shard, shards, batch_size, run_id=run_id,
            database_url=db_url,
        )  # fmt: skip
        for batch in batches:
            await window.add(partial(submit, batch))
        total = await window.finish()
    finally:
        window.cancel()
    row = result_row(total)
    logger.info("shard %d/%d of run %s: %s", shard + 1, shards, run_id, row)
    await acreate_table_artifact(table=[{"shard": shard, **row}], description=SHARD_RESULT_DESCRIPTION)
    return row


class _BatchWindow:
    """At most ``size`` batch tasks in flight at once; their results summed as they finish.

    A failed batch fails the shard (its error propagates from :meth:`finish` or the next
    :meth:`add`): the parent retries the shard run.
    """

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self.pending: set[asyncio.Task[BatchResult]] = set()
        self.total = BatchResult()
        self.number = 0

    async def _drain(self, keep: int) -> None:
        while len(self.pending) > keep:
            done, _ = await asyncio.wait(self.pending, return_when=asyncio.FIRST_COMPLETED)
            for finished in done:
                self.pending.discard(finished)
                self.total = self.total.merge(finished.result())

    async def add(self, start: Callable[..., Awaitable[BatchResult]]) -> None:
        """``start(batch_number=n)`` for the next batch, once a place in the window is free."""
        self.number += 1
        await self._drain(self.size - 1)
        self.pending.add(asyncio.ensure_future(start(batch_number=self.number)))

    async def finish(self) -> BatchResult:
        """Wait for every batch; the shard's total."""
        await self._drain(0)
        return self.total

    def cancel(self) -> None:
        """Cancel what is still in flight (the shard failed or was cancelled)."""
        for task in self.pending:
            task.cancel()


def _shard_batches(
    manifest: str, campaign: str, products: list[str], metadata_columns: list[str], shard: int, shards: int,
    batch_size: int, *, run_id: str, database_url: str,
) -> Iterator[list[PlannedDocument]]:  # fmt: skip
    """This shard's documents of the manifest, planned as a stream, in batches of ``batch_size``."""
    batch: list[PlannedDocument] = []
    documents = iter_shard(
        manifest, ledger_for(database_url), run_id=run_id, campaign=campaign, shard=shard, shards=shards,
        products=products, metadata_columns=metadata_columns,
    )  # fmt: skip
    for doc in documents:
        batch.append(doc)
        if len(batch) >= batch_size:
            yield batch
            batch = []
    if batch:
        yield batch
