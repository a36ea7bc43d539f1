"""The Prefect tasks (``prefect_doccheck.tasks`` once installed): thin wrappers over library calls.

They add what Prefect gives (retries, tags, concurrency, artifacts, events) and no logic: what a task
does is a function of :mod:`doccheck` that the notebook calls directly.
"""
