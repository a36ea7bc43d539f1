"""Deleting student data: a campaign's or a run's ledger rows, event bodies and report folders.

Student submissions have a lifecycle; the ledger and the report folders must not keep
them for ever. :func:`plan_purge` works out what a purge would remove and
:func:`execute_purge` removes exactly that, so the command can show a dry run first.

Which rows: the tables are REFLECTED from the database, not taken from our models, so a
table another module adds later (stored matching signatures, say) is covered as long as
it has one of the linking columns:

- ``campaign`` in a campaign purged whole (every run of it selected, or named alone);
- ``run_id`` of a selected run (and ``runs.id`` itself);
- ``idempotency_key`` used ONLY by selected runs' documents (a run purged alone keeps the
  submissions other runs of its campaign still rely on; a rerun of those rows must find
  them, or it would pay again);
- ``check_id`` of a check of those submissions (outcomes, webhook events, signatures).

Downloaded files: the purged checks' files ``--download`` keeps in ``<out>/.files-cache`` (the
local scratch folder of a bucket ``--out``), found by ``_purge_residue.cached_files``.

Report folders: each selected run's ``report_dir`` (from its summary), folders named for a
selected run in the ``--out`` roots of its campaign (runs whose summary lacks them), and the ``latest``
copy when the newest run writing to it is selected. A folder is removed only if it looks
like a report folder (report files and a ``files/`` folder of downloads), never a user's
other files. A ``--out`` on a store (``s3://bucket/reports``) is purged the same way: its
folders are prefixes, checked from one listing each and removed object by object
(``doccheck.storage.remove_tree``). After deleting, :func:`doccheck.ledger._purge_residue.scrub_database` makes the
deleted rows unreadable in the database files (SQLite VACUUM + WAL truncate, PostgreSQL VACUUM).

:func:`drop_event_bodies` empties the raw payload of applied webhook events (the body holds
the document's metadata and is needed only until applied) and of events whose check the ledger
has not known for ``UNKNOWN_BODY_TTL``, and deletes events older than
the retention; :func:`retention` combines both with a purge of runs older than N days.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import MetaData, Table, and_, delete, false, func, or_, select, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql.elements import ColumnElement

from doccheck.config import WEBHOOK_EVENT_WINDOW_DAYS
from doccheck.errors import PurgeError, StorageError
from doccheck.ledger._purge_residue import (
    cached_files,
    export_folders,
    is_export_folder,
    out_roots,
    scan_run_folders,
    scrub_database,
)
from doccheck.storage import UserPath, display, files_under, remove_tree, resolve

CHUNK = 500
REPORT_SUFFIXES = {".parquet", ".png", ".json", ".md", ".csv", ".html"}
FILES_SUBDIR = "files"  # downloads of the service's files (doccheck.outputs.download_files)
GROUPS_SUBDIR = "groups"  # one report page per group (doccheck.outputs.instructor, --group-by)
RUNS_TABLE = "runs"
EVENTS_TABLE = "webhook_events"
LEGACY_SECRETS_TABLE = "webhook_secrets"
#: The default of how long an event id is remembered (``Settings.webhook.event_window_days``).
EVENT_WINDOW = timedelta(days=WEBHOOK_EVENT_WINDOW_DAYS)
UNKNOWN_BODY_TTL = timedelta(days=7)  # then an unapplied event's check is one the ledger does not know


@dataclass
class PurgePlan:
    """What a purge removes (a dry run prints this; :func:`execute_purge` deletes it)."""

    run_ids: list[str] = field(default_factory=list)
    whole_campaigns: list[str] = field(default_factory=list)
    partial_campaigns: list[str] = field(default_factory=list)
    idempotency_keys: list[str] = field(default_factory=list)
    check_ids: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    #: Report folders: local paths, or prefixes on a store (``display`` shows them as URLs).
    folders: list[UserPath] = field(default_factory=list)
    skipped_folders: dict[str, str] = field(default_factory=dict)
    #: Copies of an LMS export's documents (``<out>/exports/<campaign>/``) of the campaigns purged whole.
    export_folders: list[Path] = field(default_factory=list)
    #: The purged checks' files ``--download`` fetched, kept beside the run folders (``<out>/.files-cache``).
    cached_files: list[Path] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not any(self.rows.values()) and not self.folders and not self.export_folders and not self.cached_files


@dataclass
class PurgeResult:
    """What was removed."""

    rows: dict[str, int] = field(default_factory=dict)
    folders: list[UserPath] = field(default_factory=list)
    event_bodies_dropped: int = 0
    events_deleted: int = 0
    legacy_secrets_deleted: int = 0
    scrubbed: list[str] = field(default_factory=list)
    cached_files: list[Path] = field(default_factory=list)


def _aware(value: datetime | str | None) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    dt: datetime = value
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def _chunks(values: Sequence[str]) -> Iterable[list[str]]:
    for start in range(0, len(values), CHUNK):
        yield list(values[start : start + CHUNK])


def _in(column: Any, values: Sequence[str]) -> ColumnElement[bool]:
    """``column IN values`` for any length (OR of chunks; an empty list matches nothing)."""
    if not values:
        return false()
    return or_(*(column.in_(chunk) for chunk in _chunks(values)))


def reflect(engine: Engine) -> MetaData:
    """Every table in the database as it is now (including tables our models do not know)."""
    metadata = MetaData()
    metadata.reflect(bind=engine)
    return metadata


def _condition(table: Table, plan: PurgePlan) -> ColumnElement[bool] | None:
    cols = table.c
    parts: list[ColumnElement[bool]] = []
    if "campaign" in cols and plan.whole_campaigns:
        parts.append(_in(cols["campaign"], plan.whole_campaigns))
    if "run_id" in cols and plan.run_ids:
        parts.append(_in(cols["run_id"], plan.run_ids))
    if table.name == RUNS_TABLE and "id" in cols and plan.run_ids:
        parts.append(_in(cols["id"], plan.run_ids))
    if "idempotency_key" in cols and plan.idempotency_keys:
        parts.append(_in(cols["idempotency_key"], plan.idempotency_keys))
    if "check_id" in cols and plan.check_ids:
        parts.append(_in(cols["check_id"], plan.check_ids))
    return or_(*parts) if parts else None


def plan_purge(
    engine: Engine,
    *,
    campaigns: Sequence[str] = (),
    run_ids: Sequence[str] = (),
    older_than: timedelta | None = None,
    now: datetime | None = None,
) -> PurgePlan:
    """What purging the selected runs removes. Runs are selected by campaign AND run id AND
    age (each filter optional, at least one required); a campaign named without a run or
    age filter is purged whole, even rows no run refers to any more."""
    if not campaigns and not run_ids and older_than is None:
        raise PurgeError("name a campaign, a run or an age (--older-than): refusing to purge everything")
    metadata = reflect(engine)
    if RUNS_TABLE not in metadata.tables:
        raise PurgeError("this database has no doccheck ledger (no 'runs' table)")
    runs = metadata.tables[RUNS_TABLE]
    cutoff = (now or datetime.now(UTC)) - older_than if older_than is not None else None
    plan = PurgePlan()
    with engine.connect() as conn:
        all_runs = conn.execute(
            select(runs.c.id, runs.c.campaign, runs.c.started_at, runs.c.summary, runs.c.manifest)
        ).all()
        selected = []
        for run in all_runs:
            if campaigns and run.campaign not in campaigns:
                continue
            if run_ids and run.id not in run_ids:
                continue
            started = _aware(run.started_at)
            if cutoff is not None and (started is None or started >= cutoff):
                continue
            selected.append(run)
        if run_ids:
            missing = sorted(set(run_ids) - {r.id for r in all_runs})
            if missing:
                raise PurgeError(f"no such run in the ledger: {', '.join(missing)}")
        plan.run_ids = sorted(r.id for r in selected)
        selected_ids = set(plan.run_ids)
        by_campaign: dict[str, list[str]] = {}
        for run in all_runs:
            by_campaign.setdefault(run.campaign, []).append(run.id)
        touched = {r.campaign for r in selected}
        whole = {c for c in touched if set(by_campaign[c]) <= selected_ids}
        if campaigns and not run_ids and older_than is None:
            whole |= set(campaigns)  # named alone: the whole campaign, orphans included
        plan.whole_campaigns = sorted(whole)
        plan.partial_campaigns = sorted(touched - whole)
        plan.idempotency_keys = _exclusive_keys(conn, metadata, plan.run_ids, selected_ids)
        plan.check_ids = _check_ids(conn, metadata, plan)
        for table in metadata.sorted_tables:
            condition = _condition(table, plan)
            if condition is not None:
                plan.rows[table.name] = conn.execute(
                    select(func.count()).select_from(table).where(condition)
                ).scalar_one()
    _plan_folders(plan, all_runs, selected_ids)
    whole_campaigns = set(plan.whole_campaigns)
    plan.export_folders = export_folders(run.manifest for run in all_runs if run.campaign in whole_campaigns)
    return plan


def _exclusive_keys(conn: Connection, metadata: MetaData, run_ids: list[str], selected: set[str]) -> list[str]:
    """Idempotency keys used by selected runs' documents and by no other run's."""
    documents = metadata.tables.get("documents")
    if documents is None or not run_ids or not {"run_id", "idempotency_key"} <= set(documents.c.keys()):
        return []
    rows = conn.execute(
        select(documents.c.idempotency_key, documents.c.run_id).where(
            documents.c.idempotency_key.in_(
                select(documents.c.idempotency_key).where(_in(documents.c.run_id, run_ids)).scalar_subquery()
            )
        )
    ).all()
    kept = {r.idempotency_key for r in rows if r.run_id not in selected}
    return sorted({r.idempotency_key for r in rows} - kept)


def _check_ids(conn: Connection, metadata: MetaData, plan: PurgePlan) -> list[str]:
    """Check ids of the submissions and outcomes that go (they link events and signatures)."""
    found: set[str] = set()
    for name in ("submissions", "outcomes"):
        table = metadata.tables.get(name)
        if table is None or "check_id" not in table.c:
            continue
        parts = []
        if "campaign" in table.c and plan.whole_campaigns:
            parts.append(_in(table.c["campaign"], plan.whole_campaigns))
        if "idempotency_key" in table.c and plan.idempotency_keys:
            parts.append(_in(table.c["idempotency_key"], plan.idempotency_keys))
        if parts:
            query = select(table.c.check_id).where(and_(or_(*parts), table.c.check_id.is_not(None)))
            found.update(row.check_id for row in conn.execute(query))
    return sorted(found)


def _report_folder_problem(path: UserPath) -> str | None:
    """Why ``path`` must not be removed as a report folder, or None if it may."""
    if not isinstance(path, Path):
        return _prefix_problem(path)
    if path.is_symlink() or not path.is_dir():
        return "not a folder"
    for child in path.iterdir():
        if child.name in (FILES_SUBDIR, GROUPS_SUBDIR) and child.is_dir() and not child.is_symlink():
            if any(grand.is_dir() or grand.is_symlink() for grand in child.iterdir()):
                return f"holds {child.name!r} with folders in it"
            continue
        if child.is_dir() or child.is_symlink():
            return f"holds {child.name!r}, which is not a report file"
        if child.suffix.lower() not in REPORT_SUFFIXES and not child.name.startswith("."):
            return f"holds {child.name!r}, which is not a report file"
    return None


def _prefix_problem(prefix: UserPath) -> str | None:
    """:func:`_report_folder_problem` of a prefix on a store, from one listing of it."""
    names = [name.split("/") for name in files_under(prefix)]
    if not names:
        return "not a folder"
    for parts in names:
        if len(parts) > 1 and parts[0] in (FILES_SUBDIR, GROUPS_SUBDIR):
            if len(parts) > 2:
                return f"holds {parts[0]!r} with folders in it"
        elif len(parts) > 1 or Path(parts[0]).suffix.lower() not in REPORT_SUFFIXES and not parts[0].startswith("."):
            return f"holds {parts[0]!r}, which is not a report file"
    return None


def _located(text: str, plan: PurgePlan) -> UserPath | None:
    """A recorded folder as a location; one this machine cannot reach is listed as kept, with why."""
    try:
        return resolve(text)
    except StorageError as exc:
        plan.skipped_folders[display(text)] = str(exc)
        return None


def _plan_folders(plan: PurgePlan, all_runs: Sequence[Any], selected: set[str]) -> None:
    newest_for_latest: dict[str, tuple[datetime, str]] = {}
    candidates: list[UserPath | None] = []
    recorded: list[str] = []  # report folders of the touched campaigns: their parents are --out roots
    campaigns = {run.campaign for run in all_runs if run.id in selected}
    for run in all_runs:
        summary = run.summary if isinstance(run.summary, dict) else {}
        started = _aware(run.started_at) or datetime.min.replace(tzinfo=UTC)
        latest = summary.get("latest_dir")
        if (
            isinstance(latest, str)
            and latest
            and (latest not in newest_for_latest or newest_for_latest[latest][0] < started)
        ):
            newest_for_latest[latest] = (started, run.id)
        report_dir = summary.get("report_dir")
        if isinstance(report_dir, str) and report_dir and run.campaign in campaigns:
            recorded.append(report_dir)
        if run.id in selected and isinstance(report_dir, str) and report_dir:
            candidates.append(_located(report_dir, plan))
    roots = out_roots(recorded)
    plan.cached_files = cached_files(roots, plan.check_ids)
    candidates += scan_run_folders(roots, selected)
    candidates += [_located(latest, plan) for latest, (_, run_id) in newest_for_latest.items() if run_id in selected]
    unique = {display(path): path for path in candidates if path is not None}
    for path in unique.values():
        if not path.exists():
            continue
        problem = _report_folder_problem(path)
        if problem:
            plan.skipped_folders[display(path)] = problem
        else:
            plan.folders.append(path)


def execute_purge(
    engine: Engine, plan: PurgePlan, *, event_window: timedelta = EVENT_WINDOW, now: datetime | None = None
) -> PurgeResult:
    """Delete what ``plan`` lists, database rows in one transaction, then the folders.

    A webhook event received within ``event_window`` loses its body and its link to the
    check but keeps its id: a redelivery in the sender's retry window is still a duplicate
    (invariant 11), not an event for an unknown check."""
    result = PurgeResult()
    metadata = reflect(engine)
    recent = (now or datetime.now(UTC)) - event_window
    with engine.begin() as conn:
        for table in reversed(metadata.sorted_tables):  # children before parents, if keyed
            condition = _condition(table, plan)
            if condition is None:
                continue
            if table.name == EVENTS_TABLE and {"received_at", "payload"} <= set(table.c.keys()):
                keep = and_(condition, table.c.received_at >= recent)
                conn.execute(update(table).where(keep).values(_forgotten_event(table)))
                condition = and_(condition, table.c.received_at < recent)
            result.rows[table.name] = conn.execute(delete(table).where(condition)).rowcount or 0
    for folder in plan.folders:
        if folder.exists() and _report_folder_problem(folder) is None:
            remove_tree(folder)  # a local folder, or every object under a store's prefix
            result.folders.append(folder)
    for folder in plan.export_folders:
        if is_export_folder(folder):
            shutil.rmtree(folder)  # the students' work and names copied out of their LMS export
            result.folders.append(folder)
    for cached in plan.cached_files:
        if not cached.is_symlink() and cached.is_file():
            cached.unlink()  # a service's file of a purged check (an ``original``: the student's document)
            result.cached_files.append(cached)
    if any(result.rows.values()):
        result.scrubbed = scrub_database(engine, [name for name, count in result.rows.items() if count])
    return result


def _forgotten_event(table: Table) -> dict[str, Any]:
    """What an event row keeps once purged within the retry window: its id, nothing else."""
    values: dict[str, Any] = {"payload": {}}
    for name, value in (("check_id", None), ("product", None), ("applied", True)):
        if name in table.c:
            values[name] = value
    return values


def drop_event_bodies(
    engine: Engine,
    *,
    older_than: timedelta | None = None,
    now: datetime | None = None,
    apply: bool = True,
    event_window: timedelta = EVENT_WINDOW,
) -> tuple[int, int]:
    """Empty the payload of applied events, of events left unapplied for ``UNKNOWN_BODY_TTL``
    (their check is unknown here) and of events received before ``now - older_than``, and
    delete those events, except within ``event_window``: their ids are remembered for the
    sender's retry window, bodiless. ``(bodies dropped, events deleted)`` (counts only if not ``apply``)."""
    metadata = reflect(engine)
    events = metadata.tables.get(EVENTS_TABLE)
    if events is None or "payload" not in events.c:
        return 0, 0
    moment = now or datetime.now(UTC)
    # an event still unapplied after UNKNOWN_BODY_TTL is for a check this ledger does not know
    # (another ledger's, or a purged campaign's): its body goes too
    applied = or_(events.c.applied == True, events.c.received_at < moment - UNKNOWN_BODY_TTL)  # noqa: E712
    if older_than is not None:  # the retention reaches every body; only the ids outlive it, for the window
        applied = or_(applied, events.c.received_at < moment - older_than)
    cutoff = moment - max(older_than, event_window) if older_than is not None else None
    with engine.begin() as conn:
        bodies = [row.id for row in conn.execute(select(events.c.id, events.c.payload).where(applied)) if row.payload]
        old = (
            conn.execute(select(func.count()).select_from(events).where(events.c.received_at < cutoff)).scalar_one()
            if cutoff is not None
            else 0
        )
        if apply:
            for chunk in _chunks(bodies):
                conn.execute(update(events).where(events.c.id.in_(chunk)).values(payload={}))
            if cutoff is not None:
                conn.execute(delete(events).where(events.c.received_at < cutoff))
    return len(bodies), old


def legacy_secret_rows(engine: Engine, *, apply: bool) -> int:
    """Plain-text signing secrets an older doccheck kept in the ledger (the receiver no
    longer reads them): how many, deleted when ``apply``."""
    metadata = reflect(engine)
    table = metadata.tables.get(LEGACY_SECRETS_TABLE)
    if table is None:
        return 0
    with engine.begin() as conn:
        count = int(conn.execute(select(func.count()).select_from(table)).scalar_one())
        if apply and count:
            conn.execute(delete(table))
    return count


__all__ = [
    "PurgePlan",
    "PurgeResult",
    "drop_event_bodies",
    "execute_purge",
    "legacy_secret_rows",
    "plan_purge",
    "reflect",
]
