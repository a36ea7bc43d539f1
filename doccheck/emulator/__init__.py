"""A local, real-HTTP emulator of the document-check service (see shared/DESIGN.md).

The emulator is a program, not a library: ``doccheck emulator`` (:func:`emulator`, started by
the CLI as ``python -m doccheck.cli emulator``: the tests' ``emulator`` fixture and ``doccheck
demo`` start it so) runs it, and tests drive it over HTTP. Its modules are the service's parts,
all private (``_emulator_app``, ``_runtime``, ``_routes/``...). Callers import from here: the CLI
its command, in-process tests the app and its runtime (:func:`create_app`, :class:`Emulator`,
:class:`EmulatorConfig`, :class:`FaultSettings`), and the bundled reference corpus' texts
(:func:`reference_text`). Its errors (``_api_errors``' ``ApiError``, the body limits'
``BodyTooLarge``) stay inside: they become the service's HTTP answers, never exceptions a
doccheck caller catches (see :mod:`doccheck.errors`).

This ``__init__`` imports nothing on its own: each name below is imported on first use, so that
``doccheck --help`` does not load FastAPI.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from doccheck._lazy import lazy_getattr as _lazy_getattr

if TYPE_CHECKING:
    from doccheck.emulator._emulator_app import create_app
    from doccheck.emulator._emulator_command import emulator
    from doccheck.emulator._faults import FaultSettings
    from doccheck.emulator._reference import reference_text
    from doccheck.emulator._runtime import Emulator, EmulatorConfig

__all__ = ["Emulator", "EmulatorConfig", "FaultSettings", "create_app", "emulator", "reference_text"]

#: Name → the private module that defines it, imported by ``__getattr__`` on first use.
_LAZY = {
    "Emulator": "_runtime",
    "EmulatorConfig": "_runtime",
    "FaultSettings": "_faults",
    "create_app": "_emulator_app",
    "emulator": "_emulator_command",
    "reference_text": "_reference",
}


__getattr__ = _lazy_getattr(__name__, _LAZY)
