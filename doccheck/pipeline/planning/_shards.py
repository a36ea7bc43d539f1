"""Deterministic shards of a manifest: which worker sends which document (issue 12).

Why a hash of the Idempotency-Key and not row numbers or batch references: the key is
already the document's identity across reruns (campaign, content, products), so a shard
holds the same documents whatever the manifest's order, however often the run is
retried, and without any list of documents travelling between the parent flow and its
children. Documents sharing a key (identical content) land in the same shard, so one
shard, not two, settles their one check. BLAKE2b, not ``hash()``: Python salts
``hash()`` per process, and every worker must compute the same split.
"""

from __future__ import annotations

import hashlib

from sqlalchemy.engine import make_url

from doccheck.errors import ShardConfigError

__all__ = ["ShardConfigError", "check_shared_ledger", "in_shard", "shard_of", "validate_shard"]

#: Upper bound on the number of shards: each is a flow run, a process and a ledger pool.
MAX_SHARDS = 1024


def shard_of(idempotency_key: str, shards: int) -> int:
    """The shard (``0 .. shards-1``) of the document with ``idempotency_key``: stable
    across processes, machines and Python versions, and uniform over keys."""
    if shards < 1:
        raise ShardConfigError(f"shards must be at least 1, got {shards}")
    digest = hashlib.blake2b(idempotency_key.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards


def in_shard(idempotency_key: str, shard: int, shards: int) -> bool:
    """True when the document belongs to ``shard`` of ``shards``."""
    return shard_of(idempotency_key, shards) == shard


def validate_shard(shard: int, shards: int) -> None:
    """Refuse an impossible shard number or count with a message naming the value."""
    if not 1 <= shards <= MAX_SHARDS:
        raise ShardConfigError(f"shards must be between 1 and {MAX_SHARDS}, got {shards}")
    if not 0 <= shard < shards:
        raise ShardConfigError(f"shard must be between 0 and {shards - 1} (shards={shards}), got {shard}")


def check_shared_ledger(database_url: str, shards: int) -> None:
    """Refuse a ledger that shard workers cannot share: SQLite with ``shards > 1``.

    Shards run as flow runs on a work pool, possibly on other machines; a SQLite file is
    local to one machine (and one writer at a time), so the claims that keep a key to one
    sender would not be seen by the other workers. PostgreSQL is the shared ledger.
    """
    if shards <= 1:
        return
    try:
        backend = make_url(database_url).get_backend_name()
    except Exception as exc:  # noqa: BLE001 - an unparsable URL is a configuration error too
        raise ShardConfigError(f"the ledger URL cannot be parsed ({type(exc).__name__})") from None
    if backend == "sqlite":
        raise ShardConfigError(
            f"shards={shards} runs on workers that must share one ledger, and a SQLite file cannot be "
            "shared between workers: use PostgreSQL, e.g. "
            "DOCCHECK_DATABASE_URL=postgresql+psycopg://user@db-host:5432/doccheck (or --database-url), "
            "or run with shards=1"
        )
