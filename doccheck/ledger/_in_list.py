"""``column IN (values)`` as each database runs it best: ``= ANY(:array)`` on PostgreSQL.

Why: the report's reads look documents, keys and checks up 500-1,000 at a time. An ``IN`` list
of 1,000 values is a new ~10 KB statement text each time: psycopg neither caches its parsing
nor prepares it (texts over 4 KB are not kept), and the server parses and plans it again. A
100,000-document rerun on PostgreSQL spent ~18 s of its 46 s waiting on such lookups. ``=
ANY(:array)`` is one short text whatever the count, parsed once and prepared, the values sent as
one array parameter (the submit path's fixed statements do the same, ``_bulk_sql.keyed``).
SQLite keeps ``IN`` (no arrays; its parsing is local and cheap).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import any_, bindparam
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

__all__ = ["one_of"]


def one_of(column: Any, values: Iterable[Any], on: Engine | Connection | Session) -> ColumnElement[bool]:
    """``column IN (values)``, or ``column = ANY(:values)`` when ``on`` (an engine, a connection or
    a session) speaks PostgreSQL."""
    values = list(values)
    dialect = on.get_bind().dialect if isinstance(on, Session) else on.dialect
    if dialect.name == "postgresql":
        clause: ColumnElement[bool] = column == any_(bindparam(None, values, type_=postgresql.ARRAY(column.type)))
        return clause
    return column.in_(values)  # type: ignore[no-any-return]
