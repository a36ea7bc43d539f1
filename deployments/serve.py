"""Serve the ``bulk-check`` and ``collect-results`` deployments from this process (no work pool).

Why a serve script: it is the no-infrastructure path. ``python deployments/serve.py``
registers both deployments with the Prefect API named by ``PREFECT_API_URL`` (a local
``prefect server start``, a self-hosted server, or Prefect Cloud with ``PREFECT_API_KEY``)
and then runs their flow runs right here, until Ctrl-C:

- ``bulk-check/weekly-course-check``: a weekly cron schedule (Mondays 06:00 Europe/London
  by default) over the manifest named by ``DOCCHECK_MANIFEST`` (the ``schedule`` settings,
  ``doccheck config`` shows them);
- ``collect-results/on-check-events``: triggered by the receiver's ``doccheck.check.*``
  events (``doccheck receiver --prefect-events``), debounced per campaign;

and, before serving, creates or updates the weekly check's proactive automation ("no
``doccheck.run.completed`` within the schedule plus a margin", deployments/automations.py).

Credentials never go into parameters: the key comes from the ``DocCheckCredentials`` block
named by ``DOCCHECK_CREDENTIALS_BLOCK``, the Prefect Secret block named by
``DOCCHECK_API_KEY_BLOCK``, or ``DOCCHECK_API_KEY`` in this process's environment.
``deployments/prefect.yaml`` describes the same two deployments for a process work pool.
"""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `python deployments/serve.py` from anywhere
    sys.path.insert(0, str(ROOT))

from doccheck.config import Settings, load_settings  # noqa: E402  (after the path is set)

#: Event names the receiver emits (``doccheck.receiver._prefect_events``).
CHECK_EVENTS = ("doccheck.check.completed", "doccheck.check.failed")


def _blocks(settings: Settings) -> dict[str, str]:
    """The credentials' block names (never a key)."""
    names = {"api_key_block": settings.service.api_key_block, "credentials": settings.service.credentials_block}
    return {name: value for name, value in names.items() if value}


def _manifest_location(manifest: str | None) -> str:
    """The scheduled check's manifest as its runs are given it: a URL as written (a store's place,
    read by whichever process runs the flow), a path made absolute (the runs' working folder is
    not this one's), the sample manifest when unset."""
    from doccheck.storage import is_url

    if manifest and is_url(manifest):
        return manifest
    return str(Path(manifest).resolve() if manifest else ROOT / "sample_data" / "manifest.csv")


def bulk_check_parameters(settings: Settings | None = None) -> dict[str, Any]:
    """Default parameters of the scheduled bulk check, from the settings (``schedule`` group).

    Only names and places: never a key or a secret (``api_key_block`` and ``credentials``
    are blocks' names).
    """
    settings = settings or load_settings()
    schedule = settings.schedule
    source: dict[str, Any] = {
        "manifest": _manifest_location(schedule.manifest),
        "products": list(schedule.products),
    }
    if schedule.campaign:
        source["campaign"] = schedule.campaign
    params: dict[str, Any] = {"source": source, "output": {"out_dir": str(schedule.reports_dir)}}
    if settings.webhook.url:
        params["submission"] = {"webhook_url": settings.webhook.url}
    return {**params, **_blocks(settings)}


def default_collect_parameters(settings: Settings | None = None) -> dict[str, Any]:
    """Default parameters of the event-driven collect (the campaign comes from the event)."""
    settings = settings or load_settings()
    return {"out_dir": str(settings.schedule.reports_dir), **_blocks(settings)}


def collect_trigger(within: timedelta | None = None, delay: timedelta | None = None) -> Any:
    """The trigger of ``collect-results``: any ``doccheck.check.completed|failed`` event,
    one bucket per campaign (``for_each``), the campaign passed as the flow's parameter.

    Reactive: the first event of a campaign fires a collect run after ``delay`` (so the rest
    of a burst is collected by the same run); further events within ``within`` do not.
    Both default to the ``schedule`` settings."""
    from prefect.events import DeploymentEventTrigger
    from prefect.events.schemas.automations import Posture

    schedule = load_settings().schedule
    within = within or timedelta(seconds=schedule.collect_within_seconds)
    delay = delay if delay is not None else timedelta(seconds=schedule.collect_delay_seconds)

    return DeploymentEventTrigger(
        name="doccheck: collect results when checks finish",
        expect=set(CHECK_EVENTS),
        match={"prefect.resource.id": "doccheck.check.*"},
        for_each={"doccheck.campaign"},
        posture=Posture.Reactive,
        threshold=1,
        within=within,
        schedule_after=delay,
        parameters={"campaign": "{{ event.resource['doccheck.campaign'] }}"},
    )


def build_deployments(
    *,
    cron: str | None = None,
    timezone: str | None = None,
    bulk_parameters: dict[str, Any] | None = None,
    collect_parameters: dict[str, Any] | None = None,
    trigger: Any = None,
    name_suffix: str = "",
) -> list[Any]:
    """The two ``RunnerDeployment`` objects (for ``prefect.serve`` or ``.apply()``).

    Tests pass their own parameters, a short trigger window and a ``name_suffix`` so that
    their deployments never collide with a user's.
    """
    from prefect.deployments.runner import EntrypointType  # type: ignore[attr-defined]  # not re-exported
    from prefect.schedules import Cron

    from prefect_doccheck.flows.bulk_check import bulk_check
    from prefect_doccheck.flows.collect_results import collect_results

    schedule = load_settings().schedule
    cron, timezone = cron or schedule.cron, timezone or schedule.timezone
    bulk = bulk_check.to_deployment(
        name=f"weekly-course-check{name_suffix}",
        schedules=[Cron(cron, timezone=timezone)],
        parameters=bulk_parameters if bulk_parameters is not None else bulk_check_parameters(),
        description="Weekly check of the course manifest (AI + similarity), Parquet reports and UI artifacts.",
        tags=["doccheck", "weekly"],
        entrypoint_type=EntrypointType.MODULE_PATH,
    )
    collect = collect_results.to_deployment(
        name=f"on-check-events{name_suffix}",
        parameters=collect_parameters if collect_parameters is not None else default_collect_parameters(),
        triggers=[trigger if trigger is not None else collect_trigger()],
        description="Poll what is still pending and rewrite the reports, when the receiver reports finished checks.",
        tags=["doccheck", "event-driven"],
        entrypoint_type=EntrypointType.MODULE_PATH,
    )
    return [bulk, collect]


def main() -> None:
    """Register both deployments and run their flow runs here until Ctrl-C."""
    import asyncio

    from prefect import serve

    from prefect_doccheck.deployments.automations import ensure_missed_run_automation

    schedule = load_settings().schedule
    # A suffix keeps several served copies apart on one server (tests, staging).
    suffix = schedule.deployment_suffix
    # The weekly check's "did not complete on schedule" automation, created or updated (never twice).
    asyncio.run(ensure_missed_run_automation(f"weekly-course-check{suffix}", schedule.cron, schedule.timezone))
    serve(*build_deployments(name_suffix=suffix), limit=schedule.serve_limit)


if __name__ == "__main__":
    main()
