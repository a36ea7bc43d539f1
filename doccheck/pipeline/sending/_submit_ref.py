"""``submit_ref``: one batch of a recorded run, re-read from its manifest and sent.

Why in sending and not beside :func:`~doccheck.pipeline.planning._batches.read_batch`: reading a
batch is planning's (the manifest, the ledger's record of it), sending it is this package's; the
flow's batch task and the shard's call this one function for both halves.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence

from doccheck.client import AsyncDocCheckClient
from doccheck.ledger import Ledger
from doccheck.pipeline._batch_result import BatchResult
from doccheck.pipeline.planning._batches import BatchRef, read_batch
from doccheck.pipeline.sending._submit_options import DEFAULT_SUBMIT, SubmitOptions
from doccheck.pipeline.sending._submitter import submit_batch

__all__ = ["submit_ref"]


async def submit_ref(
    client: AsyncDocCheckClient,
    ledger: Ledger,
    run_id: str,
    manifest: str | os.PathLike[str],
    ref: BatchRef,
    *,
    campaign: str | None = None,
    products: str | Sequence[str] | None = None,
    metadata_columns: str | Sequence[str] = (),
    options: SubmitOptions = DEFAULT_SUBMIT,
) -> BatchResult:
    """One batch of a recorded run, end to end: :func:`~doccheck.pipeline.read_batch` (off the
    event loop), then :func:`~doccheck.pipeline.submit_batch` over its documents with ``options``. The result counts
    the rows refused as changed (``failed``, ``failures``) with what was sent: what a task returns."""
    loaded = await asyncio.to_thread(
        read_batch, ledger, run_id, manifest, ref, campaign=campaign, products=products,
        metadata_columns=metadata_columns,
    )  # fmt: skip
    sent = await submit_batch(client, ledger, run_id, loaded.documents, options)
    return loaded.result().merge(sent)
