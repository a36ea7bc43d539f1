"""One ``path`` row's file: confined to the manifest's folder or prefix, sized, type-checked, hashed, counted.

Files are hashed while streamed; a file is read whole into memory at most once (files up to
the multipart limit, to extract and count their words for the dry-run plan). Larger text
files are counted while streaming, by the same decoding rules as ``doccheck.extract``.

A manifest on an object store (issue 48) names files under its prefix: a row is confined by
``doccheck.storage.child`` (another bucket, another scheme, ``..`` out of the prefix: refused, and
nothing is fetched for it), its existence and size come from the one listing of the prefix the
run shares (``doccheck.storage.Listing``), and a file unchanged since a run read it (same ETag and
size) is planned from what that run kept (``doccheck.extract.cache.known_file``): a rerun reads
no document. That includes a file whose bytes were refused (a photo, a scanned or locked PDF, a
spreadsheet named ``.docx``): the same bytes are refused the same way, so its row is refused again
with the same code and reason, unread. A refusal that is not the bytes' own (a limit of the worker,
which a loaded machine can meet, a crash, a stop) is not kept: the row is read again. A file that cannot be read (deleted since it was listed, a store error after the
store library's retries) is that row's rejection, never the run's failure.
"""

from __future__ import annotations

import codecs
import hashlib
from collections.abc import Callable
from pathlib import Path

import doccheck.extract as extraction
from doccheck.errors import CellProblem, ExtractionCrashed, OutsideLocation, StorageError
from doccheck.extract import (
    IMAGE,
    IMAGE_TYPES,
    SUPPORTED_TYPES,
    ExtractionError,
    ExtractionLimitExceeded,
    ExtractionStopped,
    NotMachineReadable,
    UnsupportedFileType,
    count_words,
    extension_of,
    read_as_named,
)
from doccheck.extract import cache as word_cache
from doccheck.sources.manifest._limits import MAX_FILE_BYTES, MULTIPART_MAX_BYTES
from doccheck.sources.manifest._types import RejectCode
from doccheck.sources.manifest._values import show
from doccheck.storage import (
    Entry,
    Listing,
    UserPath,
    as_storage_error,
    child,
    display,
    file_name,
    open_input,
    read_bounded,
)

__all__ = ["check_file"]

_CHUNK = 1024 * 1024

#: What :func:`check_file` gives for a usable file: where it is, its size, SHA-256, words and type read as.
Checked = tuple[UserPath, int, str, int | None, str | None]

#: Refusals that are not the bytes' own: the same file may be read another time.
_NOT_THE_BYTES = (ExtractionLimitExceeded, ExtractionStopped, ExtractionCrashed)


class _Refused(Exception):
    """A small file's bytes refused by extraction (``code``, ``detail``: the words after the row's
    path), with their SHA-256: what a store's file keeps so that its row is refused again unread."""

    def __init__(self, code: str, detail: str, digest: str) -> None:
        super().__init__(detail)
        self.code, self.detail, self.digest = code, detail, digest


def check_file(raw_path: str, base_dir: UserPath, listing: Listing | None = None) -> Checked:
    """Resolve, confine, size, type-check, hash and count one file; raise CellProblem when unusable.

    ``base_dir``: the manifest's folder (resolved) or prefix; ``listing``: the prefix's listing the
    run shares (one is made when None: one LIST). The last item is the type the file was read as
    (an extension, from its bytes: ``".odt"`` for an OpenDocument file named ``.docx``), None when
    it was not read (a large file sent as it is)."""
    if "\x00" in raw_path:
        raise CellProblem("path", RejectCode.INVALID_PATH, "the path contains a NUL character")
    try:
        resolved = child(base_dir, raw_path)  # follows symlinks on the disk
    except OutsideLocation as exc:
        raise CellProblem("path", RejectCode.PATH_ESCAPES_MANIFEST_DIR, f"{show(raw_path, 200)} {exc}") from None
    except (OSError, RuntimeError) as exc:  # symlink loops
        raise CellProblem(
            "path", RejectCode.UNREADABLE_FILE, f"{show(raw_path, 200)} cannot be resolved ({_short(exc)})"
        ) from None
    if isinstance(resolved, Path):
        entry = None
        size = _local_size(resolved, raw_path)
    else:
        entry = (listing if listing is not None else Listing(base_dir)).entry(resolved)
        if entry is None:
            raise CellProblem("path", RejectCode.FILE_NOT_FOUND, f"file {show(raw_path, 200)} does not exist")
        _check_type(resolved, raw_path)
        size = entry.size
    if size == 0:
        raise CellProblem("path", RejectCode.EMPTY_DOCUMENT, f"file {show(raw_path, 200)} is empty (0 bytes)")
    if size > MAX_FILE_BYTES:
        raise CellProblem(
            "path",
            RejectCode.FILE_TOO_LARGE,
            f"file {show(raw_path, 200)} is {size} bytes, over the {MAX_FILE_BYTES} byte (50 MB) limit",
        )
    digest, words, read_as = (
        _read(resolved, raw_path, size) if entry is None else _read_listed(resolved, raw_path, entry)
    )
    if words == 0:
        raise CellProblem("path", RejectCode.EMPTY_DOCUMENT, f"file {show(raw_path, 200)} has no extractable words")
    return resolved, size, digest, words, read_as


