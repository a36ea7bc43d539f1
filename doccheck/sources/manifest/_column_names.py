"""Column names: trimmed, reserved names matched regardless of case, duplicates refused.

Spreadsheets and LMS exports write ``Path``, ``Document_ID`` or `` document_id ``; those
are the reserved columns, so they are read as such (a metadata column keeps its name as
written, because ``--metadata-columns`` names it). Two headers that end up with the same
name are ambiguous and refused for the whole file.
"""

from __future__ import annotations

from doccheck.errors import ManifestError

__all__ = ["RESERVED_COLUMNS", "canonical_column", "canonical_columns", "header_hint"]

#: Columns with a meaning of their own; every other column is candidate metadata.
RESERVED_COLUMNS: frozenset[str] = frozenset({"document_id", "path", "text", "name", "products"})


def canonical_column(name: object) -> str:
    """``name`` trimmed; a reserved name in any letter case becomes its lower-case form."""
    text = str(name).strip()
    folded = text.casefold()
    return folded if folded in RESERVED_COLUMNS else text


def canonical_columns(source: object, names: list[str]) -> list[str]:
    """Canonical names of a header, in order; two names that collide are a :class:`ManifestError`."""
    columns = [canonical_column(n) for n in names]
    first: dict[str, str] = {}
    for written, column in zip(names, columns, strict=True):
        if not column:
            continue
        if column in first:
            was = first[column]
            how = "" if was.strip() == str(written).strip() else f" (as {was.strip()!r} and {str(written).strip()!r})"
            raise ManifestError(f"manifest {source}: column {column!r} appears more than once in the header{how}")
        first[column] = written
    return columns


def header_hint(columns: list[str]) -> str:
    """A sentence naming the fix when a header without ``document_id`` looks mis-delimited."""
    if len(columns) == 1:
        only = columns[0]
        for sep, what in ((";", "semicolon"), ("\t", "tab")):
            if sep in only and "document_id" in [canonical_column(c) for c in only.split(sep)]:
                return (
                    f"; the header is one column holding {what}s, so the file looks {what}-separated "
                    "(Excel writes ';' where the decimal separator is a comma): save it comma-separated, "
                    "e.g. Excel's 'CSV UTF-8 (Comma delimited)'"
                )
    return ""
