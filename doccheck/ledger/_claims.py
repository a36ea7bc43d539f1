"""Ownership of an idempotency key in flight: a lease in the ledger, taken by compare-and-set.

Why: two runs of one campaign on one ledger (a schedule firing while someone reruns by
hand) must never send the same key at the same time. Without ownership the loser of a
race could record ``failed`` over a billed check, or take a second waiting-upload slot.

How: one row per key in ``submission_claims``. Taking a claim is a single conditional
``UPDATE … WHERE owner IS NULL OR owner = me OR expires_at < now`` whose rowcount says who
won (an ``INSERT`` for a key never claimed; the primary key makes a concurrent insert
fail). No read-then-write, so it is atomic on SQLite (``BEGIN IMMEDIATE``) and on
PostgreSQL (read committed: a second ``UPDATE`` of the row waits for the first and
re-evaluates its ``WHERE``). The lease expires, so a SIGKILLed owner's keys become free
after ``lease_seconds``; a live owner renews its claims well before that. A holder that
ran on this same host and whose process is gone is recognised at once (owner ids are
``host:pid:random``) and its claim taken over by a compare-and-set on its id.

The same row remembers whether an earlier request may have reached the service without
its answer being recorded (``in_doubt``): the submitter reconciles such a key with the
service's list of checks before it sends it again (see ``doccheck.pipeline.sending._reconcile``).

Times are this machine's UTC clock: runs on different machines need clocks within a
small fraction of the lease (NTP is plenty).
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import and_, func, insert, or_, select, update
from sqlalchemy.engine import Connection

from doccheck.domain import SubmissionState
from doccheck.ledger._sqltypes import table_of
from doccheck.ledger._tables import ClaimRow, SubmissionRow, utcnow

#: Seconds a claim lasts without renewal. Long against one request (the client gives up on
#: a request after 60 s) so a live owner never loses a claim; short enough that a dead
#: owner's keys are picked up by the next run within minutes.
DEFAULT_LEASE_SECONDS = 120.0

_T = table_of(ClaimRow)


def new_owner_id() -> str:
    """A claim owner id unique to this submitter: host, pid and a random part."""
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def owner_is_dead_here(owner: str) -> bool:
    """True when ``owner`` ran on this host and its process no longer exists.

    Lets a rerun on the same machine take over a crashed run's keys at once instead of
    waiting out the lease. Any doubt (another host, a pid that exists, no permission to
    ask) answers False: then only the lease decides.
    """
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname()[:60] or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # exists but not ours (EPERM), or anything unexpected
        return False
    return False


@dataclass(frozen=True)
class Doubt:
    """A key whose earlier request may have reached the service (no check id recorded)."""

    idempotency_key: str
    first_sent_at: datetime | None
    sent_by: str | None
    #: No earlier than the last send (the claim's last change): the check, if made, is older.
    last_sent_at: datetime | None = None


# -- the claims' statements, one transaction each (``Ledger.claim`` and its neighbours open it) ----
#
# Why a Connection first and not a Session: each of these is one Core compare-and-set (or a read of
# two tables) whose rowcount IS the answer, with no ORM row involved; ``Connection.execute`` returns
# that rowcount, and the grouped claims of a round (:mod:`doccheck.ledger._bulk`) run the same
# statements on the round's Connection. A claim is several transactions on purpose (an insert that
# loses a race fails with ``IntegrityError``, which on PostgreSQL aborts its transaction), so the
# sequence lives in :meth:`~doccheck.ledger._facade.Ledger.claim`, one ``engine.begin()`` per step.


def take(conn: Connection, key: str, owner: str, now: datetime, expires: datetime) -> bool:
    """Take (or keep) an existing claim row that is free, ``owner``'s, or expired: one
    conditional ``UPDATE`` whose rowcount says whether ``owner`` won."""
    return bool(
        conn.execute(
            update(_T)
            .where(
                _T.c.idempotency_key == key,
                or_(_T.c.owner.is_(None), _T.c.owner == owner, _T.c.expires_at < now),
            )
            .values(owner=owner, expires_at=expires, updated_at=now)
        ).rowcount
    )


def add(conn: Connection, key: str, owner: str, now: datetime, expires: datetime) -> None:
    """The first claim of a key never claimed; ``IntegrityError`` when its row exists (another
    owner holds it, or won the insert race): the primary key decides."""
    conn.execute(
        insert(_T).values(idempotency_key=key, owner=owner, expires_at=expires, in_doubt=False, updated_at=now)
    )


def holder(conn: Connection, key: str) -> str | None:
    """Who holds ``key``'s claim row now (None: nobody, or no row)."""
    found = conn.execute(select(_T.c.owner).where(_T.c.idempotency_key == key)).scalar()
    return None if found is None else str(found)


