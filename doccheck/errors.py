"""The root of every error the doccheck library raises.

Why one root: a caller (a flow, a notebook, a script) can catch ``DocCheckBaseError`` to
handle anything doccheck says is wrong, and let everything else (a bug, a KeyboardInterrupt)
through. Each library error keeps its own name and its older base (``ValueError``,
``RuntimeError``...), so existing ``except`` clauses keep working; this class is added
beside that base. The emulator is not part of this: it stands for the remote service and
answers errors as HTTP responses.
"""

from __future__ import annotations


class DocCheckBaseError(Exception):
    """Base class of every error raised by the doccheck library (client, manifest, planning,
    ledger, pipeline, reports, webhooks, receiver, commands)."""
