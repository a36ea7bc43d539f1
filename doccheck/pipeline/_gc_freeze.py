"""A batch's garbage-collection pause: full passes skip the objects that existed before it.

Why a module of its own: it is a process-wide setting (``gc.freeze``) that the submitter
turns on for the length of one batch, and ``run_checks`` for its summary and reports; kept
apart so that its one effect is easy to find.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["collections_skip_older_objects"]


@contextlib.contextmanager
def collections_skip_older_objects() -> Iterator[None]:
    """While a batch is submitted, the garbage collector's full passes skip every object
    that existed before it (``gc.freeze``), and take them back after (``gc.unfreeze``).

    Why: a process that has imported SQLAlchemy, pydantic's schemas and Prefect tracks
    ~10^5 long-lived objects, and the batch's allocations set off a full pass every ~1,000
    documents that walks all of them: ~100 ms each, ~0.1 ms a document (issue 10,
    docs/benchmarks.md). Nothing is leaked: the objects are unfrozen at the end, whatever
    happens, and left alone when the program froze some itself.
    """
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