def _local_size(resolved: Path, raw_path: str) -> int:
    """A local file's size, after the checks the disk answers: it exists, is a regular file, of a type read."""
    try:
        exists, regular = resolved.exists(), resolved.is_file()
    except OSError as exc:  # e.g. a name too long for the file system
        raise CellProblem(
            "path", RejectCode.INVALID_PATH, f"{show(raw_path, 200)} cannot be used ({_os_reason(exc)})"
        ) from None
    if not exists:
        raise CellProblem("path", RejectCode.FILE_NOT_FOUND, f"file {show(raw_path, 200)} does not exist")
    if not regular:
        raise CellProblem("path", RejectCode.NOT_A_FILE, f"{show(raw_path, 200)} is not a regular file")
    _check_type(resolved, raw_path)
    try:
        return resolved.stat().st_size
    except OSError as exc:
        raise CellProblem(
            "path", RejectCode.UNREADABLE_FILE, f"{show(raw_path, 200)} cannot be read ({_os_reason(exc)})"
        ) from None


def _check_type(resolved: UserPath, raw_path: str) -> None:
    ext = extension_of(file_name(resolved))
    if ext not in SUPPORTED_TYPES and ext not in IMAGE_TYPES:  # a photo is read, to say why it is not checked
        raise CellProblem(
            "path",
            RejectCode.UNSUPPORTED_TYPE,
            f"file type {ext or '(no extension)'!r} of {show(raw_path, 200)} is not supported; "
            f"supported: {', '.join(sorted(SUPPORTED_TYPES))}",
        )


def _read_listed(resolved: UserPath, raw_path: str, entry: Entry) -> tuple[str, int | None, str | None]:
    """A store's file: what a run kept of it while its listing says it is unchanged, else read (and kept)."""
    location = display(resolved)
    # The run's read-ahead looks the file up (or reads it) with its chunk: asked after it, the
    # answer is in memory, not one query a row.
    word_cache.wait_listed(location, entry.identity, name=file_name(resolved), size=entry.size)
    known = word_cache.known_file(location, entry.identity)
    if known is not None and known.refused is not None:  # the same bytes, refused the same way
        code, detail = known.refused
        raise CellProblem("path", code, f"{show(raw_path, 200)}: {detail}")
    if known is not None:
        return known.content_hash, known.words, known.read_as

    def keep(refused: _Refused) -> None:
        kept = word_cache.KnownFile(refused.digest, entry.size, None, None, (refused.code, refused.detail))
        word_cache.remember_file(location, entry.identity, kept)

    digest, words, read_as = _read(resolved, raw_path, entry.size, keep)
    word_cache.remember_file(location, entry.identity, word_cache.KnownFile(digest, entry.size, words, read_as))
    return digest, words, read_as


