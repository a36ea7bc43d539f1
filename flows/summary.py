"""What a flow run returns and logs: a plain pydantic summary (no secrets, no texts).

Why a model: the CLI renders it as a table, tests assert on it, the Prefect UI shows it
as the flow's result and as a markdown artifact; one shape serves all of them.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class RunSummary(BaseModel):
    """The outcome of ``bulk_check`` or ``collect_results``.

    ``status``: ``planned`` (dry run, nothing sent), ``finished`` (every accepted product
    has a terminal outcome), ``pending`` (some are still processing: run
    ``doccheck collect`` later), ``submitted`` (``wait=False``).
    """

    status: str
    campaign: str
    manifest: str | None = None
    run_id: str | None = None
    dry_run: bool = False
    documents: int = 0
    rejected: int = 0
    counts_by_mode: dict[str, int] = Field(default_factory=dict)
    total_words: int = 0
    estimated_cost_cents: int = 0
    submitted: int = 0
    reused: int = 0
    submit_failed: int = 0
    unsent_budget: int = 0
    products: dict[str, dict[str, int]] = Field(default_factory=dict)
    pending: int = 0
    spent_cents: int = 0
    report_dir: str | None = None
    latest_dir: str | None = None
    elapsed_seconds: float = 0.0
    rejections: list[dict[str, str | int | None]] = Field(default_factory=list)
    #: local near-duplicate pairs (doccheck.matching.summary_of): counts per kind + the top pairs
    cohort_matches: dict[str, Any] = Field(default_factory=dict)

    def as_markdown(self) -> str:
        """A short markdown table for the Prefect UI (an artifact)."""
        rows = [
            ("status", self.status),
            ("campaign", self.campaign),
            ("run id", self.run_id or "-"),
            ("documents accepted", self.documents),
            ("rows rejected", self.rejected),
            ("modes", ", ".join(f"{k} {v}" for k, v in self.counts_by_mode.items() if k != "rejected")),
            ("words", self.total_words),
            ("estimated cost (cents)", self.estimated_cost_cents),
        ]
        if self.cohort_matches:
            c = self.cohort_matches
            rows.append(("cohort pairs (local)", f"{c.get('pairs', 0)}: identical {c.get('identical', 0)}, "
                         f"near-duplicate {c.get('near_duplicate', 0)}, copied section {c.get('copied_section', 0)}"))
        if not self.dry_run:
            rows += [
                ("new checks", self.submitted),
                ("already submitted", self.reused),
                ("submission errors", self.submit_failed),
                ("left unsent (budget)", self.unsent_budget),
                ("products pending", self.pending),
                ("charged (cents)", self.spent_cents),
            ]
            for product, counts in sorted(self.products.items()):
                rows.append((f"{product}", ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))))
            if self.report_dir:
                rows.append(("reports", self.report_dir))
        lines = ["| | |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows)]
        return "\n".join(lines)
