"""Cohort matching end to end: planted pairs in one concurrent ``bulk_check`` run against the
real emulator (a Prefect server, a real ledger), then a second run of the campaign whose new
documents are compared with the first run's from stored signatures alone (the first run's
files are deleted before it)."""

from __future__ import annotations

import asyncio
import json
import random
import uuid
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pyarrow.parquet as pq
import pytest

from doccheck.ledger import DocumentSignatureRow, Ledger
from doccheck.outputs import COHORT_MATCHES_SCHEMA
from prefect_doccheck.flows.bulk_check import bulk_check
from prefect_doccheck.flows.collect_results import collect_results
from prefect_doccheck.tasks import artifact_key
from tests.factories import flow_kwargs
from tests.fixtures.emulator import EmulatorHandle
from tests.fixtures.prefect_server import eventually
from tests.matching_corpus import TEMPLATE, copy_section, edit, essay, planted_corpus

pytestmark = [pytest.mark.integration, pytest.mark.prefect_server]


def _write(folder: Path, docs: dict[str, str]) -> Path:
    """One .txt file per document and a CSV manifest naming them (both products)."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for document_id, text in docs.items():
        (folder / f"{document_id}.txt").write_text(text, encoding="utf-8")
        rows.append({"document_id": document_id, "path": f"{document_id}.txt", "products": "ai;similarity"})
    manifest = folder / "manifest.csv"
    pd.DataFrame(rows).to_csv(manifest, index=False)
    return manifest


def _pairs(table: pd.DataFrame) -> dict[frozenset[str], str]:
    return {frozenset({r.document_id, r.matched_document_id}): r.kind for r in table.itertuples()}


def _signature_rows(database_url: str, campaign: str) -> int:
    ledger = Ledger(database_url)
    try:
        with ledger.session() as s:
            stmt = DocumentSignatureRow.__table__.select().where(DocumentSignatureRow.campaign == campaign)
            return len(s.exec(stmt).all())
    finally:
        ledger.close()


def _cli_dry_run(manifest: Path, campaign: str, database_url: str) -> Any:
    """``doccheck run --dry-run`` in this process (what a user types before paying)."""
    import os

    from typer.testing import CliRunner

    from doccheck.cli import app

    blank = {k: None for k in os.environ if k.startswith("DOCCHECK_")}
    env = {**blank, "DOCCHECK_DATABASE_URL": database_url, "COLUMNS": "200"}
    args = ["run", str(manifest), "--dry-run", "--campaign", campaign, "--products", "ai,similarity"]
    return CliRunner().invoke(app, args, env=env)


def test_planted_pairs_in_one_concurrent_run_then_a_second_run_from_stored_signatures(
    prefect_server: Any, emulator: EmulatorHandle, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = emulator.new_account()
    monkeypatch.setenv("DOCCHECK_API_KEY", key)
    campaign = f"cohort-{uuid.uuid4().hex[:8]}"
    database_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    out = tmp_path / "reports"
    corpus = planted_corpus(seed=7, unrelated=24, per_kind=2, template=TEMPLATE)
    texts = {e.document_id: e.text for e in corpus.essays}
    manifest = _write(tmp_path / "week1", texts)
    params: dict[str, Any] = dict(
        manifest=str(manifest), products=["ai", "similarity"], out_dir=str(out), campaign=campaign,
        base_url=emulator.base_url, database_url=database_url, concurrency=8, batch_size=10,
        parallel_batches=2, wait=False,
    )  # fmt: skip

    # The dry run lists the pairs before anything is paid, and records nothing.
    planned = asyncio.run(bulk_check(**flow_kwargs(**{**params, "dry_run": True})))
    assert planned.cohort_matches["pairs"] == len(corpus.pairs)
    assert {frozenset({p["document_id"], p["matched_document_id"]}) for p in planned.cohort_matches["top"]} == set(
        corpus.pairs
    )
    assert emulator.account_state(key)["checks"] == 0 and not (tmp_path / "ledger.db").exists()

    first = asyncio.run(bulk_check(**flow_kwargs(**params)))
    assert first.cohort_matches["pairs"] == len(corpus.pairs)
    assert {k: first.cohort_matches[k] for k in ("identical", "near_duplicate", "copied_section")} == {
        "identical": 2, "near_duplicate": 4, "copied_section": 2,
    }  # fmt: skip
    # Identical files share one check at the service: now they are named.
    assert emulator.account_state(key)["checks"] == len(texts) - 2
    # The Prefect run has a table artifact of the top pairs.
    from prefect_doccheck.flows import drain_prefect

    drain_prefect()
    found = eventually(
        lambda: httpx.post(
            f"{prefect_server.api_url}/artifacts/filter",
            json={"artifacts": {"key": {"any_": [artifact_key(campaign, "cohort")]}}},
        ).json(),
        bool,
    )
    assert found and found[0]["type"] == "table"
    rows = json.loads(found[0]["data"]) if isinstance(found[0]["data"], str) else found[0]["data"]
    assert {frozenset({r["document_id"], r["matched_document_id"]}) for r in rows} == set(corpus.pairs)

    emulator.advance(5)
    collected = asyncio.run(
        collect_results(run_id=first.run_id, out_dir=str(out), base_url=emulator.base_url, database_url=database_url)
    )
    assert collected.status == "finished"
    # collect_results rewrites the reports from the ledger: the pairs are still there.
    table = pq.read_table(out / "latest" / "cohort_matches.parquet")
    assert table.schema.equals(COHORT_MATCHES_SCHEMA, check_metadata=False)
    matches = table.to_pandas()
    # Every planted pair, of the planted kind; no pair among unrelated essays, none from the template.
    assert _pairs(matches) == corpus.pairs
    assert (matches["run_id"] == first.run_id).all() and matches["matched_run_id"].isna().all()
    section = matches[matches["kind"] == "copied_section"]
    assert (section[["percent", "matched_percent"]].max(axis=1) >= 18).all()
    # The page shows each pair's shared passages, read again from the manifest's files, highlighted.
    page = (out / "latest" / "report.html").read_text(encoding="utf-8")
    assert page.count('<article class="evidence"') == len(corpus.pairs)
    assert page.count("<mark>") >= 1 + 2 * len(corpus.pairs) and "could not be read again" not in page

    # The service's own similarity names only earlier-indexed checks; ours are mapped to document ids.
    sources = pq.read_table(out / "latest" / "similarity_sources.parquet").to_pandas()
    own = sources[sources["kind"] == "submission"]
    assert len(own) > 0 and own["matched_document_id"].notna().all()
    assert set(own["matched_document_id"]) <= set(texts)
    assert sources.loc[sources["kind"] == "reference", "matched_document_id"].isna().all()

    # A rerun stores no new signature and names the same pairs (no new check either).
    stored = _signature_rows(database_url, campaign)
    assert stored == len(texts)
    rerun = asyncio.run(bulk_check(**flow_kwargs(**params)))
    assert rerun.submitted == 0 and rerun.cohort_matches["pairs"] == len(corpus.pairs)
    assert _signature_rows(database_url, campaign) == stored

    # Week 2: new documents; week 1's files are gone, only the ledger remembers them.
    rng = random.Random(99)
    new = {
        "w2-light": edit(rng, texts["light0a"], 0.03),
        "w2-section": TEMPLATE + "\n\n" + copy_section(rng, texts["u003"].split("\n\n", 1)[1], essay(rng, 1500)),
        "w2-same": texts["u005"],
        "w2-alone": TEMPLATE + "\n\n" + essay(rng, 500),
    }
    for path in (tmp_path / "week1").glob("*.txt"):
        path.unlink()
    week2 = _write(tmp_path / "week2", new)
    # Its dry run already names the pairs with week 1 (read from the ledger), and writes nothing.
    signatures_before = _signature_rows(database_url, campaign)
    dry = _cli_dry_run(week2, campaign, database_url)
    assert dry.exit_code == 0, dry.output
    assert "cohort pairs found locally" in dry.output and "(earlier run)" in dry.output
    assert "w2-same" in dry.output and "u005" in dry.output and "w2-alone" not in dry.output
    assert _signature_rows(database_url, campaign) == signatures_before

    second = asyncio.run(bulk_check(**flow_kwargs(**{**params, "manifest": str(week2)})))
    assert second.cohort_matches["documents"] == 4 and second.cohort_matches["earlier_documents"] == len(texts)
    matches = pq.read_table(out / "latest" / "cohort_matches.parquet").to_pandas()
    got = _pairs(matches)
    assert got[frozenset({"w2-same", "u005"})] == "identical"
    assert got[frozenset({"w2-section", "u003"})] == "copied_section"
    assert got[frozenset({"w2-light", "light0a"})] == "near_duplicate"
    assert got[frozenset({"w2-light", "light0b"})] == "near_duplicate"  # light0b is light0a's planted twin
    assert len(got) == 4 and not any("w2-alone" in pair for pair in got)
    assert (matches["run_id"] == second.run_id).all() and (matches["matched_run_id"] == first.run_id).all()
    assert set(matches["document_id"]) <= set(new)
    # Week 1's files are gone: its side of each pair is said to be unreadable, never invented.
    page = (out / "latest" / "report.html").read_text(encoding="utf-8")
    assert page.count('<article class="evidence"') == 4 and page.count("could not be read again") == 4


def test_notebook_result_has_the_pairs(
    emulator: EmulatorHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``check_dataframe`` (library pipeline, no Prefect) returns ``cohort_matches``; a named
    template file keeps the prompt out of the comparison."""
    import doccheck

    key = emulator.new_account()
    monkeypatch.setenv("DOCCHECK_API_KEY", key)
    corpus = planted_corpus(seed=5, unrelated=8, per_kind=1, template=TEMPLATE)
    template = tmp_path / "prompt.txt"
    template.write_text(TEMPLATE, encoding="utf-8")
    df = pd.DataFrame({"document_id": [e.document_id for e in corpus.essays], "text": [e.text for e in corpus.essays]})
    result = doccheck.check_dataframe(
        df, text_column="text", base_url=emulator.base_url, campaign=f"nb-{uuid.uuid4().hex[:8]}",
        database_url=f"sqlite:///{tmp_path / 'ledger.db'}", wait=False, templates=[str(template)],
    )  # fmt: skip
    assert _pairs(result["cohort_matches"]) == corpus.pairs
    assert result.summary["cohort_matches"]["pairs"] == len(corpus.pairs)
    assert list(result["cohort_matches"].columns) == COHORT_MATCHES_SCHEMA.names
