"""Fetch the service's files of completed checks into ``<run>/files/``.

Why: the similarity PDF and the check report are the evidence an academic-integrity case
needs, and an instructor opens files, not an API. ``download_files`` puts them next to the
run's ``report.html`` as ``files/<document id>.<kind>.<ext>``, which the page links to.

How it stays cheap and safe:

- **resumable**: a file already in the run folder is not fetched again; every fetched file
  is also kept in a cache beside the run folders (``<out>/.files-cache/<check id>.<kind>``,
  files of a finished check never change), so a rerun (a new run folder over the same
  checks) hard-links what an earlier run fetched and sends no request;
- **streamed**: the client writes to a temporary file beside the target and renames it
  (``AsyncDocCheckClient.download_file``), so no file is ever half there, and memory stays
  flat whatever the size; retries are the client's own policy for reads;
- **bounded**: ``concurrency`` requests at once (a semaphore), ``max_bytes`` per file;
- **per document**: a failure is recorded (document, kind, code, reason) and the others go
  on; a file the service does not have (404, e.g. a similarity PDF of an AI-only check) is
  ``unavailable``, not a failure.

The document id comes from the manifest (untrusted): ``doccheck.guards.safe_file_stem`` keeps letters,
digits, ``.``, ``_`` and ``-``, and adds a short hash when it had to change anything, so
two ids never share a file and no id can leave the folder.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from doccheck.guards import safe_file_stem

__all__ = [
    "CACHE_DIR",
    "FILES_DIR",
    "FILE_KINDS",
    "DownloadFailure",
    "DownloadResult",
    "DownloadTarget",
    "download_files",
    "files_by_document",
    "files_of",
    "parse_kinds",
    "targets_from_rows",
]

#: The kinds the service offers, in the order the report shows them.
FILE_KINDS: tuple[str, ...] = ("similarity_pdf", "pdf", "original")
FILES_DIR = "files"
CACHE_DIR = ".files-cache"
#: Upper bound of one file (the service's own upload limit is 50 MiB; its PDFs are small).
DEFAULT_MAX_BYTES = 64 * 1024 * 1024

#: Extension of an ``original`` by its Content-Type. HTML is saved as text so that a click
#: in the report never renders (and runs) a student's page from the report's folder.
_ORIGINAL_EXTENSIONS = {
    "application/pdf": ".pdf",
    "text/plain": ".txt",
    "text/markdown": ".md",
    "text/html": ".html.txt",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
}


_ALL_ORIGINAL_EXTENSIONS = (*dict.fromkeys(_ORIGINAL_EXTENSIONS.values()), ".bin")


class FileClient(Protocol):
    """What :func:`download_files` needs of the client (``AsyncDocCheckClient``)."""

    async def download_file(
        self, check_id: str, kind: str, dest: str | Path, *, max_bytes: int | None = None
    ) -> str | None:
        """Stream one file of a check to ``dest``; ``None`` when the service has no such file."""


@dataclass(frozen=True)
class DownloadTarget:
    """A document whose check is final, and so has files to fetch."""

    document_id: str
    check_id: str
    #: The check's products when known: no ``similarity_pdf`` is asked of a check without similarity.
    products: tuple[str, ...] = ()


@dataclass(frozen=True)
class DownloadFailure:
    """One file that could not be fetched; ``reason`` never holds a secret (client errors
    are built from the service's error body and the request id only)."""

    document_id: str
    kind: str
    code: str
    reason: str


@dataclass
class DownloadResult:
    """What one :func:`download_files` call did, per file."""

    downloaded: int = 0
    reused: int = 0
    unavailable: list[tuple[str, str]] = field(default_factory=list)
    failures: list[DownloadFailure] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-able form (for the flow's summary and logs)."""
        return {
            "downloaded": self.downloaded,
            "reused": self.reused,
            "unavailable": len(self.unavailable),
            "failed": len(self.failures),
            "failures": [f.__dict__ for f in self.failures],
        }


def parse_kinds(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"similarity_pdf,pdf"`` or a list → the kinds in a stable order; empty → ``()``.

    Raises ``ValueError`` naming the unknown kind (a typo must not silently fetch nothing).
    """
    if value is None:
        return ()
    text = value if isinstance(value, str) else ",".join(str(v) for v in value)
    items = re.split(r"[,;|\s]+", text)
    wanted = [item.strip() for item in items if item and item.strip()]
    unknown = [item for item in wanted if item not in FILE_KINDS]
    if unknown:
        raise ValueError(f"unknown file kind {unknown[0]!r} for --download: use {', '.join(FILE_KINDS)}")
    return tuple(kind for kind in FILE_KINDS if kind in wanted)


def _original_extension(content_type: str | None) -> str:
    base = (content_type or "").split(";", 1)[0].strip().lower()
    return _ORIGINAL_EXTENSIONS.get(base, ".bin")


def _existing(folder: Path, stem: str, kind: str) -> Path | None:
    """The file of ``stem``/``kind`` in ``folder`` if present (an ``original``'s extension varies)."""
    extensions = (".pdf",) if kind != "original" else _ALL_ORIGINAL_EXTENSIONS
    for ext in extensions:  # a few stat calls, never a folder listing (10,000 documents share one folder)
        path = folder / f"{stem}.{kind}{ext}"
        if path.is_file():
            return path
    return None


def files_of(run_dir: str | Path, document_id: str, kinds: Iterable[str] = FILE_KINDS) -> dict[str, str]:
    """``kind → path relative to run_dir`` of the files present for ``document_id``."""
    return files_by_document(run_dir, [document_id], kinds).get(document_id, {})


def files_by_document(
    run_dir: str | Path, document_ids: Iterable[str], kinds: Iterable[str] = FILE_KINDS
) -> dict[str, dict[str, str]]:
    """``document_id → {kind: path relative to run_dir}`` for many documents, listing the
    ``files`` folder once (documents without a file are left out)."""
    folder = Path(run_dir) / FILES_DIR
    try:
        present = {entry.name for entry in os.scandir(folder) if entry.is_file()}
    except FileNotFoundError:
        return {}
    kinds = tuple(kinds)
    found: dict[str, dict[str, str]] = {}
    for document_id in document_ids:
        stem = safe_file_stem(document_id)
        for kind in kinds:
            for ext in (".pdf",) if kind != "original" else _ALL_ORIGINAL_EXTENSIONS:
                name = f"{stem}.{kind}{ext}"
                if name in present:
                    found.setdefault(document_id, {})[kind] = f"{FILES_DIR}/{name}"
                    break
    return found


def targets_from_rows(tables: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[DownloadTarget]:
    """Documents whose check has no product left pending (completed or failed), from the
    report rows (``submissions`` + the product tables), in report order."""
    pending: set[str] = set()
    for name in ("ai_results", "similarity_results"):
        for row in tables.get(name, []):
            if row.get("check_id") and row.get("status") not in ("completed", "failed"):
                pending.add(str(row["check_id"]))
    targets: list[DownloadTarget] = []
    seen: set[str] = set()
    for row in tables.get("submissions", []):
        check_id, document_id = row.get("check_id"), row.get("document_id")
        if not check_id or document_id is None or check_id in pending or document_id in seen:
            continue
        seen.add(str(document_id))
        products = row.get("products") or ()
        if isinstance(products, str):
            products = [p for p in re.split(r"[;,|]", products) if p]
        targets.append(DownloadTarget(str(document_id), str(check_id), tuple(str(p) for p in products)))
    return targets


def _link_or_copy(source: Path, target: Path) -> None:
    """Hard-link (no second copy on disk), else copy; both through a temporary name."""
    tmp = target.with_name(f".{target.name}.link-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    try:
        try:
            os.link(source, tmp)
        except OSError:
            shutil.copy2(source, tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


async def download_files(
    client: FileClient,
    targets: Iterable[DownloadTarget],
    kinds: Sequence[str],
    run_dir: str | Path,
    *,
    cache_dir: str | Path | None = None,
    concurrency: int = 4,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> DownloadResult:
    """Fetch ``kinds`` of every target into ``run_dir/files/`` (see the module docstring).

    Never raises for one file: errors are in ``result.failures``. ``cache_dir`` defaults to
    ``<run_dir>/../.files-cache``.
    """
    from doccheck.errors import DocCheckError, NotFoundError

    kinds = parse_kinds(kinds)
    result = DownloadResult()
    if not kinds:
        return result
    folder = Path(run_dir) / FILES_DIR
    cache = Path(cache_dir) if cache_dir is not None else Path(run_dir).parent / CACHE_DIR
    folder.mkdir(parents=True, exist_ok=True)
    cache.mkdir(parents=True, exist_ok=True)
    gate = asyncio.Semaphore(max(1, concurrency))
    # Two documents with the same bytes share one check: fetch its file once.
    locks: dict[tuple[str, str], asyncio.Lock] = {}

    async def fetch(check_id: str, cache_stem: str, kind: str) -> Path:
        """The cached file of ``check_id``/``kind``, fetched first when absent."""
        cached = _existing(cache, cache_stem, kind)
        if cached is not None:
            result.reused += 1
            return cached
        async with gate:
            staging = cache / f".{cache_stem}.{kind}.download"
            content_type = await client.download_file(check_id, kind, staging, max_bytes=max_bytes)
        ext = ".pdf" if kind != "original" else _original_extension(content_type)
        cached = cache / f"{cache_stem}.{kind}{ext}"
        os.replace(staging, cached)
        result.downloaded += 1
        return cached

    async def one(target: DownloadTarget, kind: str) -> None:
        if kind == "similarity_pdf" and target.products and "similarity" not in target.products:
            result.unavailable.append((target.document_id, kind))  # the service never makes one
            return
        stem = safe_file_stem(target.document_id)
        if _existing(folder, stem, kind) is not None:
            result.reused += 1
            return
        cache_stem = safe_file_stem(target.check_id)
        try:
            async with locks.setdefault((target.check_id, kind), asyncio.Lock()):
                cached = await fetch(target.check_id, cache_stem, kind)
            _link_or_copy(cached, folder / f"{stem}.{kind}{cached.name[len(cache_stem) + len(kind) + 1 :]}")
        except NotFoundError:
            result.unavailable.append((target.document_id, kind))
        except DocCheckError as exc:
            result.failures.append(DownloadFailure(target.document_id, kind, exc.code or type(exc).__name__, str(exc)))
        except OSError as exc:
            result.failures.append(
                DownloadFailure(target.document_id, kind, "file_system", f"{type(exc).__name__}: {exc.strerror or exc}")
            )

    await asyncio.gather(*(one(t, k) for t in targets for k in kinds))
    result.unavailable.sort()
    result.failures.sort(key=lambda f: (f.document_id, f.kind))
    return result
