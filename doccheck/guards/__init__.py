"""Bounds for bytes and peers from outside, shared by our programs (the emulator, the receiver).

:mod:`.bounded_json` parses JSON with a budget (size, depth, strictness); ``BodyDeadline`` and
``deadline_protocol`` give our uvicorn servers read deadlines so a slow client cannot hold a connection;
``describe_environment_error`` and ``naming`` name a full disk or a missing folder in words;
``safe_file_stem`` names a file for an id from outside. Pure helpers:
nothing here imports the client, the ledger or the pipeline, so the emulator may use them.

This ``__init__`` imports nothing on its own: each name below is imported on first use, so
that parsing JSON does not load uvicorn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from doccheck._lazy import lazy_getattr as _lazy_getattr

if TYPE_CHECKING:
    from doccheck.guards import bounded_json
    from doccheck.guards._environment_errors import describe_environment_error, naming
    from doccheck.guards._file_names import safe_file_stem
    from doccheck.guards._slow_clients import BodyDeadline, deadline_protocol

__all__ = [
    "BodyDeadline",
    "bounded_json",
    "deadline_protocol",
    "describe_environment_error",
    "naming",
    "safe_file_stem",
]

#: A public submodule: ``bounded_json.loads(...)`` reads as what it does.
_PUBLIC_MODULES = ("bounded_json",)

#: Name → the module that defines it, imported by ``__getattr__`` on first use.
_LAZY = {
    "BodyDeadline": "_slow_clients",
    "deadline_protocol": "_slow_clients",
    "describe_environment_error": "_environment_errors",
    "naming": "_environment_errors",
    "safe_file_stem": "_file_names",
}


__getattr__ = _lazy_getattr(__name__, _LAZY, _PUBLIC_MODULES)
