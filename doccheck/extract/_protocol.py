"""The framing that the worker pool (:mod:`._sandbox`) and the worker process (:mod:`.worker`) share.

Why a module of its own: both ends need the same two constants, and neither end should import
the other (the worker imports the parsers, whose caller starts the pool). The protocol itself is
described in :mod:`doccheck.extract.worker`.
"""

from __future__ import annotations

import struct

__all__ = ["LENGTH", "READY"]

#: Every length on the pipes: 8 bytes, big-endian.
LENGTH = struct.Struct(">Q")
#: The byte a worker writes once its parsers are imported, before its first job.
READY = b"R"
