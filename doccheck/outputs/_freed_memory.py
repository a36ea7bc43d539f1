"""The heap's free pages handed back to the system before a phase where a run's memory peaks.

Why: glibc keeps the pages a process freed mapped (``malloc_trim`` is how it gives them back), and
what another thread freed stays in that thread's arena, where the main thread's allocations do not
look for room. A run's reports and its catalog come last and hold its peak: what the run's reading
freed before them (the read-ahead's fetch threads, a store library's own threads: tens of MB for a
term from a bucket) or the reports freed before DuckDB loads is otherwise still counted there.
pyarrow's own allocator (mimalloc or jemalloc, not glibc's) keeps what the reports' tables freed
for reuse in the same way; it is asked to let it go too.
"""

from __future__ import annotations

import sys

__all__ = ["return_freed_memory"]


def return_freed_memory() -> bool:
    """Hand the heap's free pages back to the system (``malloc_trim`` is glibc's: a no-op
    elsewhere), and pyarrow's pool's if pyarrow is loaded. Whether glibc returned anything."""
    import ctypes

    if (pyarrow := sys.modules.get("pyarrow")) is not None:
        pyarrow.default_memory_pool().release_unused()

    try:
        trim = ctypes.CDLL(None).malloc_trim  # the process's own symbols: the C library's
    except (OSError, AttributeError):  # not glibc
        return False
    return bool(trim(0))
