"""The Prefect integration as the library finds it: by the entry point ``doccheck.integration``.

Why an entry point: the library (``doccheck``, the CLI and the notebook included) never
imports Prefect or this package (the import contracts say so, with no exception listed);
it asks :func:`doccheck.pipeline.prefect_integration` for this module, found
through the installed package's metadata, as Prefect itself finds its collections. Each
name here imports its flow or task module only when called.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from pydantic import SecretStr

__all__ = [
    "block_settings",
    "bulk_check",
    "close_ledgers",
    "collect_results",
    "credentials",
    "drain",
    "progress_hub",
]


def bulk_check(**parameters: Any) -> Any:
    """The ``bulk_check`` flow called with ``parameters`` (a coroutine: the flow is async)."""
    from prefect_doccheck.flows.bulk_check import bulk_check as flow

    return flow(**parameters)


def collect_results(**parameters: Any) -> Any:
    """The ``collect_results`` flow called with ``parameters``."""
    from prefect_doccheck.flows.collect_results import collect_results as flow

    return flow(**parameters)


def credentials(base_url: str, api_key: SecretStr) -> Any:
    """An unsaved ``DocCheckCredentials`` block: how a key travels into a flow run (masked
    wherever Prefect serialises parameters), never through the environment."""
    from prefect_doccheck.credentials import DocCheckCredentials

    return DocCheckCredentials(base_url=base_url, api_key=api_key)


def block_settings(credentials: str | None, api_key_block: str | None) -> dict[str, Any]:
    """The settings the named blocks hold, as ``load_settings(block=...)`` takes them: a
    ``DocCheckCredentials`` block's address and key, else a ``Secret`` block's key; and the
    storage options of the ``DocCheckStorage`` block ``DOCCHECK_STORAGE_BLOCK`` names, as a
    flow run reads them."""
    from typing import cast

    from doccheck.config import load_settings
    from prefect_doccheck.credentials import DocCheckCredentials, DocCheckStorage

    values: dict[str, Any] = {}
    if credentials:
        block = cast(DocCheckCredentials, DocCheckCredentials.load(credentials, _sync=True))  # type: ignore[call-arg]
        values = {"api_key": block.api_key, **({"base_url": block.base_url} if block.base_url else {})}
    elif api_key_block:
        from prefect_doccheck.tasks import load_secret_block

        values = {"api_key": load_secret_block(api_key_block, what="API key")}
    storage = load_settings().storage.block
    if storage:
        values |= cast(DocCheckStorage, DocCheckStorage.load(storage, _sync=True)).settings()  # type: ignore[call-arg]
    return values


def progress_hub() -> ModuleType:
    """The package the flow's tasks report their progress to (its ``listening``)."""
    import importlib

    return importlib.import_module("prefect_doccheck.tasks")


def drain() -> None:
    """Let Prefect ship what it still holds (events, logs) before the process ends."""
    from prefect_doccheck.flows import drain_prefect

    drain_prefect()


def close_ledgers() -> None:
    """Dispose of the tasks' cached ledgers, if the tasks were ever imported."""
    import sys

    if "prefect_doccheck.tasks" in sys.modules:
        from doccheck.pipeline import close_ledgers as close

        close()
