"""What a page shows above its table, counted one document at a time while the wide table
is written: the cards, the histograms' values, the rejected rows, the rows of most concern
and, when the run is grouped (``--group-by``), the same counts per group.

Counting as the rows stream past is what lets a 100,000-document run write its pages
without holding its rows: a group's figures are a few integers, the histograms 8 bytes a
score, and only :data:`~doccheck.outputs.instructor._table_view.STATIC_ROWS` rows are kept.
"""

from __future__ import annotations

import hashlib
import re
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from doccheck.outputs._calibration import AiRules
from doccheck.outputs._lms_columns import NO_SUBMISSION, NOT_A_DOCUMENT, SUPERSEDED
from doccheck.outputs._parquet_reports import META_PREFIX
from doccheck.outputs._said import reason_key
from doccheck.outputs.instructor._table_view import ConcernRows, concern

__all__ = ["NOT_CHECKED", "NO_GROUP", "GroupCounts", "PageTally", "checked", "group_column", "group_key", "group_slug"]

#: What the page calls the group of a row whose group column is empty.
NO_GROUP = "(none)"
#: What the page lists of a rejected row.
_REJECTED_KEYS = ("row_number", "document_id", "error_code", "error_message")
#: Rows of an LMS export that are not documents checked: a roster's student without work, a
#: link or receipt, an older attempt. Listed on their own, never counted as documents.
NOT_CHECKED = (NO_SUBMISSION, NOT_A_DOCUMENT, SUPERSEDED)
_NOT_CHECKED_KEYS = ("student", "student_id", "status", "error_code", "error_message")


def checked(row: Mapping[str, Any]) -> bool:
    """Whether a row is a document the run checked (or tried to): not rejected, not an export's other rows."""
    status = row.get("status")
    return status != "rejected" and status not in NOT_CHECKED


def group_column(name: str | None, available: Sequence[str]) -> str | None:
    """The documents table's column for ``--group-by NAME``: the name itself, or the manifest
    metadata column of that name (``meta_NAME``). ValueError naming the choices otherwise."""
    if not name:
        return None
    for candidate in (name, META_PREFIX + name):
        if candidate in available:
            return candidate
    meta = ", ".join(c[len(META_PREFIX) :] for c in available if c.startswith(META_PREFIX)) or "none given"
    raise ValueError(
        f"--group-by {name!r}: the reports have no such column; name one of the --metadata-columns ({meta}) "
        "or a column of documents.csv (e.g. section, student, late, status, ai_band)"
    )


def group_key(value: Any) -> str:
    """The group a row's value puts it in (an empty value: :data:`NO_GROUP`)."""
    if value is None or value == "":
        return NO_GROUP
    return str(value).lower() if isinstance(value, bool) else str(value)


def group_slug(value: str) -> str:
    """A file name for a group's page: readable, safe on every filesystem, unique per value."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", value).strip("-.")[:48] or "group"
    return f"{readable}-{hashlib.sha256(value.encode('utf-8')).hexdigest()[:8]}"


@dataclass
class GroupCounts:
    """One group's line on the entry page."""

    name: str
    documents: int = 0
    flagged: int = 0
    undecided: int = 0  # flagged and nobody recorded a decision
    reviewed: int = 0  # with a review decision about this version
    pending: int = 0
    rejected: int = 0
    charged_cents: int = 0
    students: set[str] = field(default_factory=set)

    @property
    def slug(self) -> str:
        return group_slug(self.name)

    def add(self, row: Mapping[str, Any], pending: int) -> None:
        self.charged_cents += int(row.get("cost_cents") or 0)
        if row.get("status") == "rejected":
            self.rejected += 1
        if not checked(row):
            return
        self.documents += 1
        self.flagged += 1 if row.get("flagged") else 0
        self.undecided += 1 if concern(row) == 0 else 0
        self.reviewed += 1 if row.get("review_status") and row.get("review_current") is not False else 0
        self.pending += pending
        if row.get("student_id"):
            self.students.add(str(row["student_id"]))


