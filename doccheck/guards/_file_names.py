"""A file name for an id from outside (a manifest's document id, a service's check id).

Why here, below the outputs and the ledger: the downloads name their files with it
(``doccheck.outputs.download_files``: ``files/<document id>.<kind>.<ext>`` and the cache's
``.files-cache/<check id>.<kind>.<ext>``), and a purge must find a purged check's cached files
by the same name (``doccheck.ledger._purge_residue``), so both ask this one function.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["safe_file_stem"]

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
#: Names Windows refuses whatever the extension (a run folder may be copied to a Windows share).
_WINDOWS_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))}


def safe_file_stem(document_id: str) -> str:
    """A file-system-safe, collision-free stem for ``document_id`` (at most 99 characters,
    no leading dot, no Windows device name)."""
    cleaned = _SAFE.sub("_", document_id).strip("._") or "document"
    if cleaned == document_id and len(cleaned) <= 100 and cleaned.split(".")[0].upper() not in _WINDOWS_RESERVED:
        return cleaned
    digest = hashlib.sha256(document_id.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{cleaned[:88]}-{digest}"
