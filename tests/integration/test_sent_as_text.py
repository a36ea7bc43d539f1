"""Issue 41, "Done when": a service profile that refuses .odt gets the text instead, once, with one
charge. Against the emulator over real sockets (its ``no-odt`` profile answers 415 naming the type)
and a SQLite ledger; a rerun, in this process or a new one (the type kept in the ledger), makes no second charge.
And a profile whose ``accepted_types`` leaves .odt out plans the text at once: no 415 at all.
About 2 s."""

from __future__ import annotations

import asyncio
import csv
import json
import os
from pathlib import Path

import pytest

from doccheck.client import AsyncDocCheckClient, reset_profile
from doccheck.domain import estimate_cost_cents, text_key
from doccheck.extract import count_words, extract_text
from doccheck.ledger import Ledger
from doccheck.pipeline import SubmitOptions, load_plan, submit_batch
from tests import generated_documents as gen
from tests.factories import essay
from tests.fixtures.emulator import EmulatorHandle

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("fresh_service_profile")]


def _manifest(folder: Path) -> Path:
    odt = folder / "essay.odt"
    odt.write_bytes(gen.odt_paragraphs([essay(1), essay(2)]))
    (folder / "notes.txt").write_text(essay(3), encoding="utf-8")
    path = folder / "course.csv"
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["document_id", "path"])
        writer.writeheader()
        writer.writerow({"document_id": "odt", "path": "essay.odt"})
        writer.writerow({"document_id": "txt", "path": "notes.txt"})
    return path


async def _run(emu: EmulatorHandle, key: str, ledger: Ledger, manifest: Path) -> tuple[str, object]:
    plan = load_plan(manifest, campaign="course", products="ai")
    run_id = ledger.start_run(campaign="course", manifest=str(manifest), products=["ai"])
    async with AsyncDocCheckClient(emu.base_url, key) as client:
        result = await submit_batch(client, ledger, run_id, plan.documents, SubmitOptions(concurrency=4))
    return run_id, result


def _sent_as(ledger: Ledger, run_id: str) -> dict[str, tuple[str | None, str]]:
    rows = ledger.report_rows(run_id=run_id)["submissions"]
    return {r["document_id"]: (r["sent_as"], r["status"]) for r in rows}


def test_a_refused_odt_is_sent_once_as_its_text_with_one_charge(
    isolated_emulator: EmulatorHandle, tmp_path: Path
) -> None:
    emu = isolated_emulator
    key = emu.new_account()
    emu.set_profile("no-odt", api_key=key)
    manifest = _manifest(tmp_path)
    ledger = Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    words = count_words(extract_text((tmp_path / "essay.odt").read_bytes(), "essay.odt"))
    price = estimate_cost_cents(words, ["ai"]) + estimate_cost_cents(count_words(essay(3)), ["ai"])

    run_id, result = asyncio.run(_run(emu, key, ledger, manifest))
    assert (result.submitted, result.failed) == (2, 0), result  # type: ignore[attr-defined]
    state = emu.account_state(key)
    assert (state["checks"], state["charged_cents"]) == (2, price)
    assert _sent_as(ledger, run_id) == {"odt": ("text", "submitted"), "txt": ("original", "submitted")}
    odt_row = next(r for r in ledger.report_rows(run_id=run_id)["submissions"] if r["document_id"] == "odt")
    assert odt_row["mode"] == "text" and odt_row["words"] == words  # billed by the words doccheck read
    refused = ledger.submission_for_key(odt_row["idempotency_key"].removesuffix(":text"))
    assert refused is not None and refused.state == "failed" and refused.error_code == "unsupported_file_type"
    assert refused.check_id is None

    # The same process learnt the type: the rerun plans the text key, finds it done, sends nothing.
    rerun_id, rerun = asyncio.run(_run(emu, key, ledger, manifest))
    assert rerun.submitted == 0, rerun  # type: ignore[attr-defined]
    assert _sent_as(ledger, rerun_id)["odt"] == ("text", "submitted")
    # A new process learns it from the ledger (refused_types): no refusal, its text key is already done.
    reset_profile()
    third_id, third = asyncio.run(_run(emu, key, ledger, manifest))
    assert third.submitted == 0 and third.failed == 0, third  # type: ignore[attr-defined]
    assert emu._control("GET", "/profile")["refused"][key] == 1  # the first run's one refusal, never again
    assert _sent_as(ledger, third_id)["odt"] == ("text", "submitted")
    state = emu.account_state(key)
    assert (state["checks"], state["charged_cents"]) == (2, price)


