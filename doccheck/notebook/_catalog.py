"""``doccheck.catalog()``: the term's DuckDB catalog, opened read-only, in one call.

A thin door onto ``doccheck.outputs.connect_catalog`` so that a notebook's first line needs neither
the catalog's file name nor, for a bucket (``doccheck.catalog("s3://bucket/reports")``), DuckDB's
``httpfs``: the views read the store through its fsspec filesystem."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from doccheck.outputs import connect_catalog

if TYPE_CHECKING:
    import duckdb

__all__ = ["catalog"]


def catalog(out_dir: str | os.PathLike[str] = "reports") -> duckdb.DuckDBPyConnection:
    """The catalog of ``out_dir`` (the runs' ``--out`` folder or URL), read-only: ``.sql(...)`` away
    from a term's numbers, e.g. ``doccheck.catalog().sql("SELECT campaign, count(*) FROM
    documents GROUP BY ALL")``. Raises ``CatalogError`` when no run wrote one there yet."""
    return connect_catalog(os.fspath(out_dir))
