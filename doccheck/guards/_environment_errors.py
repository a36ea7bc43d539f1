"""The machine's own errors (a full disk, a read-only or forbidden folder) said as the user
needs them: which path, what to do, and that a rerun is safe.

A full disk used to print ``OSError: [Errno 28] No space left on device`` or SQLAlchemy's
``database or disk is full (Background on this error at: ...)``: no path, no next step.
:func:`describe_environment_error` names the file (the ledger, a report, an extraction
temporary file: whatever path the error carries) and is used by the commands'
``describe_error``. The exception is searched along its causes, since the library wraps.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

RERUN_SAFE = "then rerun the same command: it resumes and nothing is charged twice"

_WHAT = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EFBIG: "a file grew past the size this system allows",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
}
_SQLITE_FULL = "database or disk is full"


def describe_environment_error(exc: BaseException, ledger: str | None = None) -> str | None:
    """One line for an environment error anywhere in ``exc``'s causes, else None.
    ``ledger``: the ledger's (redacted) URL, named when SQLite reports its disk full."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in _WHAT:
            where = current.filename or "a file it was writing"
            action = "free space there" if current.errno in (errno.ENOSPC, errno.EDQUOT) else "fix that path"
            return f"{_WHAT[current.errno]} at {where}: {action} (or choose another --out), {RERUN_SAFE}"
        if _SQLITE_FULL in str(current):
            return f"the ledger's disk is full ({ledger or 'the SQLite file'}): free space there, {RERUN_SAFE}"
        current = current.__cause__ or current.__context__
    return None


@contextmanager
def naming(path: Path | str) -> Iterator[None]:
    """Give an OSError raised inside the block ``path`` as its file name when it has none
    (a failed ``write`` names no file): the user learns WHICH folder filled up."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None and exc.errno in _WHAT:
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise


__all__ = ["RERUN_SAFE", "describe_environment_error", "naming"]
