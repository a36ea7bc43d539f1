"""``column IN (values)`` as each database runs it best: ``= ANY(:array)`` on PostgreSQL.

Why: the report's reads look documents, keys and checks up 500-1,000 at a time. An ``IN`` list
of 1,000 values is a new ~10 KB statement text each time: psycopg neither caches its parsing
nor prepares it (texts over 4 KB are not kept), and the server parses and plans it again. A
100,000-document rerun on PostgreSQL spent ~18 s of its 46 s waiting on such lookups. ``=
ANY(:array)`` is one short text whatever the count, parsed once and prepared, the values sent as
one array parameter (the submit path's fixed statements do the same, ``_bulk_sql.keyed``).
SQLite has no arrays either, and its ``IN`` list costs on our side: SQLAlchemy renders an expanding
list of 1,000 values as 1,000 bound names, every time (~1.5 s of a 100,000-document rerun's
reports, issue 49). There the values go as ONE JSON text, ``IN (SELECT value FROM json_each(:values))``:
one short statement, compiled once and cached, which SQLite answers from the same index.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from sqlalchemy import any_, bindparam, func, literal_column, select
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import Session
from sqlalchemy.sql import Select
from sqlalchemy.sql.elements import ColumnElement

__all__ = ["one_of"]


def one_of(column: Any, values: Iterable[Any], on: Engine | Connection | Session) -> ColumnElement[bool]:
    """``column IN (values)``: ``column = ANY(:values)`` when ``on`` (an engine, a connection or a
    session) speaks PostgreSQL, ``column IN (SELECT value FROM json_each(:values))`` on SQLite when
    the values are strings (ids, keys), else a plain ``IN`` list."""
    values = list(values)
    dialect = on.get_bind().dialect if isinstance(on, Session) else on.dialect
    if dialect.name == "postgresql":
        clause: ColumnElement[bool] = column == any_(bindparam(None, values, type_=postgresql.ARRAY(column.type)))
        return clause
    if dialect.name == "sqlite" and all(isinstance(v, str) for v in values):
        listed: Select[Any] = select(literal_column("value")).select_from(
            func.json_each(bindparam(None, json.dumps(values)))
        )
        return column.in_(listed)  # type: ignore[no-any-return]
    return column.in_(values)  # type: ignore[no-any-return]
