"""What a file's extraction gave, kept by the SHA-256 of its bytes, so unchanged files are read once.

Why: a term of real PDFs and DOCX spends most of its CPU extracting text, and a run read each
file's text up to three times (planning counts its words, cohort matching signs it, the
batch re-read before sending plans it again), and the weekly rerun all of it again although
no byte changed (issue 28). What the Idempotency-Key and the plan need of a file is its hash
and its word count; the hash is computed from the bytes anyway, so the word count is what is
kept, under that hash.

The store is the caller's (the ledger keeps it in a table of its own, purged with the
campaign; ``doccheck.ledger._word_cache``): this layer only asks it. :func:`using` makes one
store the active one for the code below it (the manifest reader asks :func:`cached_words`
and tells :func:`remember`), and :func:`prefetch` fills it for many files at once with every
extraction worker busy (``doccheck.extract._sandbox``: the per-document limits stay those of
each worker).

A count is kept under :func:`key_for` of the digest: the SHA-256 of the bytes *and* of
:func:`extractor_id` (this package's reader version and the versions of PDFium, pypdf,
olefile and lxml), so a new extractor re-reads each file once instead of trusting a count
another one made (issue 41: PDFium replaced pypdf, and may find other words in a file).

The text itself is handed on once: cohort matching signs every new file's text right after the
counts are taken, and reading each file a second time for it doubled what reading costs a run
(issue 41's benchmark). :func:`prefetch` keeps the texts it extracts, up to
:data:`HANDOVER_CHARS` characters in all (the first files; past that, nothing more is kept, so
memory stays bounded on a term of 100,000 files), and :func:`take_text` gives each back once.

A file on an object store is not even read again when unchanged (issue 48): hashing it is a GET
of every document of a term (100,000 requests, ~30 ms each). Its store's listing (one LIST of the
manifest's prefix) gives its identity (ETag and size), and what reading it gave (:class:`KnownFile`:
hash, size, words, read as) is kept by the store under its location and that identity
(``lookup_files``/``store_files``, optional like ``lookup_read_as``; the ledger's is
``doccheck.ledger._listed_files``): :func:`known_file` answers before a file is read,
:func:`remember_file` after, and :func:`prefetch_listed` reads the unknown ones of a manifest
ahead, many at a time, so the store's latency overlaps; the bytes it read are kept in the run's
spool (``doccheck.storage.spool``), so the file's sending reads them instead of the store. A file
whose bytes were refused (a photo, a scanned PDF, a spreadsheet named ``.docx``:
:attr:`KnownFile.refused`) is kept too, so a rerun refuses its row with the same code and reason
and no GET. A local file is hashed every time, as
before: its identity (size, mtime, inode) can stay the same across a rewrite, which an ETag cannot.

What the bytes were read as (``.odt`` for an OpenDocument file named ``.docx``) is kept too:
in this process by digest (:func:`keep_read_as`), and by the store where it has
``lookup_read_as`` (the ledger's keeps it per document: ``doccheck.ledger._document_reads``),
so a file counted from the store is still said to be read as what it is
(:func:`cached_read_as`).
"""

from __future__ import annotations

import hashlib
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from doccheck.errors import ExtractionError
from doccheck.extract._parse import extract, read_as_named, read_in_process
from doccheck.extract._read_ahead import ReadAhead
from doccheck.extract._read_limits import WORKERS
from doccheck.extract._words import count_words

if TYPE_CHECKING:
    from doccheck.storage import Entry, UserPath

__all__ = [
    "FileKey",
    "KnownFile",
    "WordStore",
    "active",
    "cached_read_as",
    "cached_words",
    "extractor_id",
    "keep_read_as",
    "keep_text",
    "key_for",
    "known_file",
    "prefetch",
    "prefetch_listed",
    "read_ahead_of",
    "reading_ahead",
    "remember",
    "remember_file",
    "take_text",
    "using",
    "wait_listed",
]

