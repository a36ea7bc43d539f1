"""Where a flow run gets its storage options: the ``DocCheckStorage`` block the settings name.

Why a block and not a parameter: on a container work pool a flow run starts in a fresh container
whose only configuration is the pool's job variables; those name the block
(``DOCCHECK_STORAGE_BLOCK``), never hold a key. The flow loads it once and, for as long as the flow
runs, its options are the settings' ``DOCCHECK_STORAGE_OPTIONS`` for the whole process
(:func:`doccheck.config.process_block`): the storage seam reads them when it resolves a URL, on
whichever thread, as it reads the variable. Over the environment, under a flag, as any block.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from doccheck.client import ConfigurationError
from doccheck.config import load_settings, process_block
from prefect_doccheck.credentials import DocCheckStorage

P = ParamSpec("P")
R = TypeVar("R")


async def load_storage_block(name: str) -> DocCheckStorage:
    """The ``DocCheckStorage`` block ``name``; the error names the block, never a value."""
    try:
        return await DocCheckStorage.aload(name)
    except ValueError:
        raise ConfigurationError(f"no DocCheckStorage block named {name!r} (DOCCHECK_STORAGE_BLOCK)") from None


@contextlib.asynccontextmanager
async def storage_block() -> AsyncIterator[DocCheckStorage | None]:
    """Within the ``async with``, the options of the block named by ``DOCCHECK_STORAGE_BLOCK`` are
    this process's storage options; without the setting, nothing changes (None)."""
    name = load_settings().storage.block
    if not name:
        yield None
        return
    block = await load_storage_block(name)
    with process_block(block.settings()):
        yield block


def under_storage_block(fn: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, Coroutine[Any, Any, R]]:
    """``fn`` (a flow's async function, below ``@flow``) run within :func:`storage_block`: every flow
    of the package reads its documents and writes its reports with the block's options."""

    @functools.wraps(fn)
    async def run(*args: P.args, **kwargs: P.kwargs) -> R:
        async with storage_block():
            return await fn(*args, **kwargs)

    # The flow's signature with its annotations evaluated in the flow's module: Prefect validates
    # the parameters against the signature, resolving names in the function's own globals (these).
    run.__signature__ = inspect.signature(fn, eval_str=True)  # type: ignore[attr-defined]
    return run
