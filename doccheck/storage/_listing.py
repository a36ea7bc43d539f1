"""What a prefix holds, from one listing: each object's size, ETag and modification time.

Why: a rerun with nothing changed must decide without reading the documents again. On a store,
a GET or even a HEAD per document is a request per student (100,000 a term, each ~30 ms of
latency); one LIST of the manifest's prefix (1,000 keys a page on S3) answers the same
questions: does the file exist, how large is it, and has it changed since it was read (its ETag).
On the local disk a listing would walk whatever the folder holds, so a local file is stat'ed
when asked, as doccheck always did.
"""

from __future__ import annotations

import math
import struct
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from upath import UPath

from doccheck.storage._locations import UserPath
from doccheck.storage._object_reads import as_read_errors
from doccheck.storage._s3_store import obstore_module, store_and_key

__all__ = ["Entry", "Listing", "describe"]


@dataclass(frozen=True, slots=True)
class Entry:
    """One file as its store describes it."""

    size: int
    #: The store's content tag (S3's ETag, GCS's md5/generation, Azure's ETag); None on the local disk.
    etag: str | None
    #: Seconds since the epoch, when the store gives it.
    modified: float | None
    #: On the local disk, the inode: with size and mtime, a file's identity as the manifest readers use it.
    inode: int | None = None

    @property
    def identity(self) -> str:
        """What changes when the file's bytes change: the ETag and size on a store (an ETag is the
        content's tag), size, mtime and inode on the local disk."""
        if self.etag is not None:
            return f"etag:{self.etag}:{self.size}"
        return f"stat:{self.size}:{self.modified}:{self.inode}"


class Listing:
    """The files under one folder or prefix, listed once (a store) or stat'ed on demand (the disk)."""

    def __init__(self, base: UserPath) -> None:
        self.base = base
        self._entries: dict[str, bytes] | None = None  # name -> an Entry packed (_pack)
        self._lock = threading.Lock()  # the rows and the run's read-ahead ask at once: one LIST

    def entry(self, path: UserPath) -> Entry | None:
        """``path``'s entry, None when there is no such file (a folder is not a file)."""
        if isinstance(path, Path):
            return _stat(path)
        packed = self._listed().get(path.path.lstrip("/"))
        return _unpack(packed) if packed is not None else None

    def files(self) -> Iterator[tuple[str, Entry]]:
        """Every file under the prefix, named relative to it (``/``-separated), in name order, from
        the one listing (an export's folder on a store is walked this way). A local folder is not
        listed: it is walked by the caller, under its own rules for links."""
        assert isinstance(self.base, UPath), "a local folder is not listed"
        prefix = self.base.path.strip("/") + "/"
        for name, packed in sorted(self._listed().items()):
            if name.startswith(prefix):
                yield name[len(prefix) :], _unpack(packed)

    def list_ahead(self) -> None:
        """Start the one listing now, on a thread of its own (a store's prefix; nothing on the disk):
        whoever asks first then waits for it rather than starting it. Why: a rerun from a bucket
        decides every row from the listing, and the recording has other work before its first row
        (the run started in the ledger, the manifest's HEAD, its GETs for the header and for the
        read-ahead's path cells) that the listing's pages can overlap. A listing that fails here is
        made again by the first ask, which meets the store's error where a run handles it."""
        if isinstance(self.base, Path):
            return
        threading.Thread(target=self._list_quietly, name="doccheck-listing", daemon=True).start()

    def _list_quietly(self) -> None:
        try:
            self._listed()
        except Exception:  # noqa: BLE001 - the first ask lists again and raises it where it is handled
            return

    def __len__(self) -> int:
        return 0 if isinstance(self.base, Path) else len(self._listed())

    def _listed(self) -> dict[str, bytes]:
        with self._lock:
            if self._entries is None:
                self._entries = _list(self.base)
            return self._entries


def _list(base: UserPath) -> dict[str, bytes]:
    assert isinstance(base, UPath), "a local folder is not listed"
    if (found := store_and_key(base, prefix=True)) is not None:
        listed = _listed_by_obstore(*found, bucket=str(base.path).partition("/")[0])
        if listed is not None:
            return listed
    fs = base.fs
    if _S3_PROTOCOLS & set(_protocols(fs)) and hasattr(fs, "_iterdir"):
        return _listed_by_page(fs, base.path)
    found = fs.find(base.path, detail=True)
    return {name.lstrip("/"): _pack(_entry(info)) for name, info in found.items() if info.get("type") == "file"}


#: An entry packed: its size, its stamp (NaN: none), whether it has an ETag, then the ETag's
#: UTF-8. A term's listing is held for the run: 100,000 objects take 22 MB packed, 34 MB as Entry objects.
_PACKED = struct.Struct("<qd?")


def _pack(entry: Entry) -> bytes:
    stamp = math.nan if entry.modified is None else entry.modified
    return _PACKED.pack(entry.size, stamp, entry.etag is not None) + (entry.etag or "").encode()


def _unpack(packed: bytes) -> Entry:
    size, stamp, tagged = _PACKED.unpack_from(packed)
    etag = packed[_PACKED.size :].decode() if tagged else None
    return Entry(size=size, etag=etag, modified=None if math.isnan(stamp) else stamp)


