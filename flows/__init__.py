"""The Prefect flows (``prefect_doccheck.flows`` once installed): orchestration only.

``bulk_check`` runs the library's run sequence with Prefect tasks as its steps, ``bulk_check_shard``
one shard of it on a work pool, ``collect_results`` the results of earlier runs. Their modules
(``bulk_check``, ``collect_results``, ``shard``) stay public: ``deployments/prefect.yaml`` names them
as entrypoints (``flows/bulk_check.py:bulk_check``), ``deployments/serve.py`` and the README import
``prefect_doccheck.flows.bulk_check``. The rest is private and imported from here, on first use:
:func:`drain_prefect` (``_drain``: let Prefect ship its logs and events before a process ends) and
:func:`submit_sharded` (``_fan_out``: the parent run's shards, started by the run's steps).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from doccheck._lazy import lazy_getattr as _lazy_getattr

if TYPE_CHECKING:
    from prefect_doccheck.flows._drain import drain_prefect
    from prefect_doccheck.flows._fan_out import submit_sharded

__all__ = ["drain_prefect", "submit_sharded"]

#: Name → the private module that defines it, imported by ``__getattr__`` on first use.
_LAZY = {"drain_prefect": "_drain", "submit_sharded": "_fan_out"}


__getattr__ = _lazy_getattr(__name__, _LAZY)
