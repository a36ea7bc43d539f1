"""Untrusted values (document ids, campaign names, messages, paths) as literal Markdown text.

Prefect renders markdown artifacts with a CommonMark/GFM renderer that also passes inline
HTML: an id such as ``![x](http://host/)`` would load an image from that host, ``<img ...>``
would become an element and ``[a](javascript:...)`` a link. :func:`escape_markdown`
backslash-escapes every ASCII punctuation character CommonMark lets one escape (so no
emphasis, link, image, code span, heading, list, table cell, entity or HTML tag can start),
the ``:`` and ``@`` escapes stop GFM's bare-URL and e-mail
autolinks, and line breaks and other control characters become spaces (a value stays on
its line / in its table cell).
"""

from __future__ import annotations

import re

# CommonMark: "Any ASCII punctuation character may be backslash-escaped".
_PUNCTUATION = re.compile(r"""([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])""")
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]")


def escape_markdown(value: object) -> str:
    """``value`` as text that renders literally in (GitHub-flavoured) Markdown, on one line."""
    text = _CONTROL.sub(" ", str(value))
    return _PUNCTUATION.sub(r"\\\1", text)


__all__ = ["escape_markdown"]
