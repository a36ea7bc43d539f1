"""Typed access to what SQLModel builds but does not declare to type checkers.

Why: ``Model.__table__`` exists at run time (SQLAlchemy declarative sets it) but SQLModel's
stubs do not declare it, so every Core statement on a model's table was an ``attr-defined``
error under mypy. One helper keeps the ``type: ignore`` in one place.
"""

from __future__ import annotations

from sqlalchemy import Table
from sqlmodel import SQLModel


def table_of(model: type[SQLModel]) -> Table:
    """The Core ``Table`` of a SQLModel table class (for Core inserts/updates on the hot path)."""
    table: Table = model.__table__  # type: ignore[attr-defined]
    return table
