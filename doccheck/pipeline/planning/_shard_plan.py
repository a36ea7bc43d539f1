"""One shard's documents of a recorded run, planned with what the run's own planning read.

Why: a shard finds its documents by planning the whole manifest (a document's shard is a hash
of its Idempotency-Key, and the key holds its content's hash), so without the campaign's word
store each shard read every document of the term again: from a bucket, four shards and the
parent made six GETs a document (``benchmarks/scale_out.py --bucket``), and four workers went
no faster than two. With the ledger's store in use, a file the run's planning read is known by
its listing identity (``listed_files``: location, ETag and size), a chunk at a time in one query,
and its count by its bytes' hash: a shard reads none of them, and reads a document's bytes only
when it sends it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

from doccheck.domain import MULTIPART_MAX_BYTES
from doccheck.extract import cache as word_cache
from doccheck.ledger import Ledger, LedgerWordStore
from doccheck.pipeline.planning._plan import PlannedDocument
from doccheck.pipeline.planning._plan_stream import PlanTally, iter_planned, listed_files
from doccheck.pipeline.planning._run_files import run_files
from doccheck.pipeline.planning._shards import in_shard
from doccheck.storage import resolve

__all__ = ["iter_shard"]


def iter_shard(
    manifest: str | os.PathLike[str],
    ledger: Ledger,
    *,
    run_id: str,
    campaign: str,
    shard: int,
    shards: int,
    products: str | Sequence[str] | None = None,
    metadata_columns: str | Sequence[str] = (),
) -> Iterator[PlannedDocument]:
    """The documents of shard ``shard`` of ``shards`` of the recorded run ``run_id``, in row order,
    planned as :func:`~doccheck.pipeline.planning.iter_planned` plans them."""
    tally = PlanTally(campaign=campaign, manifest=resolve(manifest))
    listing = run_files(run_id, manifest).listing
    store = LedgerWordStore(ledger, campaign, run_id)
    with word_cache.using(store):
        word_cache.prefetch_listed(listed_files(manifest, listing, limit_bytes=MULTIPART_MAX_BYTES), store)
        for doc in iter_planned(manifest, tally, products=products, metadata_columns=metadata_columns, listing=listing):
            if in_shard(doc.idempotency_key, shard, shards):
                yield doc
