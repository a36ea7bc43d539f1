"""Plain text and HTML: decoding rules and the visible text of a page.

Plain text is decoded strictly (UTF-8, BOM tolerated, or BOM-marked UTF-16; never guessed)
so that the word count the client predicts is the one the service bills. HTML keeps what a
browser shows: script, style, head and template content are not text.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from doccheck.errors import ExtractionError


def decode_text(data: bytes) -> str:
    """UTF-8 (BOM tolerated) or BOM-marked UTF-16; anything else is refused, not guessed."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise ExtractionError(f"invalid UTF-16 text at byte {exc.start}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ExtractionError(f"not UTF-8 text (invalid byte at offset {exc.start})") from None
    if "\x00" in text:
        raise ExtractionError("text file contains NUL bytes (binary data?)")
    return text


class _TextCollector(HTMLParser):
    """Collects visible text, skipping script/style, with breaks at block elements."""

    _SKIP = {"script", "style", "head", "noscript", "template"}
    _BLOCK = {"p", "div", "br", "li", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "td", "th", "section",
              "article", "header", "footer", "blockquote", "pre", "dt", "dd", "table", "ul", "ol",
              "figcaption", "caption", "hr", "nav", "aside", "main"}  # fmt: skip

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self._skip_depth += 1
        elif tag in self._BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP and self._skip_depth:
            self._skip_depth -= 1
        elif tag in self._BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip_depth:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    """Visible text of an HTML page, block elements on their own lines."""
    parser = _TextCollector()
    try:
        parser.feed(html)
        parser.close()
    except Exception as exc:  # noqa: BLE001 - html.parser is lenient; this is a last resort
        raise ExtractionError(f"unreadable HTML: {type(exc).__name__}") from None
    text = "".join(parser.parts)
    return re.sub(r"[ \t]+", " ", re.sub(r"\n\s*\n+", "\n\n", text)).strip()
