"""Walk a zip or an unzipped folder of an LMS export without extracting it, within bounds.

An export is untrusted: it holds whatever students uploaded, and a hostile zip can name
``../../etc/x``, an absolute path, a symlink, or a member that inflates a thousandfold. Each
such entry is refused on its own (with its reason) and the walk goes on; only a walk past its
entry count or time budget stops, because then the rest cannot be trusted to be read in time.
Names are read from the zip's central directory; no member is inflated here, so a 2 GB export
is never held in memory nor extracted twice: :func:`copy_member` streams one member, capped,
when a document is actually read.

An export may also be on an object store (docs/storage.md): a zip at a URL is read by ``zipfile``
over the seam's seekable file (:func:`doccheck.storage.open_input`: ranged reads of 1 MiB
blocks; only the central directory and the members copied are fetched, the members in the order
their bytes lie in the zip, :func:`member_order`), and a folder at a URL prefix is walked from one
listing (:class:`doccheck.storage.Listing`), with the same bounds and the same refused names.
:func:`open_export` opens either once, for the walk and the copies.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, BinaryIO, TypeAlias

from doccheck.errors import UnsafeExport
from doccheck.extract import MAX_COMPRESSION_RATIO, RATIO_FLOOR_BYTES
from doccheck.sources.lms._model import Entry
from doccheck.sources.manifest._limits import MAX_FILE_BYTES
from doccheck.storage import Listing, UserPath, open_input

__all__ = ["ExportLimits", "Opened", "Refused", "copy_member", "is_zip", "member_order", "open_export", "walk_export"]

#: An export opened once: its zip, the listing of its folder on a store, or None (a local folder).
Opened: TypeAlias = zipfile.ZipFile | Listing | None
#: A zip on a store is read ahead this far at a time: one export is open at once, read forward
#: (members in the order they lie), so a larger block buys fewer ranged reads for 8-16 MiB of
#: memory (a 36 MB zip's 400 members: 7 reads instead of 29 with 1 MiB blocks; docs/lms.md).
ZIP_BLOCK_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class ExportLimits:
    """Bounds on one export; per member they are the same as for one manifest file."""

    max_entries: int = 100_000
    max_member_bytes: int = MAX_FILE_BYTES
    max_total_bytes: int = 64 * 1024**3
    max_ratio: int = MAX_COMPRESSION_RATIO
    ratio_floor_bytes: int = RATIO_FLOOR_BYTES
    max_seconds: float = 120.0


DEFAULT_LIMITS = ExportLimits()


@dataclass(frozen=True)
class Refused:
    """One entry refused before it is read, with the reason."""

    name: str
    reason: str


def _unsafe_name(name: str) -> str | None:
    """Why a member name would land outside the extraction folder, or None when it is safe."""
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return "an absolute path"
    if "\\" in name:
        return "a backslash in its path"
    if any(part == ".." for part in PurePosixPath(name).parts):
        return "a '..' that leaves the export's folder"
    if "\x00" in name:
        return "a NUL in its name"
    return None


def is_zip(path: UserPath) -> bool:
    """Whether ``path`` is read as a zip: a local file (a folder is walked), or a URL ending in
    ``.zip`` (anything else at a URL is a prefix: asking the store would be a request)."""
    if isinstance(path, Path):
        return path.is_file()
    return path.suffix.lower() == ".zip"


@contextlib.contextmanager
def open_export(path: UserPath) -> Iterator[Opened]:
    """``path`` opened for a walk and its copies: a zip's central directory read once (on a
    store, through the seam's seekable file), a store's folder listed once, a local folder as it is."""
    if not is_zip(path):
        yield None if isinstance(path, Path) else Listing(path)
        return
    with contextlib.ExitStack() as stack:
        try:
            source = (
                path if isinstance(path, Path) else stack.enter_context(open_input(path, block_bytes=ZIP_BLOCK_BYTES))
            )
            archive = stack.enter_context(zipfile.ZipFile(source))
        except (zipfile.BadZipFile, OSError) as exc:
            raise UnsafeExport(f"{path.name}: not a readable zip ({exc})") from None
        yield archive


def member_order(opened: Opened, names: Iterable[str]) -> list[str]:
    """``names`` in the order their bytes lie in the zip (its members' header offsets), else as
    given: a store's file is read ahead a block at a time, so members copied in this order cost
    a ranged read per block of the zip, in name order about one per member."""
    if not isinstance(opened, zipfile.ZipFile):
        return list(names)
    offsets = {info.filename: info.header_offset for info in opened.infolist()}
    return sorted(names, key=lambda name: offsets.get(name, 0))


def walk_export(
    path: UserPath, limits: ExportLimits = DEFAULT_LIMITS, opened: Opened = None
) -> Iterator[Entry | Refused]:
    """Every file entry of ``path`` (a .zip or a folder, local or at a URL) in name order, or why
    it is refused. ``opened``: :func:`open_export`'s (else the export is opened here)."""
    if opened is None and (is_zip(path) or not isinstance(path, Path)):
        with open_export(path) as own:
            yield from walk_export(path, limits, own)
        return
    deadline = time.monotonic() + limits.max_seconds
    source = _sources(path, limits, opened)
    total = 0
    for count, item in enumerate(source, start=1):
        if count > limits.max_entries:
            raise UnsafeExport(f"{path.name}: more than {limits.max_entries} entries")
        if time.monotonic() > deadline:
            raise UnsafeExport(f"{path.name}: not listed within {limits.max_seconds:.0f} s")
        if isinstance(item, Entry):
            if item.size > limits.max_member_bytes:
                item = Refused(item.name, f"{item.size} bytes, over the {limits.max_member_bytes}-byte upload limit")
            else:
                total += item.size
                if total > limits.max_total_bytes:
                    raise UnsafeExport(f"{path.name}: inflates to more than {limits.max_total_bytes} bytes")
        yield item


def _sources(path: UserPath, limits: ExportLimits, opened: Opened) -> Iterator[Entry | Refused]:
    if isinstance(opened, zipfile.ZipFile):
        return _zip_entries(path, opened, limits)
    if isinstance(opened, Listing):
        return _listed_entries(opened)
    assert isinstance(path, Path)
    return _folder_entries(path)


def _zip_entries(path: UserPath, zf: zipfile.ZipFile, limits: ExportLimits) -> Iterator[Entry | Refused]:
    infos = zf.infolist()
    if len(infos) > limits.max_entries:
        raise UnsafeExport(f"{path.name}: {len(infos)} entries, over {limits.max_entries}")
    for info in sorted(infos, key=lambda i: i.filename):
        if info.is_dir():
            continue
        name = info.filename
        why = _unsafe_name(name)
        if why is None and stat.S_ISLNK(info.external_attr >> 16):
            why = "a symbolic link"
        if why is None and info.file_size > limits.ratio_floor_bytes:
            ratio = info.file_size / max(info.compress_size, 1)
            if ratio > limits.max_ratio:
                why = f"a compression ratio of {ratio:.0f}:1 (over {limits.max_ratio}:1)"
        yield Refused(name, f"refused: {why}") if why else Entry(name, info.file_size)


def _listed_entries(listing: Listing) -> Iterator[Entry | Refused]:
    """A folder on a store, from its one listing: no links there, but a key may still name
    ``..``, a backslash or a NUL, refused as in a zip."""
    for name, entry in listing.files():
        why = _unsafe_name(name)
        yield Refused(name, f"refused: {why}") if why else Entry(name, entry.size)


def _folder_entries(root: Path) -> Iterator[Entry | Refused]:
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        here = Path(dirpath)
        for d in list(dirnames):
            if (here / d).is_symlink():
                dirnames.remove(d)
                yield Refused((here / d).relative_to(root).as_posix(), "refused: a symbolic link")
        for f in sorted(filenames):
            full = here / f
            name = full.relative_to(root).as_posix()
            st = full.lstat()
            if stat.S_ISLNK(st.st_mode):
                yield Refused(name, "refused: a symbolic link")
            elif not stat.S_ISREG(st.st_mode):
                yield Refused(name, "refused: not a regular file")
            else:
                yield Entry(name, st.st_size)


def copy_member(
    export: UserPath,
    name: str,
    out: BinaryIO,
    limits: ExportLimits = DEFAULT_LIMITS,
    opened: Opened = None,
) -> int:
    """Stream one member to ``out``, stopping at the per-member bound whatever the zip declared.

    ``opened``: :func:`open_export`'s, so that copying every member reads the central directory
    (or lists the store's folder) once, not once per member.
    """
    if _unsafe_name(name) is not None:
        raise UnsafeExport(f"{name!r}: unsafe member name")
    written = 0
    with contextlib.ExitStack() as stack:
        if opened is None and (is_zip(export) or not isinstance(export, Path)):
            opened = stack.enter_context(open_export(export))
        src = stack.enter_context(_member(export, name, opened))
        while chunk := src.read(1024 * 1024):
            written += len(chunk)
            if written > limits.max_member_bytes:
                raise UnsafeExport(f"{name!r}: inflates past {limits.max_member_bytes} bytes")
            out.write(chunk)
    return written


def _member(export: UserPath, name: str, opened: Opened) -> IO[bytes]:
    """One member open for reading: from the zip, the store (its listed size: no HEAD), or the disk."""
    if isinstance(opened, zipfile.ZipFile):
        return opened.open(name)
    if isinstance(opened, Listing):
        member = export / name
        entry = opened.entry(member)
        return open_input(member, size=entry.size if entry is not None else None)
    # O_NOFOLLOW: a file swapped for a symlink after the walk is refused, not followed.
    assert isinstance(export, Path)
    fd = os.open(export / name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    return os.fdopen(fd, "rb")
