"""Word 97-2003 (.doc) text through olefile and the Word piece table; OLE directory names for sniffing.

Why this reader, not antiword or catdoc (``docs/extraction.md``): it is pure Python (olefile,
BSD, kept since 2005) running in the same bounded worker as every other parser, so a hostile
file meets the same time, CPU and memory limits and can at worst raise an exception; the two
C tools have a record of memory-safety bugs in exactly this parsing (antiword CVE-2014-8123,
a buffer overflow on crafted files; catdoc CVE-2017-11110, a heap underflow) and would be one
more runtime system dependency for CI and every user's machine to install.

A .doc is an OLE2 compound file. Its ``WordDocument`` stream starts with the FIB, which says
which table stream (``0Table``/``1Table``) holds the CLX, whose piece table maps character
positions to byte ranges of ``WordDocument`` (8-bit cp1252 or UTF-16 pieces). The text is
then cut into its stories by the FIB's character counts; kept: the main document, footnotes,
headers/footers, endnotes and text boxes; left out like in a .docx: annotations (comments) and
field codes (between the 0x13 and 0x14 marks; field *results* kept).

Bounds: olefile reads a sector chain for at most as many sectors as the file has (a FAT loop
cannot make it read more than the file's size), every stream we read is refused if it
declares more bytes than the file holds or its chain revisits a sector, and the piece count
and text size are checked before the text is assembled.
"""

from __future__ import annotations

import struct
from io import BytesIO
from typing import Any

from doccheck.errors import ExtractionError, ExtractionLimitExceeded, PasswordProtected, UnsupportedFileType
from doccheck.extract._read_limits import ExtractionLimits

_LABEL = ".doc"
_ASK = "ask the student for a copy without a password"
_WORD_IDENT = 0xA5EC
_F_ENCRYPTED = 0x0100
_F_WHICH_TABLE = 0x0200
_F_OBFUSCATED = 0x8000
#: Word 97 and later (nFib 193+); Word 6/95 files have another FIB and 8-bit text without a piece table.
_MIN_NFIB = 0xC1
#: Index of fcClx/lcbClx among the FIB's (fc, lcb) pairs.
_CLX_PAIR = 33
#: FIB character counts, in order: main, footnotes, headers, macro (unused), annotations, endnotes,
#: text boxes, header text boxes. True: a story a reader sees.
_STORIES = (True, True, True, False, False, True, True, True)
_END_OF_CHAIN = 0xFFFFFFFE
_FREE_SECTOR = 0xFFFFFFFF

#: Word's control characters → text (None: dropped).
_CONTROL = str.maketrans({
    "\r": "\n", "\x07": "\t", "\x0b": "\n", "\x0c": "\n", "\x0e": "\n", "\x1e": "-", "\x1f": None,
    "\x01": None, "\x02": None, "\x03": None, "\x04": None, "\x05": None, "\x08": None,
})  # fmt: skip


def stream_names(data: bytes) -> list[str]:
    """Names of the streams at the root of an OLE2 file (``WordDocument``, ``EncryptedPackage``...)."""
    ole = _open(data)
    try:
        return [path[0] for path in ole.listdir(streams=True, storages=False) if len(path) == 1]
    finally:
        ole.close()


def doc_to_text(data: bytes, limits: ExtractionLimits) -> str:
    """Text of a Word 97-2003 document (see module docstring), or :class:`ExtractionError` with the reason."""
    ole = _open(data)
    try:
        word = _stream(ole, "WordDocument", len(data))
        fib = _Fib(word)
        table = _stream(ole, fib.table_stream, len(data))
        text = _text(word, fib, table, limits)
    except ExtractionError:
        raise
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - olefile and struct raise many kinds on damaged files
        raise ExtractionError(f"not a readable .doc file ({type(exc).__name__})") from None
    finally:
        ole.close()
    return text


def _open(data: bytes) -> Any:
    import olefile

    try:
        return olefile.OleFileIO(BytesIO(data), raise_defects=olefile.DEFECT_INCORRECT)
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - olefile raises OSError, struct.error, IndexError...
        raise ExtractionError(f"not a readable OLE2 (Office 97-2003) file ({type(exc).__name__})") from None


def _stream(ole: Any, name: str, file_size: int) -> bytes:
    """One root stream's bytes, after its size and sector chain are checked."""
    if not ole.exists(name):
        raise ExtractionError(f"not a readable .doc file (no {name} stream)")
    entry = ole.direntries[ole._find(name)]
    if entry.size > file_size:
        raise ExtractionLimitExceeded(
            f"the .doc's {name} stream declares {entry.size} bytes, more than the file's {file_size}"
        )
    if entry.size >= ole.minisectorcutoff:
        _check_chain(ole.fat, entry.isectStart, name)
    else:
        _check_chain(ole.fat, ole.root.isectStart, "mini stream")
    with ole.openstream(name) as handle:
        return bytes(handle.read())


