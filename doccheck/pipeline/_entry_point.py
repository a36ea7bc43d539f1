"""The seam to the Prefect integration, for the CLI and the notebook alike.

The library never imports Prefect or ``prefect_doccheck``; when a run is to be a flow run,
:func:`prefect_integration` finds the integration by its entry point
(``[project.entry-points."doccheck.integration"]`` in ``pyproject.toml``) and returns it:
its flows, a credentials block for a key, the progress hub, the shutdown steps.
"""

from __future__ import annotations

import functools
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any, Protocol, cast

from pydantic import SecretStr

from doccheck.client import ConfigurationError

__all__ = ["Integration", "prefect_integration"]

GROUP = "doccheck.integration"


class Integration(Protocol):
    """What the library asks of an orchestration integration (``prefect_doccheck.integration``)."""

    def bulk_check(self, **parameters: Any) -> Any: ...

    def collect_results(self, **parameters: Any) -> Any: ...

    def credentials(self, base_url: str, api_key: SecretStr) -> Any: ...

    def block_settings(self, credentials: str | None, api_key_block: str | None) -> dict[str, Any]: ...

    def progress_hub(self) -> ModuleType: ...

    def drain(self) -> None: ...

    def close_ledgers(self) -> None: ...


@functools.cache
def prefect_integration() -> Integration:
    """The installed Prefect integration; a ``ConfigurationError`` naming the fix when the
    package was installed without its metadata (``pip install -e .`` again)."""
    found = entry_points(group=GROUP, name="prefect")
    if not found:
        raise ConfigurationError(f"the Prefect integration is not installed (no {GROUP!r} entry point): "
                                 "reinstall doccheck (`pip install -e .`)")  # fmt: skip
    return cast(Integration, next(iter(found)).load())