def _read(
    resolved: UserPath, raw_path: str, size: int, keep: Callable[[_Refused], None] | None = None
) -> tuple[str, int | None, str | None]:
    """Hash and count one file; every reading failure as the row's problem with its code
    (``keep`` told first of a refusal the bytes decide)."""
    ext = extension_of(file_name(resolved))
    if ext in IMAGE_TYPES and size > MULTIPART_MAX_BYTES:  # not read whole: its name says enough
        raise CellProblem("path", RejectCode.IMAGE_WITHOUT_TEXT, f"{show(raw_path, 200)}: {IMAGE}")
    try:
        if size <= MULTIPART_MAX_BYTES:
            return _hash_and_extract(resolved, size=size)
        counted = ext in (".txt", ".md")  # read as text by its name; the rest is sent as it is, unread
        return (*_hash_streamed(resolved, count=counted, size=size), ext if counted else None)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError) and not isinstance(resolved, Path):  # deleted since it was listed
            raise CellProblem(
                "path",
                RejectCode.FILE_NOT_FOUND,
                f"file {show(raw_path, 200)} does not exist (any more: it was listed)",
            ) from None
        raise CellProblem(
            "path", RejectCode.UNREADABLE_FILE, f"{show(raw_path, 200)} cannot be read ({_os_reason(exc)})"
        ) from None
    except _Refused as refused:
        if keep is not None:
            keep(refused)
        raise CellProblem("path", refused.code, f"{show(raw_path, 200)}: {refused.detail}") from None
    except ExtractionError as exc:
        raise CellProblem("path", _code_of(exc), f"{show(raw_path, 200)}: {exc}") from None


def _code_of(exc: ExtractionError) -> str:
    """The row's code for an extraction's refusal."""
    if isinstance(exc, NotMachineReadable):  # its reason code and words: a photo, a scan, a password
        return exc.reason
    if isinstance(exc, UnsupportedFileType):  # e.g. a .ppt, or a spreadsheet named .docx
        return RejectCode.UNSUPPORTED_TYPE
    return RejectCode.UNREADABLE_FILE


def _hash_and_extract(path: UserPath, *, size: int | None = None) -> tuple[str, int, str | None]:
    """Small file: one read serves the hash, the word count (empty text → 0 words) and the type
    it is read as (a store's file: one GET, refused past the multipart limit). Bytes extraction
    refuses raise :class:`_Refused` with their digest.

    Bytes already extracted (the same SHA-256) take their count, and what they were read as, from
    the active word store (``doccheck.extract.cache``): a rerun, or the batch re-read of this
    run, extracts nothing."""
    data = path.read_bytes() if isinstance(path, Path) else read_bounded(path, max_bytes=MULTIPART_MAX_BYTES, size=size)
    digest = hashlib.sha256(data).hexdigest()
    known = word_cache.cached_words(digest)
    if known is not None:
        kind = word_cache.cached_read_as(digest)
        return digest, known, (read_as_named(path.name, kind) if kind else None)
    # The package's function, looked up when called: tests count the files read by patching it.
    try:
        found = extraction.extract(data, path.name)
    except _NOT_THE_BYTES:
        raise
    except ExtractionError as exc:
        raise _Refused(_code_of(exc), str(exc), digest) from None
    words = count_words(found.text) if found.text.strip() else 0
    word_cache.remember(digest, words, found.read_as)
    return digest, words, found.read_as


def _hash_streamed(path: UserPath, *, count: bool, size: int | None = None) -> tuple[str, int | None]:
    """Large file: hash in chunks; for plain text also count words across chunk borders.

    Decoding follows ``doccheck.extract`` (UTF-8, BOM tolerated, or BOM-marked UTF-16; NUL
    bytes refused) so that a large file is judged by the same rules as a small one.
    """
    digest = hashlib.sha256()
    decoder: codecs.IncrementalDecoder | None = None
    words = 0
    carry = ""
    with as_storage_error(path), open_input(path, size=size) as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            if not count:
                continue
            if decoder is None:
                encoding = "utf-16" if chunk.startswith((b"\xff\xfe", b"\xfe\xff")) else "utf-8-sig"
                decoder = codecs.getincrementaldecoder(encoding)(errors="strict")
            try:
                text = carry + decoder.decode(chunk)
            except UnicodeDecodeError:
                raise ExtractionError("not UTF-8 text") from None
            if "\x00" in text:
                raise ExtractionError("text file contains NUL bytes (binary data?)")
            # A word never spans whitespace: count up to the last whitespace, carry the rest.
            cut = max(text.rfind(" "), text.rfind("\n"), text.rfind("\t"), text.rfind("\r"))
            if cut < 0:
                carry = text
                continue
            words += count_words(text[:cut])
            carry = text[cut:]
    if count and decoder is not None:
        try:
            carry += decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            raise ExtractionError("not UTF-8 text (truncated character at the end)") from None
        words += count_words(carry)
    return digest.hexdigest(), (words if count else None)


def _os_reason(exc: OSError) -> str:
    if isinstance(exc, StorageError):  # a store's error, in words that name no secret
        return str(exc)
    return exc.strerror or type(exc).__name__


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200]
