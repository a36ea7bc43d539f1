"""The scheduled check's proactive automation: "no ``doccheck.run.completed`` from the weekly
deployment within its schedule plus a margin", created or updated (never duplicated).

Why: a schedule that silently stops (the serve process died, the worker's machine is off, a
run hangs or ends incomplete every week) shows nothing in the UI: no run, no failure. A
proactive trigger fires on what did *not* happen. The window is the longest gap between two
runs of the cron (a week for the default) plus ``DOCCHECK_MISSED_RUN_MARGIN_H`` (a run's own length
and a late start). The action does nothing by itself: the automation's
``prefect.automation.triggered`` event is in the event feed and the Automations page, and an
operator adds a notification action (e-mail, Slack block) in the UI, which an update keeps.

``python deployments/serve.py`` calls :func:`ensure_missed_run_automation` before serving; with
``prefect deploy`` (deployments/prefect.yaml) run ``python deployments/automations.py`` once.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `python deployments/automations.py` from anywhere
    sys.path.insert(0, str(ROOT))

from doccheck.config import load_settings  # noqa: E402  (after the path is set)

#: The event a complete run emits (``RUN_COMPLETED`` of the tasks' run events).
RUN_COMPLETED = "doccheck.run.completed"


def schedule_period(cron: str, timezone: str, *, start: datetime | None = None, fires: int = 12) -> timedelta:
    """The longest gap between consecutive fires of ``cron`` over its next ``fires`` runs."""
    import importlib

    vendored: Any = importlib.import_module("prefect._vendor.croniter")  # the cron reader Prefect's schedules use
    moments = vendored.croniter(cron, start or datetime.now(ZoneInfo(timezone)))
    stamps: list[datetime] = [moments.get_next(datetime) for _ in range(fires + 1)]
    return max(b - a for a, b in zip(stamps, stamps[1:], strict=False))


def automation_name(deployment_name: str) -> str:
    """The automation's name: what :func:`ensure_missed_run_automation` finds it by."""
    return f"doccheck: {deployment_name} did not complete on schedule"


def missed_run_automation(deployment_name: str, cron: str, timezone: str, margin: timedelta | None = None) -> Any:
    """The automation (not yet saved) for the deployment named ``deployment_name``."""
    from prefect.automations import Automation, DoNothing
    from prefect.events.schemas.automations import EventTrigger, Posture

    if margin is None:
        margin = timedelta(hours=load_settings().schedule.missed_run_margin_hours)
    within = schedule_period(cron, timezone) + margin
    trigger = EventTrigger(
        expect={RUN_COMPLETED},
        # emit_event relates a flow's events to its deployment (role "deployment", with its name)
        match_related={"prefect.resource.role": "deployment", "prefect.resource.name": deployment_name},
        posture=Posture.Proactive,
        threshold=1,
        within=within,
    )
    return Automation(
        name=automation_name(deployment_name),
        description=(
            f"No {RUN_COMPLETED} from the deployment {deployment_name!r} within {within} "
            f"(its schedule {cron!r} {timezone} plus {margin}). Add a notification action here."
        ),  # fmt: skip
        trigger=trigger,
        actions=[DoNothing()],
    )


async def ensure_automation(automation: Any) -> Any:
    """Save ``automation``: the one of the same name is updated (its actions kept, so a
    notification added in the UI survives), else a new one is created. Returns its id."""
    from prefect.automations import Automation

    try:
        existing = await Automation.aread(name=automation.name)
    except ValueError:  # Prefect's "not found"
        return (await automation.acreate()).id
    updated = existing.model_copy(update={"description": automation.description, "trigger": automation.trigger,
                                          "enabled": True})  # fmt: skip
    await updated.aupdate()
    return existing.id


async def ensure_missed_run_automation(deployment_name: str, cron: str, timezone: str) -> Any:
    """:func:`missed_run_automation`, created or updated; its id."""
    return await ensure_automation(missed_run_automation(deployment_name, cron, timezone))


def main() -> None:
    """Create or update the weekly deployment's automation (for ``prefect deploy`` users)."""
    schedule = load_settings().schedule
    name = "weekly-course-check" + schedule.deployment_suffix
    print(asyncio.run(ensure_missed_run_automation(name, schedule.cron, schedule.timezone)))


if __name__ == "__main__":
    main()
