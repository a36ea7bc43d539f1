"""Serve the ``bulk-check`` and ``collect-results`` deployments from this process (no work pool).

Why a serve script: it is the no-infrastructure path. ``python deployments/serve.py``
registers both deployments with the Prefect API named by ``PREFECT_API_URL`` (a local
``prefect server start``, a self-hosted server, or Prefect Cloud with ``PREFECT_API_KEY``)
and then runs their flow runs right here, until Ctrl-C:

- ``bulk-check/weekly-course-check``: a weekly cron schedule (Mondays 06:00 Europe/London
  by default) over the manifest named by ``DOCCHECK_MANIFEST``;
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

import os
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `python deployments/serve.py` from anywhere
    sys.path.insert(0, str(ROOT))

#: The schedule of the weekly check (cron, and the timezone the cron is read in).
WEEKLY_CRON = os.environ.get("DOCCHECK_SCHEDULE_CRON", "0 6 * * 1")
WEEKLY_TIMEZONE = os.environ.get("DOCCHECK_SCHEDULE_TIMEZONE", "Europe/London")
#: Event names the receiver emits (``doccheck.receiver.prefect_events``).
CHECK_EVENTS = ("doccheck.check.completed", "doccheck.check.failed")
#: Reactive trigger window: the first event of a campaign fires a collect run at once
#: (after ``COLLECT_DELAY``); further events of that campaign within the window do not.
COLLECT_WITHIN = timedelta(seconds=int(os.environ.get("DOCCHECK_COLLECT_WITHIN_S", "60")))
#: Delay between the first event and the collect run, so the rest of a burst (checks that
#: finish moments later) is collected by the same run.
COLLECT_DELAY = timedelta(seconds=int(os.environ.get("DOCCHECK_COLLECT_DELAY_S", "15")))


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def bulk_check_parameters() -> dict[str, Any]:
    """Default parameters of the scheduled bulk check, from ``DOCCHECK_*`` variables.

    Only names and places: never a key or a secret (``api_key_block`` and ``credentials``
    are blocks' names).
    """
    source: dict[str, Any] = {
        "manifest": _env("DOCCHECK_MANIFEST") or str(ROOT / "sample_data" / "manifest.csv"),
        "products": (_env("DOCCHECK_PRODUCTS") or "ai,similarity").split(","),
    }
    if _env("DOCCHECK_CAMPAIGN"):
        source["campaign"] = _env("DOCCHECK_CAMPAIGN")
    params: dict[str, Any] = {"source": source, "output": {"out_dir": _env("DOCCHECK_REPORTS_DIR") or "reports"}}
    if _env("DOCCHECK_WEBHOOK_URL"):
        params["submission"] = {"webhook_url": _env("DOCCHECK_WEBHOOK_URL")}
    for name, env in (("api_key_block", "DOCCHECK_API_KEY_BLOCK"), ("credentials", "DOCCHECK_CREDENTIALS_BLOCK")):
        if _env(env):
            params[name] = _env(env)
    return params


def default_collect_parameters() -> dict[str, Any]:
    """Default parameters of the event-driven collect (the campaign comes from the event)."""
    params: dict[str, Any] = {"out_dir": _env("DOCCHECK_REPORTS_DIR") or "reports"}
    if _env("DOCCHECK_API_KEY_BLOCK"):
        params["api_key_block"] = _env("DOCCHECK_API_KEY_BLOCK")
    if _env("DOCCHECK_CREDENTIALS_BLOCK"):
        params["credentials"] = _env("DOCCHECK_CREDENTIALS_BLOCK")
    return params


def collect_trigger(within: timedelta = COLLECT_WITHIN, delay: timedelta = COLLECT_DELAY) -> Any:
    """The trigger of ``collect-results``: any ``doccheck.check.completed|failed`` event,
    one bucket per campaign (``for_each``), the campaign passed as the flow's parameter."""
    from prefect.events import DeploymentEventTrigger
    from prefect.events.schemas.automations import Posture

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
    cron: str = WEEKLY_CRON,
    timezone: str = WEEKLY_TIMEZONE,
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

    limit = int(os.environ.get("DOCCHECK_SERVE_LIMIT", "2"))
    # A suffix keeps several served copies apart on one server (tests, staging).
    suffix = os.environ.get("DOCCHECK_DEPLOYMENT_SUFFIX", "")
    # The weekly check's "did not complete on schedule" automation, created or updated (never twice).
    asyncio.run(ensure_missed_run_automation(f"weekly-course-check{suffix}", WEEKLY_CRON, WEEKLY_TIMEZONE))
    serve(*build_deployments(name_suffix=suffix), limit=limit)


if __name__ == "__main__":
    main()
