"""The ``doccheck`` commands, one module each (``run``, ``collect``, ``demo``, ``purge``, ``services``).

Each command turns flags into the options model and hands the run to the library's steps or, when a
Prefect server is there to watch, to the flow (imported inside the function that runs it, so that
``doccheck --help`` imports no Prefect). ``_runner`` holds what they share: progress, exit codes.
"""

import os as _os

__all__ = ["ARROW_MEMORY_POOL"]

#: Arrow's allocator for a command's process (and the page workers it spawns), unless the user
#: chose one: glibc's, where Arrow's default (mimalloc) keeps what it freed. A term's first run
#: peaks in the report phase, where the Parquet files are read back: 281 MB with this, 301 MB
#: with mimalloc, for the same wall time (docs/benchmarks.md, issue 28). Set here because this
#: package is imported before pyarrow, which reads the variable once, at its first allocation.
ARROW_MEMORY_POOL = "system"

_os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", ARROW_MEMORY_POOL)
