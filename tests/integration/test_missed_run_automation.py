"""The weekly deployment's proactive automation on the session's real Prefect server: created by
the serve script's call, and created again (a restart of serve) it stays one automation, updated."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from prefect_doccheck.deployments.automations import (
    automation_name,
    ensure_automation,
    ensure_missed_run_automation,
    missed_run_automation,
    schedule_period,
)

pytestmark = [pytest.mark.integration, pytest.mark.prefect_server]


def test_the_window_is_the_schedule_period() -> None:
    monday = datetime(2026, 11, 23, tzinfo=UTC)
    assert schedule_period("0 6 * * 1", "Europe/London", start=monday) == timedelta(days=7)
    assert schedule_period("0 6 * * 1,4", "UTC", start=monday) == timedelta(days=4)  # Thu -> Mon


def test_created_twice_it_is_one_automation(prefect_server: Any) -> None:
    from prefect.client.orchestration import get_client

    deployment = f"weekly-course-check-{uuid.uuid4().hex[:8]}"

    async def go() -> tuple[Any, Any, list[Any]]:
        first = await ensure_missed_run_automation(deployment, "0 6 * * 1", "Europe/London")
        later = missed_run_automation(deployment, "0 6 * * *", "UTC", margin=timedelta(hours=2))  # a daily schedule
        second = await ensure_automation(later)
        async with get_client() as client:
            found = await client.read_automations_by_name(automation_name(deployment))
        return first, second, found

    first, second, found = asyncio.run(go())
    assert first == second and len(found) == 1
    [automation] = found
    assert automation.trigger.posture == "Proactive" and automation.trigger.expect == {"doccheck.run.completed"}
    assert automation.trigger.within == timedelta(days=1, hours=2)  # the update took
    assert automation.trigger.match_related.model_dump() == {"prefect.resource.role": "deployment",
                                                "prefect.resource.name": deployment}  # fmt: skip