class PageTally:
    """The counts of the module docstring (``group_by``: the documents column to group on)."""

    def __init__(self, rules: AiRules | None = None, group_by: str | None = None) -> None:
        self.rules = rules or AiRules()
        self.group_by = group_by
        self.judged = 0  # documents with an AI band past the length gate
        self.ai_flagged = 0  # of those, flagged on AI (label or score)
        self.accepted = 0
        self.flagged = 0
        self.undecided = 0
        self.pending = 0
        self.charged = 0
        self.ai_scores = array("d")  # 8 bytes a score
        self.sim_scores = array("d")
        self.rejected: list[Mapping[str, Any]] = []
        #: Documents not checked (rejected, or refused by the service), by reason in words (issue 41).
        self.by_reason: Counter[str] = Counter()
        self.as_text = 0  # checked as the text doccheck read (the service does not take the file's type)
        self.misnamed = 0  # files whose name says another type than their bytes
        self.not_checked: list[Mapping[str, Any]] = []
        self.meta: list[str] = []
        self.lms = False  # an export's run: the student columns are shown
        self.export: tuple[str, str] | None = None  # (lms, export name) of an export's run
        self.students: set[str] = set()
        self.groups: dict[str, GroupCounts] = {}
        self.concern = ConcernRows()

    @property
    def grouped(self) -> bool:
        """Whether the run gets one page per group (two groups at least)."""
        return self.group_by is not None and len(self.groups) >= 2

    def groups_by_concern(self) -> list[GroupCounts]:
        """Groups with undecided flags first (most first), then flagged, then by name."""
        return sorted(self.groups.values(), key=lambda g: (-g.undecided, -g.flagged, g.name))

    def add(self, documents: Iterable[Mapping[str, Any]]) -> None:
        """Count these rows of :func:`doccheck.outputs.instructor._documents_table.build_documents`."""
        seen = set(self.meta)
        keys: set[str] = set()  # the last row's columns: the rows of one table share them
        for r in documents:
            if r.keys() != keys:  # one comparison in C a row, not a look at each of its ~40 keys
                keys = set(r)
                for k in r:
                    if k not in seen and k.startswith(META_PREFIX):
                        self.meta.append(k)
                        seen.add(k)
            pending = sum(
                1 for p in ("ai_status", "similarity_status") if r.get(p) not in (None, "completed", "failed")
            )
            if self.group_by is not None:
                key = group_key(r.get(self.group_by))
                self.groups.setdefault(key, GroupCounts(key)).add(r, pending)
            self._add_one(r, pending)

    def _add_one(self, r: Mapping[str, Any], pending: int) -> None:
        self.charged += int(r.get("cost_cents") or 0)
        if self.export is None and r.get("lms") and r.get("export_name"):
            self.export = (str(r["lms"]), str(r["export_name"]))
        if r.get("status") in ("rejected", "failed"):
            self.by_reason[reason_key(r.get("error_code"))] += 1
        if r.get("status") == "rejected":
            self.rejected.append({k: r.get(k) for k in _REJECTED_KEYS})
            return
        self.as_text += 1 if r.get("sent_as") == "text" and r.get("status") == "submitted" else 0
        self.misnamed += 1 if r.get("misnamed") else 0
        if not checked(r):
            self.not_checked.append({k: r.get(k) for k in _NOT_CHECKED_KEYS})
            return
        self.accepted += 1
        self.flagged += 1 if r.get("flagged") else 0
        self.undecided += 1 if concern(r) == 0 else 0
        self.concern.add(r)
        if r.get("lms"):
            self.lms = True
        if r.get("student_id"):
            self.students.add(str(r["student_id"]))
        if r.get("ai_band") in ("low", "elevated", "high"):
            self.judged += 1
            score = r.get("ai_score")
            ai_hit = r.get("ai_label") in ("ai", "mixed") or (score is not None and score >= self.rules.threshold)
            self.ai_flagged += 1 if ai_hit else 0
        self.pending += pending
        if r.get("ai_score") is not None:
            self.ai_scores.append(float(r["ai_score"]))
        if r.get("similarity_score") is not None:
            self.sim_scores.append(float(r["similarity_score"]))
