"""A DataFrame as a manifest: which column plays which part, and the rows as a JSONL file.

Why a module of its own: the notebook API validates a DataFrame's rows exactly like a
manifest's (``doccheck.sources.manifest``), so it writes them as one; choosing the columns
and converting the cells is that one job, apart from running the checks (:mod:`.api`).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pandas is imported lazily: `import doccheck` stays light
    import pandas as pd

__all__ = [
    "ID_COLUMN",
    "RESERVED_COLUMNS",
    "Columns",
    "json_value",
    "manifest_rows",
    "resolve_columns",
    "write_manifest",
]

# The manifest's column names (docs/manifest.md): the defaults for a DataFrame's columns.
ID_COLUMN, TEXT_COLUMN, PATH_COLUMN, PRODUCTS_COLUMN, NAME_COLUMN = "document_id", "text", "path", "products", "name"
RESERVED_COLUMNS = (ID_COLUMN, TEXT_COLUMN, PATH_COLUMN, PRODUCTS_COLUMN, NAME_COLUMN)


def json_value(value: Any) -> Any:
    """A cell as JSON: missing values (None, NaN, NA) are null; lists stay lists; other
    non-JSON scalars (numpy numbers, timestamps) become their string."""
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    try:
        import pandas as pd

        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    if isinstance(value, (str, bool, int, float)):
        return value
    return str(value)


@dataclass(frozen=True)
class Columns:
    """Which DataFrame column plays which manifest part (None: not used)."""

    id: str
    text: str | None
    path: str | None
    products: str | None
    name: str | None
    metadata: tuple[str, ...]


def resolve_columns(
    df: pd.DataFrame,
    *,
    id_column: str,
    text_column: str | None,
    path_column: str | None,
    products_column: str | None,
    name_column: str | None,
    metadata_columns: Sequence[str],
) -> Columns:
    """The columns to read, the manifest's own names (``document_id``, ``text``, ``path``,
    ``products``, ``name``) being the defaults. Raises ``ValueError`` naming the fix."""
    columns = [str(c) for c in df.columns]
    listing = ", ".join(columns) or "none"
    if id_column not in columns:
        raise ValueError(
            f"the DataFrame has no {id_column!r} column: pass id_column='<the column of unique ids>' "
            f"(columns: {listing})"
        )
    if text_column is None and path_column is None:
        text_column = TEXT_COLUMN if TEXT_COLUMN in columns else None
        path_column = PATH_COLUMN if PATH_COLUMN in columns else None
        if text_column is None and path_column is None:
            raise ValueError(
                "no column of texts or file paths: name one with text_column='...' or path_column='...', "
                f"or call it 'text' or 'path' (columns: {listing})"
            )
    if products_column is None and PRODUCTS_COLUMN in columns:
        products_column = PRODUCTS_COLUMN
    if name_column is None and NAME_COLUMN in columns:
        name_column = NAME_COLUMN
    given = {"text_column": text_column, "path_column": path_column, "products_column": products_column,
             "name_column": name_column}  # fmt: skip
    for arg, column in given.items():
        if column is not None and column not in columns:
            raise ValueError(f"{arg}={column!r} is not a column of the DataFrame (columns: {listing})")
    reserved = {id_column, *(c for c in given.values() if c)} | set(RESERVED_COLUMNS)
    for column in metadata_columns:
        if column not in columns:
            raise ValueError(f"metadata column {column!r} is not a column of the DataFrame (columns: {listing})")
        if column in reserved:
            raise ValueError(f"metadata column {column!r} is also a manifest column; rename it first")
    return Columns(id_column, text_column, path_column, products_column, name_column, tuple(metadata_columns))


def manifest_rows(df: pd.DataFrame, columns: Columns, *, base_dir: Path) -> list[dict[str, Any]]:
    """The DataFrame as manifest rows (``document_id``, ``text`` | ``path``, ...)."""
    rows: list[dict[str, Any]] = []
    for record in df.to_dict(orient="records"):
        row: dict[str, Any] = {"document_id": json_value(record[columns.id])}
        if row["document_id"] is not None and not isinstance(row["document_id"], str):
            row["document_id"] = str(row["document_id"])
        if columns.text is not None:
            row["text"] = json_value(record[columns.text])
        if columns.path is not None:
            raw = json_value(record[columns.path])
            if isinstance(raw, str) and raw.strip() and os.path.isabs(raw.strip()):
                # absolute paths inside base_dir become relative; others are rejected by validation
                try:
                    raw = os.path.relpath(raw.strip(), base_dir)
                except ValueError:
                    pass
            row["path"] = raw
        if columns.products is not None:
            row["products"] = json_value(record[columns.products])
        if columns.name is not None:
            row["name"] = json_value(record[columns.name])
        for column in columns.metadata:
            value = json_value(record[column])
            row[column] = None if value is None else str(value)
        rows.append(row)
    return rows


def write_manifest(rows: list[dict[str, Any]], *, base_dir: Path, needs_base: bool) -> str:
    """The rows as a temporary JSONL manifest (line N = row N), validated like any manifest.

    With a path column it is a hidden file in ``base_dir`` (paths are relative to it); the
    caller removes it when the run is over."""
    folder = base_dir if needs_base else Path(tempfile.gettempdir())
    handle, name = tempfile.mkstemp(prefix=".doccheck-notebook-", suffix=".jsonl", dir=folder)
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")  # ASCII escapes: a lone surrogate reaches validation
    return name
