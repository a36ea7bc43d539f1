"""The Prefect flows (``prefect_doccheck.flows`` once installed): orchestration only.

``bulk_check`` runs the library's run sequence with Prefect tasks as its steps, ``bulk_check_shard``
one shard of it on a work pool, ``collect_results`` the results of earlier runs.
"""
