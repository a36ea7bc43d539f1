"""A flow run's storage options come from the ``DocCheckStorage`` block ``DOCCHECK_STORAGE_BLOCK``
names: the storage seam resolves a URL with them while the flow runs (on any thread), and with the
environment's again after; a missing block stops the flow before anything else, naming the block.
The blocks a container's settings name stand in for the credentials parameters."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from doccheck.client import ConfigurationError
from doccheck.pipeline import SourceOptions
from doccheck.storage import resolve
from prefect_doccheck import DocCheckCredentials, DocCheckStorage
from prefect_doccheck.flows.bulk_check import bulk_check
from prefect_doccheck.flows.collect_results import collect_results
from prefect_doccheck.flows.shard import bulk_check_shard
from prefect_doccheck.tasks import resolve_credentials, storage_block, under_storage_block

OPTIONS = {"s3": {"endpoint_url": "http://127.0.0.1:9", "key": "AKIA_FLOW", "secret": "s3cret_flow"}}


@pytest.fixture
def saved(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Blocks "saved" by name, loaded as Prefect's ``aload`` would load them (no server)."""
    blocks: dict[str, Any] = {"term-storage": DocCheckStorage(options=OPTIONS)}

    async def aload(cls: type, name: str, **_: Any) -> Any:
        if name not in blocks or not isinstance(blocks[name], cls):
            raise ValueError(f"Unable to find block document named {name}")
        return blocks[name]

    monkeypatch.setattr(DocCheckStorage, "aload", classmethod(aload))
    monkeypatch.setattr(DocCheckCredentials, "aload", classmethod(aload))
    for name in ("DOCCHECK_STORAGE_OPTIONS", "DOCCHECK_STORAGE_BLOCK", "DOCCHECK_CREDENTIALS_BLOCK",
                 "DOCCHECK_API_KEY_BLOCK"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    return blocks


def _s3_options() -> dict[str, Any]:
    return dict(resolve("s3://term-data/course-a/manifest.csv").storage_options)  # type: ignore[union-attr]


def test_the_seam_resolves_urls_with_the_blocks_options_while_the_flow_runs(
    saved: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCCHECK_STORAGE_OPTIONS", '{"s3": {"key": "from-env"}}')
    monkeypatch.setenv("DOCCHECK_STORAGE_BLOCK", "term-storage")
    seen: dict[str, Any] = {}

    @under_storage_block
    async def flow_body() -> str:
        seen["in the flow"] = _s3_options()
        thread = threading.Thread(target=lambda: seen.setdefault("another thread", _s3_options()))
        thread.start()
        thread.join()
        return "done"

    assert asyncio.run(flow_body()) == "done"
    for where in ("in the flow", "another thread"):
        options = seen[where]
        assert (options["key"], options["secret"], options["endpoint_url"]) == (
            "AKIA_FLOW", "s3cret_flow", "http://127.0.0.1:9"), where  # fmt: skip
        assert options["config_kwargs"]["retries"]["mode"] == "standard"  # the store's defaults kept
    assert _s3_options()["key"] == "from-env"  # the environment's again once the flow is over


def test_without_the_setting_nothing_is_loaded(saved: dict[str, Any]) -> None:
    async def body() -> Any:
        async with storage_block() as block:
            return block

    assert asyncio.run(body()) is None
    assert "key" not in _s3_options()


@pytest.mark.parametrize(
    ("flow", "parameters"),
    [
        (bulk_check, {"source": SourceOptions(manifest="s3://term-data/m.csv"), "dry_run": True}),
        (bulk_check_shard, {"run_id": "r", "shard": 0, "shards": 2, "manifest": "s3://t/m.csv", "campaign": "c"}),
        (collect_results, {"campaign": "c"}),
    ],
    ids=lambda v: getattr(v, "name", ""),
)
def test_every_flow_loads_the_block_first_and_a_missing_one_is_named(
    saved: dict[str, Any], monkeypatch: pytest.MonkeyPatch, flow: Any, parameters: dict[str, Any]
) -> None:
    monkeypatch.setenv("DOCCHECK_STORAGE_BLOCK", "no-such-block")
    with pytest.raises(ConfigurationError) as raised:
        asyncio.run(flow.fn(**parameters))  # before any logger, ledger, service or store is reached
    assert str(raised.value) == "no DocCheckStorage block named 'no-such-block' (DOCCHECK_STORAGE_BLOCK)"


def test_the_settings_name_the_credentials_when_the_parameters_do_not(
    saved: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    block = DocCheckCredentials(base_url="http://127.0.0.1:9/api/v1", api_key="sk_test_settings_block")
    saved["course-creds"] = block
    monkeypatch.setenv("DOCCHECK_API_KEY_BLOCK", "a-secret-block")
    assert asyncio.run(resolve_credentials(None, None)) == "a-secret-block"
    monkeypatch.setenv("DOCCHECK_CREDENTIALS_BLOCK", "course-creds")
    assert asyncio.run(resolve_credentials(None, None)) is block
    assert asyncio.run(resolve_credentials(None, "a-parameter-block")) == "a-parameter-block"  # a parameter wins
    monkeypatch.setenv("DOCCHECK_CREDENTIALS_BLOCK", "absent")
    with pytest.raises(ConfigurationError, match="no DocCheckCredentials block named 'absent'"):
        asyncio.run(resolve_credentials(None, None))
