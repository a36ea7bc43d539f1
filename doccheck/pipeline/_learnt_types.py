"""The file types a service refused, learnt once for every process (issue 41).

Why: a create refused as an unsupported type (415, or 422 naming the type) is free, but a new
process used to pay it again for each of its files of that type before sending their text.
What a process learns is kept in the ledger by the service's base URL
(``doccheck.ledger._refused_types``) and adopted by the next process before it sends
(``doccheck.client.adopt_refused_types``): its files of that type go as their text at once.
"""

from __future__ import annotations

from typing import Any

from doccheck.client import adopt_refused_types
from doccheck.ledger import Ledger, refused_types, remember_refused_type

__all__ = ["adopt_for_planning", "adopt_learnt_refusals", "remember_refusal", "service_of"]


def service_of(client: Any) -> str:
    """The base URL of the service ``client`` talks to (``""`` for a stand-in without one: nothing kept)."""
    return str(getattr(client, "base_url", "") or "")


def remember_refusal(ledger: Ledger, base_url: str, extension: str, profile: str) -> None:
    """Keep in the ledger that the service at ``base_url`` refuses ``extension`` files (one short transaction)."""
    if not base_url:
        return
    with ledger.engine.begin() as conn:
        remember_refused_type(conn, base_url, extension, profile)


def adopt_for_planning(ledger: Ledger | None, base_url: str | None) -> frozenset[str]:
    """Before a run or a dry run plans: the types learnt for ``base_url`` (the settings' service
    when None), so their files are planned as text (counted as such before anything is paid)."""
    if ledger is None:
        return frozenset()
    if base_url is None:
        from doccheck.config import setting

        base_url = setting("service", "base_url")
    return adopt_learnt_refusals(ledger, str(base_url or ""))


def adopt_learnt_refusals(ledger: Ledger, base_url: str) -> frozenset[str]:
    """The types the ledger says the service at ``base_url`` refused, learnt by this process
    before it sends (or plans); which they are."""
    if not base_url:
        return frozenset()
    with ledger.engine.connect() as conn:
        found = refused_types(conn, base_url)
    adopt_refused_types(found)
    return frozenset(found)