def _check_chain(fat: Any, start: int, name: str) -> None:
    """Refuse a sector chain that visits a sector twice (a FAT loop) or leaves the FAT."""
    seen: set[int] = set()
    sector = start
    while sector not in (_END_OF_CHAIN, _FREE_SECTOR):
        if sector in seen:
            raise ExtractionLimitExceeded(f"the .doc's {name} sector chain loops (a damaged or hostile OLE file)")
        if sector >= len(fat):
            raise ExtractionError(f"not a readable .doc file ({name} points past the end of the file)")
        seen.add(sector)
        sector = fat[sector] & 0xFFFFFFFF


class _Fib:
    """The parts of the File Information Block this reader needs."""

    def __init__(self, word: bytes) -> None:
        if len(word) < 0x200 or _u16(word, 0) != _WORD_IDENT:
            raise ExtractionError("not a readable .doc file (no Word file information block)")
        nfib = _u16(word, 2)
        flags = _u16(word, 0x0A)
        if flags & _F_ENCRYPTED and not flags & _F_OBFUSCATED:
            raise PasswordProtected(f"password-protected Word document: {_ASK}")
        if flags & _F_ENCRYPTED:
            raise PasswordProtected(f"password-protected Word document (XOR obfuscation): {_ASK}")
        if nfib < _MIN_NFIB:
            raise UnsupportedFileType("unsupported format: a Word 6/95 .doc (save it as .docx or PDF)")
        self.table_stream = "1Table" if flags & _F_WHICH_TABLE else "0Table"
        csw = _u16(word, 32)
        lw_at = 34 + 2 * csw + 2
        cslw = _u16(word, lw_at - 2)
        self.ccps = [_u32(word, lw_at + 12 + 4 * i) for i in range(len(_STORIES))]
        pairs = _u16(word, lw_at + 4 * cslw)
        if pairs <= _CLX_PAIR:
            raise ExtractionError("not a readable .doc file (the FIB has no piece table)")
        clx_at = lw_at + 4 * cslw + 2 + 8 * _CLX_PAIR
        self.fc_clx, self.lcb_clx = _u32(word, clx_at), _u32(word, clx_at + 4)


def _text(word: bytes, fib: _Fib, table: bytes, limits: ExtractionLimits) -> str:
    """The stories a reader sees, control characters and field codes removed."""
    if fib.fc_clx + fib.lcb_clx > len(table):
        raise ExtractionError("not a readable .doc file (the piece table lies outside its stream)")
    total = sum(fib.ccps)
    if total > limits.max_text_chars:
        raise ExtractionLimitExceeded(f"the .doc holds over {limits.max_text_chars} characters of text")
    chars = _pieces(word, table[fib.fc_clx : fib.fc_clx + fib.lcb_clx], total + 1)
    stories, at = [], 0
    for count, seen in zip(fib.ccps, _STORIES, strict=True):
        if seen:
            stories.append(_without_field_codes(chars[at : at + count]).translate(_CONTROL).strip())
        at += count
    return "\n".join(s for s in stories if s)


def _pieces(word: bytes, clx: bytes, wanted: int) -> str:
    """Characters 0..``wanted`` of the document through the piece table."""
    at = 0
    while at < len(clx) and clx[at] == 0x01:  # Prc: property modifiers, skipped
        at += 3 + _u16(clx, at + 1)
    if at >= len(clx) or clx[at] != 0x02:
        raise ExtractionError("not a readable .doc file (no piece table in the CLX)")
    size = _u32(clx, at + 1)
    plc = clx[at + 5 : at + 5 + size]
    count = (len(plc) - 4) // 12
    if count <= 0:
        raise ExtractionError("not a readable .doc file (an empty piece table)")
    cps = struct.unpack_from(f"<{count + 1}I", plc, 0)
    out: list[str] = []
    have = 0
    for i in range(count):
        start, end = cps[i], min(cps[i + 1], wanted)
        if end <= start or have >= wanted:
            continue
        fc = _u32(plc, 4 * (count + 1) + 8 * i + 2)
        n = end - start
        if fc & 0x40000000:  # 8-bit piece (cp1252) at fc/2
            offset = (fc & 0x3FFFFFFF) // 2
            out.append(word[offset : offset + n].decode("cp1252", "replace"))
        else:
            out.append(word[fc : fc + 2 * n].decode("utf-16-le", "replace"))
        have += n
    return "".join(out)


def _without_field_codes(text: str) -> str:
    """Drop field instructions (0x13 ... 0x14), keep results (0x14 ... 0x15), nested fields too."""
    if "\x13" not in text:
        return text
    out: list[str] = []
    stack: list[bool] = []  # per open field: True while in its instruction part
    for ch in text:
        if ch == "\x13":
            stack.append(True)
        elif ch == "\x14" and stack:
            stack[-1] = False
        elif ch == "\x15" and stack:
            stack.pop()
        elif not any(stack):
            out.append(ch)
    return "".join(out)


def _u16(data: bytes, at: int) -> int:
    return int(struct.unpack_from("<H", data, at)[0])


def _u32(data: bytes, at: int) -> int:
    return int(struct.unpack_from("<I", data, at)[0])