_S3_PROTOCOLS = frozenset({"s3", "s3a"})


def _protocols(fs: Any) -> tuple[str, ...]:
    protocol = getattr(fs, "protocol", ())
    return (protocol,) if isinstance(protocol, str) else tuple(protocol)


def _listed_by_page(fs: Any, path: str) -> dict[str, bytes]:
    """An S3 prefix's files as packed entries, one page of the listing held at a time.

    Why: ``find`` builds s3fs' info dict of every object before the first is looked at (~1.4 KB
    an object: 140 MB for a term of 100,000 documents, as the run's peak). s3fs' own page walk
    (``_iterdir``, each page one ``ListObjectsV2`` through its retried call, as ``find`` sends
    them) yields each page's objects as they come, and each is packed at once (:func:`_pack`).
    An S3 prefix is listed through obstore first (:func:`_listed_by_obstore`); this is its fallback."""
    from fsspec.asyn import sync

    bucket, _, key = fs._strip_protocol(path).partition("/")
    prefix = key.strip("/") + "/" if key.strip("/") else ""

    async def walk() -> dict[str, bytes]:
        entries: dict[str, bytes] = {}
        async for info in fs._iterdir(bucket, delimiter="", prefix=prefix):
            if info.get("type") == "file":
                entries[str(info["name"]).lstrip("/")] = _pack(_entry(info))
        return entries

    entries: dict[str, bytes] = sync(fs.loop, walk)
    return entries


def _listed_by_obstore(store: Any, key: str, *, bucket: str) -> dict[str, bytes] | None:
    """An S3 prefix's files as packed entries through obstore, a page at a time (object_store
    parses each page in Rust: botocore's parsing of the same pages, their timestamps through
    dateutil, was most of a rerun's listing CPU); None when a page could not be had.

    Why None and not the error: object_store retries a LIST that is refused or not answered, but
    not one whose answer is cut mid-body (measured: 3 of 10 listings of 3,000 keys failed with
    10% of connections dropped), where botocore retries it. The caller then lists through s3fs,
    whose retries ride it out: the same entries, more CPU.

    A folder's marker (the empty ``docs/`` object a console's "create folder" leaves) is listed
    by object_store as ``docs``, as an empty file of that name would be: each empty object is
    asked of the store (one HEAD, answered only for a real ``docs``) and a marker left out, as
    a folder is not a file. Past :data:`_EMPTY_ASKED` empty objects, s3fs lists the prefix."""
    prefix = key.strip("/") + "/" if key.strip("/") else ""
    entries: dict[str, bytes] = {}
    empty: list[str] = []
    obstore = obstore_module()
    try:
        for page in obstore.list(store, prefix=prefix or None, chunk_size=1000):
            for meta in page:
                entries[f"{bucket}/{meta['path']}"] = _pack(_meta_entry(meta))
                if not meta["size"]:
                    empty.append(meta["path"])
        if len(empty) > _EMPTY_ASKED:
            return None
        for name in empty:
            try:
                obstore.head(store, name)
            except FileNotFoundError:  # only "name/" is there: a folder's marker
                entries.pop(f"{bucket}/{name}", None)
    except (OSError, obstore.exceptions.BaseError):
        return None
    return entries


#: Most empty objects a listing through obstore asks about one by one (a folder's marker or not).
_EMPTY_ASKED = 100


def _meta_entry(meta: Mapping[str, Any]) -> Entry:
    """An Entry from obstore's ``ObjectMeta``."""
    etag = meta.get("e_tag")
    modified = meta.get("last_modified")
    return Entry(
        size=int(meta["size"]),
        etag=str(etag).strip('"') if etag else None,
        modified=modified.timestamp() if isinstance(modified, datetime) else None,
    )


def describe(path: UserPath) -> Entry | None:
    """One file's entry asked of its store alone (one HEAD; a stat on the disk), None when there
    is no such file: for a single file such as the manifest, where listing its prefix would be
    a LIST of every document beside it."""
    if isinstance(path, Path):
        return _stat(path)
    if (found := store_and_key(path)) is not None:
        with as_read_errors(path):
            try:
                return _meta_entry(obstore_module().head(*found))
            except FileNotFoundError:
                return None
    try:
        info = path.fs.info(path.path)
    except FileNotFoundError:
        return None
    return _entry(info) if info.get("type") == "file" else None


def _stat(path: Path) -> Entry | None:
    try:
        st = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not path.is_file():
        return None
    return Entry(size=st.st_size, etag=None, modified=st.st_mtime_ns / 1e9, inode=st.st_ino)


def _entry(info: dict[str, Any]) -> Entry:
    etag = info.get("ETag") or info.get("etag") or info.get("md5Hash") or info.get("generation")
    modified = (
        info.get("LastModified") or info.get("last_modified") or info.get("mtime") or info.get("updated")
        or info.get("created")  # fsspec's memory filesystem: its only stamp, so a rewrite of the same size is seen
    )  # fmt: skip
    if isinstance(modified, datetime):
        stamp: float | None = modified.timestamp()
    elif isinstance(modified, int | float):
        stamp = float(modified)
    else:
        stamp = None
    return Entry(size=int(info.get("size") or 0), etag=str(etag).strip('"') if etag else None, modified=stamp)
