"""The tables a run writes, as Prefect assets: one ``prefect.asset.materialization.succeeded``
event per table, emitted as Prefect's own ``@materialize`` tasks and prefect-dbt emit them.

Why events and not ``@materialize``: the asset keys depend on the run's ``--out`` folder, known
only when the flow runs, and the tables are written by library code shared with the notebook
and the command (which never import Prefect). So, after the run folder is complete, this emits
what ``AssetContext.emit_events`` would: a ``prefect.asset.referenced`` event for the upstream
(the manifest or LMS export the run read) and one materialization event per table, related to
the upstream (role ``asset``) and to ``doccheck`` (role ``asset-materialized-by``); the flow run
and task run are added as related resources by ``emit_event`` itself. A self-hosted server
shows them in the event feed; Prefect Cloud draws the asset graph from them.

One stable key per table: ``file://<absolute --out folder>/<table>`` (the table over every run
of that folder: what the catalog's view of the same name reads), or for ``--out`` on a store its
URL, ``s3://bucket/reports/<table>`` (never a path of the worker that wrote it). The payload is the
asset's metadata: the run, its campaign, the table's row count in this run and its run folder. No
row, name or text.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from prefect.events import emit_event
from prefect.types.names import MAX_ASSET_KEY_LENGTH, RESTRICTED_ASSET_CHARACTERS

from doccheck.outputs import SCHEMA_VERSION, TABLE_FILES
from doccheck.pipeline import RunSummary
from doccheck.storage import UserPath, display, is_url, open_input, resolve

log = logging.getLogger("doccheck.flows")

__all__ = ["MATERIALIZED", "MATERIALIZED_BY", "REFERENCED", "asset_key", "emit_table_assets"]

MATERIALIZED = "prefect.asset.materialization.succeeded"
REFERENCED = "prefect.asset.referenced"
#: The tool that materialized the assets (Prefect's ``materialized_by``).
MATERIALIZED_BY = "doccheck"
#: Asset name → the catalog view it is (``documents``: the run's documents.parquet; the
#: ``documents_history`` view reads every run's).
_TABLES = {("documents" if view == "documents_history" else view): file for view, file in TABLE_FILES.items()}


def _file_uri(path: str | UserPath) -> str:
    """``file://`` and the absolute path (a store's location: its URL), each character an asset
    key refuses (a space, ``#``, ``%``...) replaced by ``_``; the start of it when longer than
    Prefect's limit."""
    text = display(path) if not isinstance(path, str) else path
    if is_url(text):
        scheme, rest = text.split("://", 1)
    else:
        scheme, rest = "file", str(Path(text).resolve())
    for char in RESTRICTED_ASSET_CHARACTERS:
        rest = rest.replace(char, "_")
    return f"{scheme}://{rest.lstrip('/') if scheme != 'file' else rest}"[:MAX_ASSET_KEY_LENGTH]


def asset_key(out_dir: str | UserPath, table: str) -> str:
    """The stable key of ``table`` written into ``out_dir``: ``file://<absolute out_dir>/<table>``,
    or ``<out_dir's URL>/<table>`` on a store."""
    return f"{_file_uri(out_dir)[: MAX_ASSET_KEY_LENGTH - len(table) - 1]}/{table}"


def _upstream(manifest: str | None) -> dict[str, str] | None:
    if not manifest:
        return None
    if is_url(manifest):  # a manifest on a store: its URL as display() shows it (never a credential)
        location = resolve(manifest)
        return {"prefect.resource.id": _asset_text(display(location)), "prefect.resource.name": location.name}
    return {"prefect.resource.id": _file_uri(manifest), "prefect.resource.name": Path(manifest).name}


def _asset_text(text: str) -> str:
    for char in RESTRICTED_ASSET_CHARACTERS:
        text = text.replace(char, "_")
    return text[:MAX_ASSET_KEY_LENGTH]


def emit_table_assets(summary: RunSummary) -> int:
    """One materialization event per table of the run folder (the number emitted); never raises
    (the tables are written; an event that cannot be sent is logged)."""
    try:
        return _emit(summary)
    except Exception as exc:  # noqa: BLE001 - the asset events are a view of the run, never its outcome
        log.warning("asset events of run %s not emitted: %s", summary.run_id, type(exc).__name__)
        return 0


def _emit(summary: RunSummary) -> int:
    if not summary.report_dir:
        return 0
    folder = resolve(summary.report_dir)
    upstream = _upstream(getattr(summary, "manifest", None))
    related: list[dict[str, str]] = []
    if upstream is not None:
        emit_event(REFERENCED, resource=upstream, related=[])
        related.append({"prefect.resource.id": upstream["prefect.resource.id"], "prefect.resource.role": "asset"})
    related.append({"prefect.resource.id": MATERIALIZED_BY, "prefect.resource.role": "asset-materialized-by"})
    emitted = 0
    for table, filename in _TABLES.items():
        path = folder / filename
        if not path.is_file():
            continue
        with open_input(path) as stream:  # the footer alone: a store serves it in a ranged read
            rows = pq.ParquetFile(stream).metadata.num_rows
        payload: dict[str, Any] = {"campaign": summary.campaign, "run_id": summary.run_id, "table": table,
                                   "rows": rows, "run_folder": folder.name,
                                   "schema_version": SCHEMA_VERSION}  # fmt: skip
        resource = {"prefect.resource.id": asset_key(folder.parent, table), "prefect.resource.name": table,
                    "prefect.asset.description": f"doccheck's {table} table, every run of {folder.parent.name}/"}  # fmt: skip
        emit_event(MATERIALIZED, resource=resource, related=related, payload=payload)
        emitted += 1
    return emitted
