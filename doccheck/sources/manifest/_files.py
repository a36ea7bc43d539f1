"""One ``path`` row's file: confined to the manifest's folder, sized, type-checked, hashed, counted.

Files are hashed while streamed; a file is read whole into memory at most once (files up to
the multipart limit, to extract and count their words for the dry-run plan). Larger text
files are counted while streaming, by the same decoding rules as ``doccheck.extract``.
"""

from __future__ import annotations

import codecs
import hashlib
from pathlib import Path

import doccheck.extract as extraction
from doccheck.errors import CellProblem
from doccheck.extract import (
    IMAGE,
    IMAGE_TYPES,
    SUPPORTED_TYPES,
    ExtractionError,
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

__all__ = ["check_file"]

_CHUNK = 1024 * 1024
_ESCAPE_HINT = "paths are relative to the manifest's folder and must stay inside it"


def check_file(raw_path: str, base_dir: Path) -> tuple[Path, int, str, int | None, str | None]:
    """Resolve, confine, size, type-check, hash and count one file; raise CellProblem when unusable.

    The last item is the type the file was read as (an extension, from its bytes: ``".odt"`` for
    an OpenDocument file named ``.docx``), None when it was not read (a large file sent as it is)."""
    if "\x00" in raw_path:
        raise CellProblem("path", RejectCode.INVALID_PATH, "the path contains a NUL character")
    given = Path(raw_path)
    if given.is_absolute() or given.drive or raw_path.startswith(("/", "\\")):
        raise CellProblem(
            "path", RejectCode.PATH_ESCAPES_MANIFEST_DIR, f"{show(raw_path, 200)} is an absolute path; {_ESCAPE_HINT}"
        )
    try:
        resolved = (base_dir / given).resolve()  # follows symlinks
    except (OSError, RuntimeError) as exc:  # symlink loops
        raise CellProblem(
            "path", RejectCode.UNREADABLE_FILE, f"{show(raw_path, 200)} cannot be resolved ({_short(exc)})"
        ) from None
    if not resolved.is_relative_to(base_dir):
        via = "resolves (through '..' or a symbolic link)"
        raise CellProblem(
            "path",
            RejectCode.PATH_ESCAPES_MANIFEST_DIR,
            f"{show(raw_path, 200)} {via} outside the manifest's folder; {_ESCAPE_HINT}",
        )
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
    ext = extension_of(resolved.name)
    if ext not in SUPPORTED_TYPES and ext not in IMAGE_TYPES:  # a photo is read, to say why it is not checked
        raise CellProblem(
            "path",
            RejectCode.UNSUPPORTED_TYPE,
            f"file type {ext or '(no extension)'!r} of {show(raw_path, 200)} is not supported; "
            f"supported: {', '.join(sorted(SUPPORTED_TYPES))}",
        )
    try:
        size = resolved.stat().st_size
    except OSError as exc:
        raise CellProblem(
            "path", RejectCode.UNREADABLE_FILE, f"{show(raw_path, 200)} cannot be read ({_os_reason(exc)})"
        ) from None
    if size == 0:
        raise CellProblem("path", RejectCode.EMPTY_DOCUMENT, f"file {show(raw_path, 200)} is empty (0 bytes)")
    if size > MAX_FILE_BYTES:
        raise CellProblem(
            "path",
            RejectCode.FILE_TOO_LARGE,
            f"file {show(raw_path, 200)} is {size} bytes, over the {MAX_FILE_BYTES} byte (50 MB) limit",
        )
    digest, words, read_as = _read(resolved, raw_path, ext, size)
    if words == 0:
        raise CellProblem("path", RejectCode.EMPTY_DOCUMENT, f"file {show(raw_path, 200)} has no extractable words")
    return resolved, size, digest, words, read_as


def _read(resolved: Path, raw_path: str, ext: str, size: int) -> tuple[str, int | None, str | None]:
    """Hash and count one file; every reading failure as the row's problem with its code."""
    if ext in IMAGE_TYPES and size > MULTIPART_MAX_BYTES:  # not read whole: its name says enough
        raise CellProblem("path", RejectCode.IMAGE_WITHOUT_TEXT, f"{show(raw_path, 200)}: {IMAGE}")
    try:
        if size <= MULTIPART_MAX_BYTES:
            return _hash_and_extract(resolved)
        counted = ext in (".txt", ".md")  # read as text by its name; the rest is sent as it is, unread
        return (*_hash_streamed(resolved, count=counted), ext if counted else None)
    except OSError as exc:
        raise CellProblem(
            "path", RejectCode.UNREADABLE_FILE, f"{show(raw_path, 200)} cannot be read ({_os_reason(exc)})"
        ) from None
    except NotMachineReadable as exc:  # its reason code and words: a photo, a scan, a password
        raise CellProblem("path", exc.reason, f"{show(raw_path, 200)}: {exc}") from None
    except UnsupportedFileType as exc:  # e.g. a .ppt, or a spreadsheet named .docx
        raise CellProblem("path", RejectCode.UNSUPPORTED_TYPE, f"{show(raw_path, 200)}: {exc}") from None
    except ExtractionError as exc:
        raise CellProblem("path", RejectCode.UNREADABLE_FILE, f"{show(raw_path, 200)}: {exc}") from None


def _hash_and_extract(path: Path) -> tuple[str, int, str | None]:
    """Small file: one read serves the hash, the word count (empty text → 0 words) and the type
    it is read as.

    Bytes already extracted (the same SHA-256) take their count, and what they were read as, from
    the active word store (``doccheck.extract.cache``): a rerun, or the batch re-read of this
    run, extracts nothing."""
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    known = word_cache.cached_words(digest)
    if known is not None:
        kind = word_cache.cached_read_as(digest)
        return digest, known, (read_as_named(path.name, kind) if kind else None)
    # The package's function, looked up when called: tests count the files read by patching it.
    found = extraction.extract(data, path.name)
    words = count_words(found.text) if found.text.strip() else 0
    word_cache.remember(digest, words, found.read_as)
    return digest, words, found.read_as


def _hash_streamed(path: Path, *, count: bool) -> tuple[str, int | None]:
    """Large file: hash in chunks; for plain text also count words across chunk borders.

    Decoding follows ``doccheck.extract`` (UTF-8, BOM tolerated, or BOM-marked UTF-16; NUL
    bytes refused) so that a large file is judged by the same rules as a small one.
    """
    digest = hashlib.sha256()
    decoder: codecs.IncrementalDecoder | None = None
    words = 0
    carry = ""
    with path.open("rb") as handle:
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
    return exc.strerror or type(exc).__name__


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200]
