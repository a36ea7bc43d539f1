"""A retried batch is the same work: it keeps its claim owner and what it already created.

A batch task that failed on a database restart used to be retried (by Prefect, in the same
process) under a NEW claim owner: it could not take over its predecessor's claims, which
belong to a live process (this one), and waited out their whole lease (120 s) in silence.
Its summary then counted the failed attempt's own new checks as "already submitted".

Here one batch of one run (its run id and its documents' keys) has one :class:`Attempt`
per process: the owner id and the checks created so far, with their charge. An attempt
that failed is kept, so the next attempt at the same batch in this process
takes it over: it holds its predecessor's claims at once (the same owner), and a key the
ledger shows ``submitted`` by that predecessor counts as created by this run, with its
charge. Another process, or another batch, never shares it.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from doccheck.ledger import new_owner_id
from doccheck.pipeline._batch_result import BatchResult

__all__ = ["Attempt", "begin_attempt", "count_done", "end_attempt"]

#: Ended attempts remembered by this process (the oldest forgotten first).
REMEMBERED = 256

_ended: OrderedDict[str, Attempt] = OrderedDict()
_lock = threading.Lock()


@dataclass
class Attempt:
    """The work of one batch of one run in this process, across its retries."""

    key: str
    owner: str
    #: idempotency key → cents charged, for the checks this batch created (any attempt)
    created: dict[str, int] = field(default_factory=dict)
    #: keys of ``created`` counted by the current attempt (a key shared by two rows counts once)
    counted: set[str] = field(default_factory=set)


def begin_attempt(run_id: str, keys: Iterable[str]) -> Attempt:
    """The ended attempt at this batch in this process when there is one (a retry), else a
    new attempt with a new owner id."""
    digest = hashlib.sha256("\n".join([run_id, *keys]).encode("utf-8")).hexdigest()
    with _lock:
        earlier = _ended.pop(digest, None)
    if earlier is None:
        return Attempt(digest, new_owner_id())
    earlier.counted = set()
    return earlier


def end_attempt(attempt: Attempt) -> None:
    """Keep ``attempt``, which failed, for a retry of the same batch in this process."""
    with _lock:
        _ended[attempt.key] = attempt
        while len(_ended) > REMEMBERED:
            _ended.popitem(last=False)


def count_done(result: BatchResult, attempt: Attempt, key: str) -> None:
    """A key found ``submitted`` in the ledger: created by this batch in an earlier attempt
    (a new check of this run, with its charge) or by someone else (already submitted)."""
    if key in attempt.created and key not in attempt.counted:
        attempt.counted.add(key)
        result.submitted += 1
        result.cost_cents += attempt.created[key]
    else:
        result.already_done += 1
