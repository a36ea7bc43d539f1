"""Cohort matching in a second process (doccheck.matching._background): same summary, errors come back.

Real child processes (a plain interpreter on pipes), no mocks: the dry run of a manifest with
planted pairs gives the same summary in the background as in process, including pairs with
an earlier run read from a SQLite ledger; a template file that cannot be read raises the
same ValueError; a script without a ``__main__`` guard works (no multiprocessing spawn).
"""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from doccheck.ledger import Ledger
from doccheck.matching._background import BATCH, match_in_background
from doccheck.matching._cohort import match_cohort
from doccheck.matching._run_matching import match_stream
from doccheck.matching._signature_store import LedgerStore
from doccheck.pipeline import dry_run

sys.path.insert(0, str(Path(__file__).parents[2]))
from matching_corpus import planted_corpus  # noqa: E402


def _manifest(path: Path, unrelated: int = 2 * BATCH) -> tuple[Path, dict[frozenset[str], str]]:
    corpus = planted_corpus(seed=4, unrelated=unrelated, per_kind=2)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["document_id", "text"])
        for essay in corpus.essays:
            writer.writerow([essay.document_id, essay.text])
    return path, corpus.pairs


def test_background_dry_run_equals_the_in_process_one(tmp_path: Path) -> None:
    manifest, planted = _manifest(tmp_path / "term.csv")
    here = dry_run(manifest, background=False)
    there = dry_run(manifest, background=True)
    assert there.cohort_matches == here.cohort_matches
    assert there.documents == here.documents and there.estimated_cost_cents == here.estimated_cost_cents
    found = {frozenset({p["document_id"], p["matched_document_id"]}): p["kind"] for p in there.cohort_matches["top"]}
    assert found == planted  # 8 planted pairs, all among the top 20, nothing else


def test_background_compares_with_an_earlier_run_in_the_ledger(tmp_path: Path) -> None:
    manifest, _ = _manifest(tmp_path / "term.csv", unrelated=20)
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    ledger = Ledger(url)
    try:
        earlier = planted_corpus(seed=4, unrelated=20, per_kind=2).essays[:5]
        match_cohort([_renamed(e) for e in earlier], campaign="term", run_id="run-1", store=LedgerStore(ledger))
    finally:
        ledger.close()
    here = dry_run(manifest, database_url=url, background=False)
    there = dry_run(manifest, database_url=url, background=True)
    assert there.cohort_matches == here.cohort_matches
    assert there.cohort_matches["earlier_documents"] == 5
    assert any(p["matched_run_id"] == "run-1" for p in there.cohort_matches["top"])


def test_an_error_in_the_child_is_raised_here_and_the_sender_is_not_stuck(tmp_path: Path) -> None:
    manifest, _ = _manifest(tmp_path / "term.csv")
    with pytest.raises(ValueError, match="template file .*missing.txt.* cannot be read"):
        dry_run(manifest, templates=[str(tmp_path / "missing.txt")], background=True)


def test_a_script_without_a_main_guard_can_match_in_the_background(tmp_path: Path) -> None:
    manifest, planted = _manifest(tmp_path / "term.csv", unrelated=10)
    script = tmp_path / "unguarded.py"
    script.write_text(
        "from doccheck.pipeline import dry_run\n"
        f"print(dry_run({str(manifest)!r}, background=True).cohort_matches['pairs'])\n",
        encoding="utf-8",
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(len(planted))


def test_match_in_background_hands_back_what_the_function_returns() -> None:
    from functools import partial

    text = " ".join(f"w{i}" for i in range(60))
    docs = [_Doc(f"d{i}", f"h{i}", text) for i in range(3)]
    summary = match_in_background(iter(docs), partial(match_stream, campaign="c"))
    assert summary["pairs"] == 3 and summary["near_duplicate"] == 3  # same text, different hashes


class _Doc:
    def __init__(self, document_id: str, content_hash: str, text: str) -> None:
        self.document_id, self.content_hash, self.text, self.path = document_id, content_hash, text, None


def _renamed(essay):  # type: ignore[no-untyped-def]
    """An earlier run's copy of an essay under another id (so that the dry run pairs with it)."""
    import hashlib

    return _Doc("old-" + essay.document_id, hashlib.sha256(essay.text.encode()).hexdigest(), essay.text)
