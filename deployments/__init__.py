"""Deployments of the doccheck flows (``prefect_doccheck.deployments`` once installed).

``serve.py`` serves both deployments from one process; ``prefect.yaml`` describes the
same two for a process work pool (``prefect deploy --all`` from a clone).
"""
