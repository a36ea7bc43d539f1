"""The planner's statistics brought up to date after a run's bulk writes (PostgreSQL).

Why: a term's run writes 100,000 rows of ``documents`` (and, the first time, of ``submissions``,
``outcomes`` and ``check_costs``) in a minute or two, then at once reads them back grouped by
run for its summary, its reports and its digest. PostgreSQL's autovacuum analyses a table once a
tenth of it has changed, but only at its next pass (up to a minute later): until then the planner
believes the new run has no documents and picks nested loops over 100,000 rows. Measured on a
100,000-document rerun: the summary's failures query took 2.0 s before the pass and 2.7 ms after,
so the same rerun took seconds more or less depending on whether autovacuum had come by. Here the
run does at once what autovacuum would do at its next pass, on the tables that crossed its own
threshold. SQLite's planner keeps no such statistics unless asked (``ANALYZE``), so nothing to do.
"""

from __future__ import annotations

import logging

from sqlalchemy import Engine, text
from sqlalchemy.exc import SQLAlchemyError

__all__ = ["refresh_statistics"]

log = logging.getLogger("doccheck.ledger")

#: The tables a run's summary, reports and digest join by run (the ones a run writes in bulk).
RUN_TABLES = ("documents", "rejections", "submissions", "outcomes", "check_costs")
#: autovacuum's own rule (its defaults): analyse once more rows changed than 50 + 10% of the table.
_THRESHOLD_ROWS = 50
_THRESHOLD_SHARE = 0.1

_CHANGED = text(
    "SELECT relname, n_mod_since_analyze, n_live_tup FROM pg_stat_user_tables "
    "WHERE schemaname = current_schema() AND relname = ANY(:tables)"
)


def refresh_statistics(engine: Engine) -> list[str]:
    """``ANALYZE`` the run tables whose rows changed past autovacuum's threshold since their last
    analysis; returns their names. PostgreSQL only (elsewhere: nothing, ``[]``). A failure (a role
    that does not own the tables is skipped by PostgreSQL itself) never fails the run."""
    if engine.dialect.name != "postgresql":
        return []
    try:
        with engine.begin() as conn:
            changed = conn.execute(_CHANGED, {"tables": list(RUN_TABLES)}).tuples().all()
            stale = [name for name, modified, live in changed
                     if modified > _THRESHOLD_ROWS + _THRESHOLD_SHARE * live]  # fmt: skip
            if stale:
                conn.execute(text("ANALYZE " + ", ".join(f'"{name}"' for name in sorted(stale))))
    except SQLAlchemyError as exc:
        log.debug("planner statistics not refreshed: %s", type(exc).__name__)
        return []
    return sorted(stale)
