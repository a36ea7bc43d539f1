"""``tag_flow_run`` outside a flow run (the integration tests cover the tag on a real server)."""

from __future__ import annotations

import asyncio

from prefect_doccheck.tasks.run_tags import tag_flow_run


def test_outside_a_flow_run_there_is_nothing_to_tag() -> None:
    assert asyncio.run(tag_flow_run("campaign:x")) is None
