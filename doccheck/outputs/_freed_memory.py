"""The heap's free pages handed back to the system before a phase where a run's memory peaks.

Why: glibc keeps the pages a process freed mapped (``malloc_trim`` is how it gives them back), and
what another thread freed stays in that thread's arena, where the main thread's allocations do not
look for room. A run's reports and its catalog come last and hold its peak: what the run's reading
freed before them (the read-ahead's fetch threads, a store library's own threads: tens of MB for a
term from a bucket) or the reports freed before DuckDB loads is otherwise still counted there.
"""

from __future__ import annotations

__all__ = ["return_freed_memory"]


def return_freed_memory() -> bool:
    """Hand the heap's free pages back to the system (``malloc_trim`` is glibc's: a no-op
    elsewhere). Whether anything was returned."""
    import ctypes

    try:
        trim = ctypes.CDLL(None).malloc_trim  # the process's own symbols: the C library's
    except (OSError, AttributeError):  # not glibc
        return False
    return bool(trim(0))
