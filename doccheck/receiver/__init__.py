"""The webhook receiver: verifies, deduplicates and stores deliveries.

:mod:`.app` is the Starlette app (verify, store, answer), :mod:`.group_commit` batches the
ledger writes of concurrent deliveries, :mod:`.prefect_events` tells Prefect what arrived,
:mod:`.command` is ``doccheck receiver``.
"""

__all__: list[str] = []