def take_from(conn: Connection, key: str, held_by: str, owner: str, expires: datetime) -> bool:
    """Take ``key`` from ``held_by`` (a holder that died on this host): compare-and-set on its id."""
    return bool(
        conn.execute(
            update(_T)
            .where(_T.c.idempotency_key == key, _T.c.owner == held_by)
            .values(owner=owner, expires_at=expires, updated_at=utcnow())
        ).rowcount
    )


def renew(conn: Connection, keys: list[str], owner: str, lease_seconds: float = DEFAULT_LEASE_SECONDS) -> int:
    """Extend ``owner``'s claims on ``keys``; returns how many it still holds."""
    now = utcnow()
    held = 0
    for i in range(0, len(keys), 500):
        held += conn.execute(
            update(_T)
            .where(_T.c.idempotency_key.in_(keys[i : i + 500]), _T.c.owner == owner)
            .values(expires_at=now + timedelta(seconds=lease_seconds), updated_at=now)
        ).rowcount
    return held


def release(conn: Connection, key: str, owner: str, *, settled: bool = False) -> None:
    """Give ``key`` back (only if ``owner`` still holds it); ``settled`` also clears
    ``in_doubt`` in the same statement (the hot path: one transaction, not two)."""
    values: dict[str, object] = {"owner": None, "expires_at": None, "updated_at": utcnow()}
    if settled:
        values["in_doubt"] = False
    conn.execute(update(_T).where(_T.c.idempotency_key == key, _T.c.owner == owner).values(**values))


def mark_sending(conn: Connection, key: str, owner: str) -> bool:
    """Write, BEFORE a create-check request, that it may reach the service.

    Sets ``first_sent_at`` once (the reconciliation pages back to it) and ``in_doubt``.
    Returns False when ``owner`` no longer holds the claim: then it must not send.
    """
    now = utcnow()
    return bool(
        conn.execute(
            update(_T)
            .where(_T.c.idempotency_key == key, _T.c.owner == owner)
            .values(
                in_doubt=True,
                sent_by=owner,
                first_sent_at=func.coalesce(_T.c.first_sent_at, now),
                updated_at=now,
            )
        ).rowcount
    )


def settle(conn: Connection, key: str) -> None:
    """The service answered for sure (a check, or a refusal): nothing left in doubt."""
    conn.execute(update(_T).where(_T.c.idempotency_key == key).values(in_doubt=False, updated_at=utcnow()))


def doubt(conn: Connection, key: str) -> Doubt | None:
    """Whether an earlier request for ``key`` may have reached the service unrecorded.

    Also covers a ledger written before claims existed: a ``submitting``/``uploading``
    row without a check id is in doubt since it was created.
    """
    s = table_of(SubmissionRow)
    sub = conn.execute(
        select(s.c.state, s.c.check_id, s.c.created_at, s.c.updated_at).where(s.c.idempotency_key == key)
    ).first()
    claim = conn.execute(
        select(_T.c.in_doubt, _T.c.first_sent_at, _T.c.sent_by, _T.c.updated_at).where(_T.c.idempotency_key == key)
    ).first()
    if sub is not None and sub.check_id:
        return None
    if claim is not None and claim.first_sent_at is not None:
        if claim.in_doubt:
            return Doubt(key, claim.first_sent_at, claim.sent_by, claim.updated_at)
        return None
    if sub is not None and sub.state in (SubmissionState.SUBMITTING, SubmissionState.UPLOADING):
        return Doubt(key, sub.created_at, None, sub.updated_at)
    return None


def first_sends_of_checks(conn: Connection, check_ids: list[str]) -> dict[str, datetime]:
    """``check id → when its key's request first left this side`` for the checks the ledger
    knows (a lower bound of when the service made them, on this side's clock): what lets
    a walk of the service's list prove its order (:mod:`doccheck.pipeline.sending._reconcile`)."""
    s = table_of(SubmissionRow)
    sent = func.coalesce(_T.c.first_sent_at, s.c.created_at)
    stmt = (
        select(s.c.check_id, sent)
        .select_from(s.outerjoin(_T, _T.c.idempotency_key == s.c.idempotency_key))
        .where(s.c.check_id.in_(check_ids))
    )
    return {check_id: when for check_id, when in conn.execute(stmt).all() if when is not None}


def holders(conn: Connection, keys: list[str]) -> dict[str, str]:
    """``key → owner`` for the keys currently held by a live owner (reports, tests)."""
    now = utcnow()
    found: dict[str, str] = {}
    for i in range(0, len(keys), 500):
        rows = conn.execute(
            select(_T.c.idempotency_key, _T.c.owner).where(
                and_(_T.c.idempotency_key.in_(keys[i : i + 500]), _T.c.owner.is_not(None), _T.c.expires_at >= now)
            )
        ).all()
        found.update({r.idempotency_key: r.owner for r in rows})
    return found
