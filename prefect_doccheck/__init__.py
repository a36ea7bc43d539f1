"""doccheck's Prefect integration: blocks, tasks, flows and deployments in one namespace.

Why a namespace of its own: Prefect integrations ship as ``prefect_<name>`` (``prefect_slack``,
``prefect_aws``) so that nothing generic such as ``tasks`` or ``flows`` lands in
site-packages. The repository keeps the product's layout (``flows/``, ``tasks/`` and
``deployments/`` at the top); the packaging maps them to ``prefect_doccheck.flows``,
``prefect_doccheck.tasks`` and ``prefect_doccheck.deployments``.

Prefect imports this package on start through the ``prefect.collections`` entry point, so
a server registers the block types defined here. It therefore imports only the blocks
module (cheap: pydantic and Prefect's own block base); the flows and tasks load on use.
"""

from __future__ import annotations

from prefect_doccheck.credentials import DocCheckCredentials, DocCheckStorage, DocCheckWebhookSecret

__all__ = ["DocCheckCredentials", "DocCheckStorage", "DocCheckWebhookSecret"]
