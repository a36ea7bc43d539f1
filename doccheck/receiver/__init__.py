"""The webhook receiver: verifies, deduplicates and stores deliveries.

Callers import from here: :func:`create_app` is the Starlette app (verify, store, answer) and
:func:`receiver` is the ``doccheck receiver`` command. Inside, the app's ledger writes of
concurrent deliveries are batched in group commits (``_group_commit``), and what arrived is
told to Prefect over its HTTP API (``_prefect_events``, no Prefect import).
"""

from __future__ import annotations

from doccheck.receiver._delivery_app import create_app
from doccheck.receiver._receiver_command import receiver

__all__ = ["create_app", "receiver"]
