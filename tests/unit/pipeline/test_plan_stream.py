"""Streaming planning (issue 10): same plan as ``load_plan``, compact duplicate ids, flat memory."""

from __future__ import annotations

import subprocess
import sys
import tracemalloc
import unicodedata
from pathlib import Path

from doccheck.pipeline import PlanTally, dry_run, iter_planned, load_plan
from doccheck.sources.manifest import CompactIds, RejectCode
from tests.factories import random_text_manifest

SAMPLE = Path(__file__).parents[3] / "sample_data" / "manifest.csv"


def _streamed(manifest: Path, **kwargs: object) -> tuple[list, PlanTally]:
    tally = PlanTally(campaign=manifest.stem, manifest=manifest)
    return list(iter_planned(manifest, tally, **kwargs)), tally  # type: ignore[arg-type]


def test_streamed_plan_equals_load_plan_on_the_sample() -> None:
    plan = load_plan(SAMPLE, products="ai,similarity", metadata_columns=())
    docs, tally = _streamed(SAMPLE, products="ai,similarity")
    assert docs == plan.documents
    assert tally.rejections == plan.rejections
    assert tally.counts_by_mode() == plan.counts_by_mode()
    assert (tally.total_words(), tally.estimated_cost_cents()) == (plan.total_words(), plan.estimated_cost_cents())


def test_duplicate_ids_across_merges_name_the_first_row_and_spelling(tmp_path: Path) -> None:
    composed = unicodedata.normalize("NFC", "café")
    decomposed = unicodedata.normalize("NFD", "café")
    lines = ["document_id,text", f"{decomposed},first"]
    lines += [f"d{i},text {i}" for i in range(50)]
    lines += ["d3,again", f"{composed},again"]
    manifest = tmp_path / "m.csv"
    manifest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    plan = load_plan(manifest)
    docs, tally = _streamed(manifest)
    assert tally.rejections == plan.rejections
    assert [r.code for r in tally.rejections] == [RejectCode.DUPLICATE_ID, RejectCode.DUPLICATE_ID]
    assert "already used by row 5" in tally.rejections[0].reason
    assert "already used by row 1 as" in tally.rejections[1].reason
    assert len(docs) == 51


def test_compact_ids_find_every_id_after_many_merges() -> None:
    ids = CompactIds(merge_every=7)
    for i in range(1000):
        ids[f"id-{i}"] = (i + 1, f"id-{i}")
    assert len(ids) == 1000
    assert all(f"id-{i}" in ids for i in range(0, 1000, 13))
    assert ids["id-500"] == (501, "id-500")
    assert "id-1000" not in ids
    assert ids.setdefault("id-3", (9999, "x")) == (4, "id-3")


def test_dry_run_imports_no_prefect_and_matches_the_plan() -> None:
    code = (
        "import sys; from doccheck.pipeline.planning._dry_run import dry_run; "
        f"s = dry_run({str(SAMPLE)!r}); assert 'prefect' not in sys.modules, 'prefect imported'; "
        "print(s.documents, s.rejected)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    plan = load_plan(SAMPLE)
    assert out.stdout.split() == [str(len(plan.documents)), str(len(plan.rejections))]
    summary = dry_run(SAMPLE)
    assert summary.counts_by_mode == plan.counts_by_mode()
    assert summary.estimated_cost_cents == plan.estimated_cost_cents()
    assert summary.cohort_matches["pairs"] >= 1  # the sample's two near-duplicate essays


def _planning_peak(manifest: Path) -> int:
    tally = PlanTally(campaign="term", manifest=manifest)
    tracemalloc.start()
    try:
        for _ in iter_planned(manifest, tally):
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_planning_memory_is_flat_in_the_manifests_size(tmp_path: Path) -> None:
    small = _planning_peak(random_text_manifest(tmp_path / "small.csv", 2_500, words=150))
    large = _planning_peak(random_text_manifest(tmp_path / "large.csv", 10_000, words=150))
    # Holding the rows would cost > 10,000 × 1 KB of text alone; streaming keeps ~12 bytes per row.
    assert large < 1.5 * small, (small, large)
    assert large < 4 * 1024 * 1024, large


def test_spill_store_matches_like_the_memory_store() -> None:
    from doccheck.matching import MemoryStore, SpillStore, match_cohort

    plan = load_plan(SAMPLE)
    spill = SpillStore()
    in_memory = match_cohort(plan.documents, campaign="c", run_id="r", store=MemoryStore())
    spilled = match_cohort(plan.documents, campaign="c", run_id="r", store=spill)
    spill.close()
    assert spilled.top(50) == in_memory.top(50) and spilled.summary()["pairs"] >= 1