def test_a_profile_without_odt_plans_its_text(
    isolated_emulator: EmulatorHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emu = isolated_emulator
    key = emu.new_account()
    emu.set_profile("no-odt", api_key=key)
    profile_file = tmp_path / "profile.json"
    profile_file.write_text(json.dumps({"name": "no-odt", "accepted_types": ["txt", "docx", "PDF"]}))
    monkeypatch.setenv("DOCCHECK_SERVICE_PROFILE", str(profile_file))
    manifest = _manifest(tmp_path)
    plan = load_plan(manifest, campaign="course", products="ai")
    odt = next(d for d in plan.documents if d.document_id == "odt")
    assert odt.mode == "text" and odt.idempotency_key.endswith(":text")
    ledger = Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")

    run_id, result = asyncio.run(_run(emu, key, ledger, manifest))
    assert (result.submitted, result.failed) == (2, 0), result  # type: ignore[attr-defined]
    assert ledger.submission_for_key(odt.idempotency_key.removesuffix(":text")) is None  # never sent as a file
    assert text_key(odt.idempotency_key) == odt.idempotency_key
    assert _sent_as(ledger, run_id)["odt"] == ("text", "submitted")
    assert emu.account_state(key)["checks"] == 2


def test_the_run_writes_sent_as_and_the_status_in_words(isolated_emulator: EmulatorHandle, tmp_path: Path) -> None:
    """The whole run in this process (the library's steps): documents.parquet and the report page
    say the .odt was checked as its text, and the photo why it was not checked."""
    import pyarrow.parquet as pq

    from doccheck.client import lanes_for
    from doccheck.outputs import CHECKED_AS_TEXT, REASON_WORDS
    from doccheck.pipeline import LocalSteps, RunOptions, run_checks

    emu = isolated_emulator
    key = emu.new_account()
    emu.set_profile("no-odt", api_key=key)
    manifest = _manifest(tmp_path)
    (tmp_path / "hw.jpg").write_bytes(gen.png())
    with manifest.open("a", newline="") as fh:
        csv.writer(fh).writerow(["photo", "hw.jpg"])
    db_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    options = RunOptions.from_flat(manifest=str(manifest), out_dir=str(tmp_path / "reports"), campaign="course",
                                   base_url=emu.base_url, database_url=db_url, concurrency=4, wait=False)  # fmt: skip

    async def main() -> object:
        async with AsyncDocCheckClient(emu.base_url, key, max_connections=lanes_for(4)) as client:
            return await run_checks(options, LocalSteps(Ledger(db_url), client, write_files=True))

    summary = asyncio.run(main())
    assert summary.as_text == 1 and summary.not_checked == {REASON_WORDS["image_without_text"]: 1}  # type: ignore[attr-defined]
    run_dir = Path(summary.report_dir)  # type: ignore[attr-defined]
    docs = {r["document_id"]: r for r in pq.read_table(run_dir / "documents.parquet").to_pylist()}
    assert (docs["odt"]["sent_as"], docs["odt"]["status_text"]) == ("text", CHECKED_AS_TEXT)
    assert docs["txt"]["sent_as"] == "original"
    assert docs["photo"]["status_text"] == f"not checked: {REASON_WORDS['image_without_text']}"
    assert docs["photo"]["ai_score"] is None
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "checked as extracted text" in page and 'id="not-checked-reasons"' in page
    assert emu.account_state(key)["checks"] == 2


def test_once_learnt_the_next_files_of_the_type_go_as_text_without_a_refusal(
    isolated_emulator: EmulatorHandle, tmp_path: Path
) -> None:
    emu = isolated_emulator
    key = emu.new_account()
    emu.set_profile("no-odt", api_key=key)
    rows = []
    for i in range(3):
        (tmp_path / f"e{i}.odt").write_bytes(gen.odt_paragraphs([essay(10 + i)]))
        rows.append(f"o{i},e{i}.odt")
    manifest = tmp_path / "course.csv"
    manifest.write_text("document_id,path\n" + "\n".join(rows) + "\n")
    ledger = Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    plan = load_plan(manifest, campaign="course", products="ai")
    run_id = ledger.start_run(campaign="course", manifest=str(manifest), products=["ai"])

    async def main() -> object:
        async with AsyncDocCheckClient(emu.base_url, key) as client:
            return await submit_batch(client, ledger, run_id, plan.documents, SubmitOptions(concurrency=1))

    result = asyncio.run(main())
    assert (result.submitted, result.failed) == (3, 0), result  # type: ignore[attr-defined]
    refused = [d.document_id for d in plan.documents if ledger.submission_for_key(d.idempotency_key) is not None]
    assert refused == ["o0"]  # one refusal taught the type: the others were never sent as files
    assert {r: s for r, (s, _) in _sent_as(ledger, run_id).items()} == dict.fromkeys(("o0", "o1", "o2"), "text")
    assert emu.account_state(key)["checks"] == 3


def test_two_overlapping_runs_refused_the_same_files_make_one_check_each(
    isolated_emulator: EmulatorHandle, tmp_path: Path
) -> None:
    """Two runs of the campaign at once on one ledger (two ledgers' connections, two clients):
    both may be refused the file's key; the text key is claimed by one, the other adopts it."""
    emu = isolated_emulator
    key = emu.new_account()
    emu.set_profile("no-odt", api_key=key)
    emu.set_faults(latency_ms=50)  # the two runs' requests overlap
    rows = []
    for i in range(4):
        (tmp_path / f"e{i}.odt").write_bytes(gen.odt_paragraphs([essay(20 + i)]))
        rows.append(f"o{i},e{i}.odt")
    manifest = tmp_path / "course.csv"
    manifest.write_text("document_id,path\n" + "\n".join(rows) + "\n")
    db_url = f"sqlite:///{tmp_path / 'ledger.db'}"

    async def one_run() -> object:
        reset_profile()  # each run as a fresh process: the type not yet learnt
        ledger = Ledger(db_url)
        plan = load_plan(manifest, campaign="course", products="ai")
        run_id = ledger.start_run(campaign="course", manifest=str(manifest), products=["ai"])
        async with AsyncDocCheckClient(emu.base_url, key) as client:
            return await submit_batch(client, ledger, run_id, plan.documents, SubmitOptions(concurrency=4))

    async def both() -> list[object]:
        return list(await asyncio.gather(one_run(), one_run()))

    try:
        first, second = asyncio.run(both())
    finally:
        emu.reset_faults()
    assert first.submitted + second.submitted == 4, (first, second)  # type: ignore[attr-defined]
    assert first.failed == second.failed == 0  # type: ignore[attr-defined]
    words = [count_words(extract_text((tmp_path / f"e{i}.odt").read_bytes(), "e.odt")) for i in range(4)]
    state = emu.account_state(key)
    assert (state["checks"], state["charged_cents"]) == (4, sum(estimate_cost_cents(w, ["ai"]) for w in words))


def test_a_run_that_dies_between_the_refusal_and_the_text_makes_one_check(
    isolated_emulator: EmulatorHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process dies after the file's key was recorded refused and before its documents moved
    to the text key (the ledger write raises, as a crash there would leave it); the resume, a new
    process, learns the type from the ledger (the file's key was refused: no check) and sends the
    text once."""
    emu = isolated_emulator
    key = emu.new_account()
    emu.set_profile("no-odt", api_key=key)
    manifest = _manifest(tmp_path)
    ledger = Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")

    def dies(*args: object) -> int:
        raise RuntimeError("the process died here")

    monkeypatch.setattr(Ledger, "send_as_text", dies)
    with pytest.raises(RuntimeError, match="died here"):
        asyncio.run(_run(emu, key, ledger, manifest))
    monkeypatch.undo()
    reset_profile()  # a new process
    assert emu.account_state(key)["checks"] <= 1  # the .txt may have been made; the .odt was refused

    run_id, result = asyncio.run(_run(emu, key, Ledger(f"sqlite:///{tmp_path / 'ledger.db'}"), manifest))
    assert result.failed == 0, result  # type: ignore[attr-defined]
    assert _sent_as(ledger, run_id) == {"odt": ("text", "submitted"), "txt": ("original", "submitted")}
    assert emu.account_state(key)["checks"] == 2


def test_a_large_odt_refused_at_upload_goes_as_its_text(isolated_emulator: EmulatorHandle, tmp_path: Path) -> None:
    """Over 4 MB a file goes by POST /uploads: the refusal comes there (before any slot is
    taken), and the text goes instead, its words read at send time."""
    import io
    import zipfile

    emu = isolated_emulator
    key = emu.new_account()
    emu.set_profile("no-odt", api_key=key)
    buf = io.BytesIO(gen.odt_paragraphs([essay(4)]))
    with zipfile.ZipFile(buf, "a") as z:  # a picture of 5 MB, stored: the file is that large
        z.writestr(zipfile.ZipInfo("Pictures/photo.bin"), os.urandom(5 * 1024 * 1024), compress_type=zipfile.ZIP_STORED)
    (tmp_path / "big.odt").write_bytes(buf.getvalue())
    manifest = tmp_path / "course.csv"
    manifest.write_text("document_id,path\nbig,big.odt\n")
    plan = load_plan(manifest, campaign="course", products="ai")
    assert plan.documents[0].mode == "upload"
    ledger = Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    run_id, result = asyncio.run(_run(emu, key, ledger, manifest))
    assert (result.submitted, result.failed) == (1, 0), result  # type: ignore[attr-defined]
    row = ledger.report_rows(run_id=run_id)["submissions"][0]
    assert (row["sent_as"], row["mode"], row["words"]) == ("text", "text", count_words(essay(4)))
    state = emu.account_state(key)
    assert (state["checks"], state["waiting_uploads"]) == (1, 0)
