"""File types a service refused as unsupported, remembered per service (issue 41).

Why: which types the service takes is not shown in the interface. A create refused 415 (or
422 naming the type) costs nothing, but a process that learnt it only in memory paid that
refusal again in every new process, once per document of the type. Kept here, by the
service's base URL, the next process sends such files as their text at once
(``doccheck.pipeline.sending._submitter``), and ``doccheck probe`` shows what was learnt and since when.
Not student data: a campaign's purge leaves it (no ``campaign`` or ``run_id`` column).

Plain functions taking the connection first; an extension is lower case with its dot.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, select

from doccheck.ledger._base import parse_time
from doccheck.ledger._bulk_sql import insert_absent
from doccheck.ledger._sqltypes import table_of
from doccheck.ledger._tables import RefusedTypeRow, utcnow

__all__ = ["refused_types", "remember_refused_type", "service_key"]

_T = table_of(RefusedTypeRow)


def service_key(base_url: str) -> str:
    """The service a refusal is kept for: its base URL without a trailing slash (scheme and host lower case)."""
    url = base_url.strip().rstrip("/")
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    host, slash, path = rest.partition("/")
    return f"{scheme.lower()}://{host.lower()}{slash}{path}"


def remember_refused_type(conn: Connection, base_url: str, extension: str, profile: str | None = None) -> bool:
    """Keep that the service at ``base_url`` refused ``extension`` files (the first time is kept).
    True when it was not known yet."""
    service, ext = service_key(base_url), extension.lower()
    known = conn.execute(select(_T.c.extension).where(_T.c.service == service, _T.c.extension == ext)).first()
    if known is not None:
        return False
    row = {"service": service, "extension": ext, "profile": profile, "refused_at": utcnow()}
    insert_absent(conn, _T, ("service", "extension"), [row])
    return True


def refused_types(conn: Connection, base_url: str) -> dict[str, datetime]:
    """The types the service at ``base_url`` refused, each with when it was first refused (UTC)."""
    stmt = select(_T.c.extension, _T.c.refused_at).where(_T.c.service == service_key(base_url))
    found: dict[str, datetime] = {}
    for ext, when in conn.execute(stmt):
        found[str(ext)] = parse_time(when) or utcnow()
    return dict(sorted(found.items()))
