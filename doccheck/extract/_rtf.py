"""The text of an RTF file (TextEdit, WordPad, Word's "Rich Text"), read by a bounded tokenizer.

What counts: the body text, footnotes where they are anchored, headers and footers, field
*results*; ``\\uN`` Unicode with its fallback characters skipped (``\\ucN``), ``\\'hh`` bytes in
the document's code page (``\\ansicpg``), paragraph, line, cell and tab marks as separators.
Not counted: font, colour, style, list and revision tables, document info, pictures and
embedded objects, field instructions, annotations (comments) and every ``{\\* ...}``
destination a reader does not know (that is what ``\\*`` is for).

Bounds: one pass over the bytes (a regex token at a time, no backtracking between tokens),
group nesting refused past the depth limit (the one XML uses), ``\\binN`` payloads skipped
within the file, and the text checked against the character limit as it grows. Why not the
striprtf package: the same approach in a regex with one flat skip list; it has no depth
limit, no code pages beyond cp1252 and is one more dependency for ~100 lines.
"""

from __future__ import annotations

import codecs
import re

from doccheck.errors import ExtractionError, ExtractionLimitExceeded
from doccheck.extract._read_limits import ExtractionLimits

_TOKEN = re.compile(
    rb"\\([a-zA-Z]{1,32})(-?\d{1,10})? ?|\\'([0-9a-fA-F]{2})|\\([^a-zA-Z'])|([{}])|([^\\{}\r\n]+)|[\r\n]+"
)
#: Destinations whose content is not text a reader sees.
_SKIP = frozenset(
    b"""fonttbl colortbl stylesheet info pict object objdata fldinst listtable listoverridetable
    revtbl rsidtbl generator xmlnstbl themedata colorschememapping datastore latentstyles filetbl mmathPr
    annotation atnid atnauthor atndate atnref sp nonshppict private userprops docvar template""".split()
)
_WORD_TEXT = {b"par": "\n", b"line": "\n", b"sect": "\n", b"page": "\n", b"row": "\n", b"cell": "\t",
              b"tab": "\t", b"emdash": "\u2014", b"endash": "\u2013", b"bullet": "\u2022", b"lquote": "\u2018",
              b"rquote": "\u2019", b"ldblquote": "\u201c", b"rdblquote": "\u201d", b"emspace": " ",
              b"enspace": " ", b"qmspace": " "}  # fmt: skip
_SYMBOL_TEXT = {b"~": "\xa0", b"_": "-", b"-": "", b"\\": "\\", b"{": "{", b"}": "}", b"\n": "\n", b"\r": "\n"}


def rtf_to_text(data: bytes, limits: ExtractionLimits) -> str:
    """Text of an RTF document (see module docstring), or :class:`ExtractionError` with the reason."""
    if data.lstrip(b"\xef\xbb\xbf\t\n\r ")[:5] != b"{\\rtf":
        raise ExtractionError("not an RTF file (missing {\\rtf header)")
    reader = _Reader(limits)
    reader.run(data)
    text = "".join(reader.out)
    # \uN gives UTF-16 code units: join surrogate pairs into their characters.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace").strip()


class _Reader:
    """State of one pass: the group stack (skip flag, ``\\uc`` count), output, pending code-page bytes."""

    def __init__(self, limits: ExtractionLimits) -> None:
        self.limits = limits
        self.out: list[str] = []
        self.chars = 0
        self.stack: list[tuple[bool, int]] = []
        self.skip = False
        self.uc = 1
        self.pending_skip = 0  # fallback characters still to drop after a \uN
        self.hex = bytearray()
        self.codec = "cp1252"

    def run(self, data: bytes) -> None:
        pos, end = 0, len(data)
        while pos < end:
            match = _TOKEN.match(data, pos)
            if match is None:  # a lone backslash at the end: nothing more to read
                break
            pos = match.end()
            word, arg, hexbyte, symbol, brace, text = match.groups()
            if hexbyte is not None:
                if self.pending_skip:
                    self.pending_skip -= 1
                elif not self.skip:
                    self.hex.append(int(hexbyte, 16))
                continue
            self._flush_hex()
            if word is not None:
                pos = self._control(word, arg, data, pos)
            elif brace is not None:
                self._brace(brace)
            elif symbol is not None:
                if symbol == b"*":
                    self.skip = True
                elif not self.skip:
                    self._emit(_SYMBOL_TEXT.get(symbol, ""))
            elif text is not None:
                self._text(text)
        self._flush_hex()

    def _brace(self, brace: bytes) -> None:
        if brace == b"{":
            self.stack.append((self.skip, self.uc))
            if len(self.stack) > self.limits.max_xml_depth:
                raise ExtractionLimitExceeded(f"the RTF file nests groups over {self.limits.max_xml_depth} levels deep")
        elif self.stack:
            self.skip, self.uc = self.stack.pop()
        self.pending_skip = 0

    def _control(self, word: bytes, arg: bytes | None, data: bytes, pos: int) -> int:
        number = int(arg) if arg is not None else None
        if word == b"bin":  # raw bytes follow: skip them, never tokenize them
            return min(len(data), pos + max(0, number or 0))
        if word in _SKIP:
            self.skip = True
        elif word == b"uc" and number is not None:
            self.uc = max(0, min(number, 10))
        elif word == b"u" and number is not None:
            if not self.skip:
                self._emit(chr((number + 65536 if number < 0 else number) & 0xFFFF) if number != 0 else "")
            self.pending_skip = self.uc
        elif word == b"ansicpg" and number is not None:
            self.codec = _codec(f"cp{number}")
        elif word == b"mac":
            self.codec = "mac_roman"
        elif not self.skip and word in _WORD_TEXT:
            self._emit(_WORD_TEXT[word])
        return pos

    def _text(self, text: bytes) -> None:
        if self.pending_skip:
            dropped = min(self.pending_skip, len(text))
            text = text[dropped:]
            self.pending_skip -= dropped
        if text and not self.skip:
            self._emit(text.decode(self.codec, "replace"))

    def _flush_hex(self) -> None:
        if self.hex:
            self._emit(bytes(self.hex).decode(self.codec, "replace"))
            self.hex.clear()

    def _emit(self, text: str) -> None:
        self.out.append(text)
        self.chars += len(text)
        if self.chars > self.limits.max_text_chars:
            raise ExtractionLimitExceeded(f"the RTF file holds over {self.limits.max_text_chars} characters of text")


def _codec(name: str) -> str:
    try:
        return codecs.lookup(name).name
    except LookupError:
        return "cp1252"
