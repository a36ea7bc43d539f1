"""``tag_flow_run`` outside a flow run (the integration tests cover the tag on a real server)."""

from __future__ import annotations

import asyncio
import logging

import prefect
import pytest

from prefect_doccheck.tasks._run_tags import tag_flow_run


def test_outside_a_flow_run_there_is_nothing_to_tag(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """No flow run: no API client is made, nothing is logged, nothing raised."""
    made: list[bool] = []

    def no_client(*_: object, **__: object) -> None:
        made.append(True)
        raise AssertionError("no API call outside a flow run")

    monkeypatch.setattr(prefect, "get_client", no_client)
    with caplog.at_level(logging.WARNING):
        asyncio.run(tag_flow_run("campaign:x"))
    assert made == [] and caplog.records == []
