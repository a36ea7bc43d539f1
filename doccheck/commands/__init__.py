"""The ``doccheck`` commands, one private module each (``_run``, ``_collect``, ``_demo``, ``_purge_data``...).

Each command turns flags into the options model and hands the run to the library's steps or, when a
Prefect server is there to watch, to the flow (imported inside the function that runs it, so that
``doccheck --help`` imports no Prefect). ``_runner`` holds what they share: progress, exit codes;
``_services`` starts, probes and stops the local helper processes (emulator, receiver, Prefect
server), which the demo, the tests and the benchmarks use too.

Callers import from here: the CLI its nine commands, the rest the service helpers. This
``__init__`` imports none of them until a name is used, so that what only starts a helper process
loads ``_services`` alone.
"""

from __future__ import annotations

import os as _os
from typing import TYPE_CHECKING

from doccheck._lazy import lazy_getattr as _lazy_getattr

if TYPE_CHECKING:
    from doccheck.commands._collect import collect
    from doccheck.commands._demo import demo
    from doccheck.commands._export_manifest import manifest
    from doccheck.commands._probe_service import probe
    from doccheck.commands._purge_data import purge
    from doccheck.commands._pyarrow_without_pandas import keep_pandas_unloaded
    from doccheck.commands._record_review import review
    from doccheck.commands._resolve import resolve
    from doccheck.commands._run import run
    from doccheck.commands._services import (
        Service,
        doccheck_command,
        ensure_prefect_server,
        free_port,
        port_is_free,
        prefect_command,
        running_prefect_server,
        start_service,
        stop_prefect_server,
        wait_healthy,
    )
    from doccheck.commands._show_settings import config

__all__ = [
    "ARROW_MEMORY_POOL",
    "Service",
    "collect",
    "config",
    "demo",
    "doccheck_command",
    "ensure_prefect_server",
    "free_port",
    "keep_pandas_unloaded",
    "manifest",
    "port_is_free",
    "prefect_command",
    "probe",
    "purge",
    "resolve",
    "review",
    "run",
    "running_prefect_server",
    "start_service",
    "stop_prefect_server",
    "wait_healthy",
]

#: Arrow's allocator for a command's process (and any child it starts), unless the user
#: chose one: glibc's, where Arrow's default (mimalloc) keeps what it freed. A term's first run
#: peaks in the report phase, where the Parquet files are read back: 281 MB with this, 301 MB
#: with mimalloc, for the same wall time (docs/benchmarks.md, issue 28). Set here because this
#: package is imported before pyarrow, which reads the variable once, at its first allocation.
ARROW_MEMORY_POOL = "system"

_os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", ARROW_MEMORY_POOL)

#: Name → the private module that defines it, imported by ``__getattr__`` on first use.
_LAZY = {
    "Service": "_services",
    "collect": "_collect",
    "config": "_show_settings",
    "demo": "_demo",
    "doccheck_command": "_services",
    "ensure_prefect_server": "_services",
    "free_port": "_services",
    "keep_pandas_unloaded": "_pyarrow_without_pandas",
    "manifest": "_export_manifest",
    "port_is_free": "_services",
    "prefect_command": "_services",
    "probe": "_probe_service",
    "purge": "_purge_data",
    "resolve": "_resolve",
    "review": "_record_review",
    "run": "_run",
    "running_prefect_server": "_services",
    "start_service": "_services",
    "stop_prefect_server": "_services",
    "wait_healthy": "_services",
}


__getattr__ = _lazy_getattr(__name__, _LAZY)
