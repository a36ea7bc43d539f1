"""doccheck: bulk-check documents for AI-generated writing and similarity.

The library is usable without Prefect: a notebook or script can call the client,
the manifest reader, the ledger and the reports directly. Prefect flows in
``flows/`` add orchestration on top, never logic.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
