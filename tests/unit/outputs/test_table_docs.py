"""docs/tables.md is what the schemas say: regenerate it when a column is added or changed."""

from __future__ import annotations

from pathlib import Path

from doccheck.outputs.table_docs import render

ROOT = Path(__file__).resolve().parents[3]


def test_docs_tables_md_matches_the_schemas() -> None:
    page = (ROOT / "docs" / "tables.md").read_text(encoding="utf-8")
    assert page == render(), "docs/tables.md is stale: python -m doccheck.outputs.table_docs > docs/tables.md"
