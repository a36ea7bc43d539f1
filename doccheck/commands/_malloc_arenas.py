"""glibc's malloc arenas for a command's process: two, unless the user set ``MALLOC_ARENA_MAX``.

Why: glibc gives each thread that allocates an arena of its own, up to eight per core, and what
one arena freed is reused by that arena alone. A run from a bucket allocates on many threads (the
read-ahead's sixteen readers, anyio's workers, the store library's), so the documents' bytes and
texts freed on one thread stayed mapped while the next thread took new pages: a 20,000-document
term from a bucket peaked 9 MB higher with the default (303 against 294 MB, the process tree,
docs/benchmarks.md). Python's own small objects come from its allocator, under the GIL, so two
arenas cost no measurable wait. ``MALLOC_ARENA_MAX`` in the environment is glibc's own setting and
is left to it; a C library other than glibc has no ``mallopt`` and is left alone.
"""

from __future__ import annotations

import os

__all__ = ["ARENAS", "limit_malloc_arenas"]

#: The arenas a command's process allocates from.
ARENAS = 2
_M_ARENA_MAX = -8  # glibc's <malloc.h>


def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Cap this process's malloc arenas at ``arenas`` (the threads started after share them; child
    processes keep glibc's default); False when the user set ``MALLOC_ARENA_MAX`` or this is not glibc."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_ARENA_MAX, arenas))