#: Most characters of extracted text kept for :func:`take_text` (~128 MB of str at most).
HANDOVER_CHARS = 64 * 1024 * 1024
_handover: dict[str, str] = {}
_handover_chars = 0
_handover_lock = threading.Lock()
#: What bytes were read as, by SHA-256, in this process: the latest :data:`_READ_AS_KEPT`, the oldest
#: forgotten first.
_read_as: OrderedDict[str, str] = OrderedDict()
#: A file's entry is asked within a few chunks of being kept (:func:`prefetch` and the read-ahead run
#: at most a few chunks ahead of the rows), or asked of the store again; kept whole up to 200,000,
#: a term of 100,000 files held ~20 MB of them to the process's end, where its reports peak.
_READ_AS_KEPT = 20_000

#: Bumped when a reader of this package changes what text it finds.
READER_VERSION = 2
_LIBRARIES = ("pypdfium2", "pypdf", "olefile", "lxml")


@lru_cache(maxsize=1)
def extractor_id() -> str:
    """What reads the files: ``"doccheck.extract/2;pypdfium2=5.15.2;pypdf=7.1.0;..."``."""
    from importlib.metadata import PackageNotFoundError, version

    def installed(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "none"

    return ";".join([f"doccheck.extract/{READER_VERSION}", *(f"{n}={installed(n)}" for n in _LIBRARIES)])


def key_for(digest: str) -> str:
    """The store key of a file's count: its bytes' digest under this extractor (hex SHA-256)."""
    return hashlib.sha256(f"{extractor_id()}\n{digest}".encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class KnownFile:
    """What reading one file of a store gave: all that planning needs of it, without reading it."""

    content_hash: str  # SHA-256 (hex) of its bytes
    size: int
    words: int | None  # None: a large file sent as it is, not counted (or refused)
    read_as: str | None  # the type its bytes were read as (".odt"), None: not read as a type
    #: Why its bytes were refused (the row's code and the words after its path: "a photo or scan..."),
    #: None: read. The same bytes are refused the same way, so a rerun refuses the row unread.
    refused: tuple[str, str] | None = None


#: A file of a store: its location as ``doccheck.storage.display`` shows it, and its listing's identity.
FileKey = tuple[str, str]


class WordStore(Protocol):
    """Word counts by the SHA-256 (hex) of a file's bytes."""

    def lookup(self, digests: Sequence[str]) -> dict[str, int]:
        """The counts known for these digests (the others are absent)."""
        ...

    def store(self, found: Mapping[str, int]) -> None:
        """Keep these counts (a digest already kept is left as it is)."""
        ...


_lock = threading.Lock()
_stack: list[WordStore] = []


@contextmanager
def using(store: WordStore) -> Iterator[WordStore]:
    """Make ``store`` the one the manifest reader consults until the block ends."""
    with _lock:
        _stack.append(store)
    try:
        yield store
    finally:
        with _lock:
            if store in _stack:
                _stack.remove(store)


def active() -> WordStore | None:
    """The store in use (None: extract every file)."""
    with _lock:
        return _stack[-1] if _stack else None


def cached_words(digest: str) -> int | None:
    """The word count kept for these bytes, if a store is active and knows them."""
    store = active()
    key = key_for(digest)
    return store.lookup([key]).get(key) if store is not None else None


def remember(digest: str, words: int, read_as: str | None = None) -> None:
    """Keep a count just extracted (nothing without an active store), and what the bytes were read as."""
    if read_as:
        keep_read_as({digest: read_as})
    store = active()
    if store is not None:
        store.store({key_for(digest): words})


def known_file(location: str, identity: str) -> KnownFile | None:
    """What reading the file at ``location`` gave when it had this listing ``identity``, if the
    active store keeps such things (``lookup_files``) and knows it: the file need not be read."""
    lookup = getattr(active(), "lookup_files", None)
    if lookup is None:
        return None
    found: dict[FileKey, KnownFile] = lookup([(location, identity)])
    return found.get((location, identity))


def remember_file(location: str, identity: str, known: KnownFile) -> None:
    """Keep what reading the file at ``location`` (of this listing ``identity``) gave, in the active
    store if it keeps such things (``store_files``)."""
    keep = getattr(active(), "store_files", None)
    if keep is not None:
        keep({(location, identity): known})


def keep_read_as(found: Mapping[str, str]) -> None:
    """Remember what bytes (by SHA-256) were read as, for :func:`cached_read_as` in this process."""
    with _handover_lock:
        for digest, kind in found.items():
            _read_as[digest] = sys.intern(kind)  # a handful of types: one string each
            _read_as.move_to_end(digest)
        while len(_read_as) > _READ_AS_KEPT:
            _read_as.popitem(last=False)


def cached_read_as(digest: str) -> str | None:
    """What these bytes were read as: in this process, else by the active store (None: unknown,
    e.g. counted by a release that did not keep it)."""
    with _handover_lock:
        known = _read_as.get(digest)
    if known is not None:
        return known or None  # "": asked of the store before, unknown there
    found = _store_read_as(active(), [digest])
    return found.get(digest)


def _store_read_as(store: WordStore | None, digests: Sequence[str]) -> dict[str, str]:
    """The store's ``lookup_read_as`` (optional: a store of counts alone knows none), kept in memory
    with what it did not know (so a rerun asks once a chunk, not once a file)."""
    lookup = getattr(store, "lookup_read_as", None)
    if lookup is None or not digests:
        return {}
    found: dict[str, str] = lookup(digests)
    keep_read_as({**dict.fromkeys(digests, ""), **found})
    return found


def keep_text(digest: str, text: str) -> None:
    """Keep ``text`` for one :func:`take_text` of these bytes, while the hand-over has room."""
    global _handover_chars
    with _handover_lock:
        if digest not in _handover and _handover_chars + len(text) <= HANDOVER_CHARS:
            _handover[digest] = text
            _handover_chars += len(text)


def take_text(digest: str) -> str | None:
    """The text extracted from the bytes of SHA-256 ``digest`` in this process, once (then forgotten)."""
    global _handover_chars
    with _handover_lock:
        text = _handover.pop(digest, None)
        if text is not None:
            _handover_chars -= len(text)
        return text


def _extract_words(path: Path) -> tuple[str, int]:
    """(store key, words) of one file; its text kept for the signer (:func:`take_text`), what it
    was read as for :func:`cached_read_as`."""
    data = path.read_bytes()
    found = extract(data, path.name)
    digest = hashlib.sha256(data).hexdigest()
    keep_text(digest, found.text)
    keep_read_as({digest: found.read_as})
    return key_for(digest), (count_words(found.text) if found.text.strip() else 0)


def prefetch(paths: Iterable[Path], store: WordStore, *, workers: int = WORKERS, chunk: int = 200) -> int:
    """Extract the files ``store`` does not know yet, ``workers`` at a time; the count extracted.

    Bytes are hashed first (cheap) and looked up ``chunk`` at a time; only the unknown ones
    are extracted, each in a sandboxed worker under the usual limits. A file that cannot be
    read or extracted is left to the caller's own reading, which reports it on its row. At
    most ``2 * workers`` files are in memory at once.
    """
    done = 0
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="doccheck-extract") as pool:
        batch: list[Path] = []
        for path in paths:
            batch.append(path)
            if len(batch) >= chunk:
                done += _prefetch_chunk(batch, store, pool, workers)
                batch = []
        done += _prefetch_chunk(batch, store, pool, workers)
    return done


def _digest(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return None


def _prefetch_chunk(paths: list[Path], store: WordStore, pool: ThreadPoolExecutor, workers: int) -> int:
    plain = {path: d for path, d in zip(paths, pool.map(_digest, paths), strict=True) if d is not None}
    digests = {path: key_for(d) for path, d in plain.items()}
    known = store.lookup(sorted(set(digests.values())))
    _store_read_as(store, sorted({plain[p] for p, d in digests.items() if d in known}))  # said for the counted
    todo = list({d: p for p, d in reversed(digests.items()) if d not in known}.values())  # one file per digest
    found: dict[str, int] = {}
    running: set[Future[tuple[str, int]]] = set()
    for path in todo:
        if len(running) >= 2 * max(1, workers):
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            found.update(_results(finished))
        running.add(pool.submit(_extract_words, path))
    found.update(_results(running))
    if found:
        store.store(found)
    return len(found)


def _results(futures: Iterable[Future[tuple[str, int]]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for future in futures:
        try:
            digest, words = future.result()
        except (OSError, ExtractionError):
            continue  # the row's own reading reports it, with its row number
        out[digest] = words
    return out


#: Files read from a store at once by :func:`prefetch_listed`: they wait on the store's latency
#: (tens of milliseconds a GET), not on a core (an S3 GET is obstore's, off the GIL); each holds at
#: most one small file's bytes (a multipart document, 4 MB at most: 64 MB for all of them). At 8,
#: planning a 2,000-document term at 30 ms a request spent 13.5 s reading (py-spy); 16 was not timed alone.
FETCHERS = 16


def prefetch_listed(
    files: Iterable[tuple[UserPath, Entry]], store: WordStore, *, fetchers: int = FETCHERS, chunk: int = 200
) -> int:
    """Read ahead the store files (each with its listing entry) that ``store`` does not know yet by
    location and identity, ``fetchers`` at a time; the count read.

    Known ones are looked up ``chunk`` at a time (one query), which leaves them in the store's
    memory for the rows' own :func:`known_file`; each unknown one is fetched once (one GET, of a
    file no larger than the caller's limit), hashed, counted (from the store by its digest, else
    extracted under the usual limits; the text kept for the signer) and kept with
    ``store_files``. A file that cannot be read or extracted is left to the row's own reading,
    which reports it. A store without ``lookup_files`` reads nothing here.
    """
    lookup = getattr(store, "lookup_files", None)
    keep = getattr(store, "store_files", None)
    if lookup is None or keep is None:
        return 0
    from doccheck.storage import display

    done = 0
    with ThreadPoolExecutor(max_workers=max(1, fetchers), thread_name_prefix="doccheck-fetch") as pool:
        batch: dict[FileKey, tuple[UserPath, Entry]] = {}
        for path, entry in files:
            batch[(display(path), entry.identity)] = (path, entry)
            if len(batch) >= chunk:
                done += _prefetch_listed_chunk(batch, store, pool, fetchers)
                batch = {}
        done += _prefetch_listed_chunk(batch, store, pool, fetchers)
    return done


def read_ahead_of(name: str, size: int, limit_bytes: int) -> bool:
    """Whether a store's file of this name and listed size is read ahead (:func:`prefetch_listed`,
    :func:`reading_ahead`): not empty, no larger than the caller's limit, of a type extracted."""
    from doccheck.extract._file_types import SUPPORTED_TYPES, extension_of

    return 0 < size <= limit_bytes and extension_of(name) in SUPPORTED_TYPES


_ahead: list[tuple[ReadAhead[FileKey, tuple[UserPath, Entry]], int]] = []


@contextmanager
def reading_ahead(
    files: Iterable[tuple[UserPath, Entry]], store: WordStore, *, limit_bytes: int, fetchers: int = FETCHERS
) -> Iterator[None]:
    """:func:`prefetch_listed` on a thread of its own while the block runs, a few chunks ahead of the
    rows (``doccheck.extract._read_ahead``): a row's reading asks :func:`wait_listed` first, so the
    run's first batches go out while the rest is read. ``files``: those :func:`read_ahead_of` takes,
    in the rows' order. An error of the reader's is raised when the block ends."""
    if getattr(store, "lookup_files", None) is None or getattr(store, "store_files", None) is None:
        yield
        return
    from doccheck.storage import display

    keyed = (((display(path), entry.identity), (path, entry)) for path, entry in files)
    with ThreadPoolExecutor(max_workers=max(1, fetchers), thread_name_prefix="doccheck-fetch") as pool:
        ahead = ReadAhead(keyed, lambda batch: _prefetch_listed_chunk(batch, store, pool, fetchers)).start()
        with _lock:
            _ahead.append((ahead, limit_bytes))
        try:
            yield
        finally:
            with _lock:
                _ahead.remove((ahead, limit_bytes))
            ahead.stop()
    if ahead.error is not None:
        raise ahead.error


def wait_listed(location: str, identity: str, *, name: str, size: int) -> bool:
    """Wait until the read-ahead of the active :func:`reading_ahead` has read this store file
    (or ended without it); False, at once, when there is none or it does not read such a file."""
    with _lock:
        current = _ahead[-1] if _ahead else None
    if current is None or not read_ahead_of(name, size, current[1]):
        return False
    current[0].wait_for((location, identity))
    return True


def _prefetch_listed_chunk(
    batch: Mapping[FileKey, tuple[UserPath, Entry]], store: WordStore, pool: ThreadPoolExecutor, fetchers: int
) -> int:
    if not batch:
        return 0
    known = store.lookup_files(list(batch))  # type: ignore[attr-defined]
    found: dict[FileKey, KnownFile] = {}
    running: dict[Future[KnownFile], FileKey] = {}
    for key, (path, entry) in batch.items():
        if key in known:
            continue
        if len(running) >= 2 * max(1, fetchers):
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            found.update(_fetched(finished, running))
        running[pool.submit(_read_listed, path, entry, store)] = key
    found.update(_fetched(list(running), running))
    if found:  # one write a chunk: the counts of bytes extracted, then what each file gave
        store.store({key_for(known.content_hash): known.words for known in found.values() if known.words is not None})
        store.store_files(found)  # type: ignore[attr-defined]
    return len(found)


def _fetched(
    futures: Iterable[Future[KnownFile]], running: dict[Future[KnownFile], FileKey]
) -> dict[FileKey, KnownFile]:
    out: dict[FileKey, KnownFile] = {}
    for future in futures:
        key = running.pop(future)
        try:
            out[key] = future.result()
        except (OSError, ExtractionError):
            continue  # the row's own reading reports it, with its row number
    return out


def _read_listed(path: UserPath, entry: Entry, store: WordStore) -> KnownFile:
    """One store file read once: its hash, its count (the store's for known bytes of a type read in
    the sandbox, else extracted: plain text is counted in less time than the store's query takes,
    ~0.4 ms a file, a term's first run from a bucket) and the type it was read as."""
    from doccheck.storage import file_name, read_bounded, spool

    data = read_bounded(path, max_bytes=entry.size, size=entry.size)
    digest = hashlib.sha256(data).hexdigest()
    key = key_for(digest)
    name = file_name(path)
    words = None if read_in_process(data, name) else store.lookup([key]).get(key)
    if words is not None:
        kind = _store_read_as(store, [digest]).get(digest) or cached_read_as(digest)
        spool(path, data)  # kept for its sending (the run's spool, if any): no second GET
        return KnownFile(digest, len(data), words, read_as_named(name, kind) if kind else None)
    found = extract(data, name)
    words = count_words(found.text) if found.text.strip() else 0
    keep_text(digest, found.text)
    keep_read_as({digest: found.read_as})
    spool(path, data)  # bytes refused by the extractor raised above: only a file to be sent is kept
    return KnownFile(digest, len(data), words, found.read_as)  # its count stored with its chunk's
