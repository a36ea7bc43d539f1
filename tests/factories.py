"""Builders and assertion helpers shared by test modules (no fixtures: those live in
``tests/fixtures/``). Test modules import from here, never from one another.

Sections: fake HTTP answers for the client's unit tests; ledger rows; texts and error
assertions for the integration tests; a small corpus and run helpers for the pipeline.
"""

from __future__ import annotations

import csv
import random
import re
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from doccheck.client import AsyncDocCheckClient, Event, RetryPolicy
from doccheck.ledger import Ledger
from doccheck.pipeline import (
    LocalSteps,
    Plan,
    PlannedDocument,
    RunOptions,
    RunSummary,
    SubmitOptions,
    load_plan,
    run_checks,
    submit_batch,
    wait_for_results,
)

# --- fake service answers (client unit tests, httpx.MockTransport) ----------------------

BASE = "http://svc.test/api/v1"
KEY = "sk_test_SUPERSECRET"

CHECK = {
    "id": "8d0c6a5e-0000-4000-8000-000000000001",
    "object": "check",
    "status": "processing",
    "name": "t",
    "products": ["ai"],
    "words": 3,
    "created_at": "2026-01-01T00:00:00.000Z",
    "completed_at": None,
    "metadata": {},
    "cost": {"ai_cents": 1, "similarity_cents": 0, "total_cents": 1, "billed_words": 100},
    "error": None,
    "ai": {"status": "processing"},
    "similarity": None,
    "files": {"similarity_pdf": False, "pdf": False, "original": False},
}


class Recorder:
    """A MockTransport handler that records requests (with their bodies) and answers from a script."""

    def __init__(self, *answers: httpx.Response | Callable[[httpx.Request], httpx.Response]) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []
        self.bodies: list[bytes] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(request.read())
        self.requests.append(request)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return answer(request) if callable(answer) else answer


def created(body: dict | None = None, **headers: str) -> httpx.Response:
    return httpx.Response(201, json=body or CHECK, headers=headers)


def err(status: int, code: str, message: str = "nope", **headers: str) -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": message}}, headers=headers)


# --- ledger rows ------------------------------------------------------------------------


def planned(doc_id: str, products: tuple[str, ...] = ("ai",), row: int = 1, **kw: Any) -> PlannedDocument:
    fields: dict[str, Any] = dict(
        row_number=row,
        document_id=doc_id,
        name=f"{doc_id}.txt",
        products=products,
        text="some text " * 20,
        path=None,
        size_bytes=200,
        content_hash="h" * 64,
        words=40,
        metadata={"document_id": doc_id, "group": "A"},
        mode="text",
        idempotency_key=f"key-{doc_id}-{'-'.join(products)}",
        estimated_cost_cents=3,
    )
    fields.update(kw)
    return PlannedDocument(**fields)


def check_json(check_id: str, products: tuple[str, ...] = ("ai",), **over: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": check_id,
        "object": "check",
        "status": "processing",
        "name": "x",
        "products": list(products),
        "words": 40,
        "created_at": "2026-01-01T00:00:00.000Z",
        "completed_at": None,
        "metadata": {"document_id": "d1"},
        "cost": {"ai_cents": 1, "similarity_cents": 2 if "similarity" in products else 0,
                 "total_cents": 1 + (2 if "similarity" in products else 0), "billed_words": 100},
        "error": None,
        "ai": {"status": "processing"} if "ai" in products else None,
        "similarity": {"status": "processing"} if "similarity" in products else None,
        "files": {"similarity_pdf": False, "pdf": False, "original": False},
    }  # fmt: skip
    data.update(over)
    return data


def record(ledger: Ledger, body: bytes) -> bool:
    return ledger.record_event(Event.model_validate_json(body), body)


# --- integration: texts and error assertions ---------------------------------------------

NO_RETRY = RetryPolicy(max_attempts=1)
TEXT = (
    "The committee met on Tuesday to review the proposal for a new library wing. "
    "Several members raised concerns about the budget, while others praised the design."
)

TS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
ESSAY = (
    "I walked down to the harbour before dawn. The boats were still tied up, and the gulls "
    "argued over scraps on the pier. Nobody else was awake, or so I thought! Then an old man "
    "waved from a doorway and asked whether I had seen his cat."
)


def assert_client_error(exc: pytest.ExceptionInfo, status: int, code: str, *, storage: bool = False) -> None:
    e = exc.value
    assert (e.status_code, e.code) == (status, code), repr(e)
    if not storage:  # the storage origin is not the service API: no request id promised
        assert e.request_id, "every service error quotes the request id"


def assert_service_error(response: httpx.Response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}, body
    assert body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert response.headers.get("x-request-id")
    return body["error"]


# --- pipeline: a small corpus and run helpers --------------------------------------------

ESSAYS = {
    "t1": "The printing press changed how ideas travelled across Europe. Pamphlets, once rare, "
    "became cheap enough for artisans to buy, and arguments that had stayed inside monasteries "
    "spread to market squares within weeks.",
    "t2": "Bees communicate the direction of flowers through a waggle dance. The angle of the "
    "dance relative to gravity encodes the angle between the sun and the food source.",
}
SMALL_FILE = (
    "Coastal erosion threatens villages that have stood for centuries. Engineers debate "
    "whether sea walls merely move the problem further along the shore. " * 8
)


def write_corpus(folder: Path, *, big: bool = True) -> Path:
    """A manifest with two text rows, one small file (multipart), optionally one file over
    4 MB (upload flow), and one row that must be rejected (missing file)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "small.txt").write_text(SMALL_FILE)
    rows = [
        {"document_id": "t1", "text": ESSAYS["t1"], "path": "", "group": "A"},
        {"document_id": "big" if big else "t2", "text": "" if big else ESSAYS["t2"],
         "path": "big.txt" if big else "", "group": "B"},
        {"document_id": "f1", "text": "", "path": "small.txt", "group": "A"},
        {"document_id": "gone", "text": "", "path": "missing.txt", "group": "B"},
    ]  # fmt: skip
    if big:
        words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"]
        line = " ".join(words[(i * 7) % len(words)] for i in range(60)) + "\n"
        with (folder / "big.txt").open("w") as fh:
            while fh.tell() < 4 * 1024 * 1024 + 200_000:
                fh.write(line)
    manifest = folder / "manifest.csv"
    with manifest.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["document_id", "text", "path", "group"])
        writer.writeheader()
        writer.writerows(rows)
    return manifest


def plan_for(manifest: Path, campaign: str | None = None) -> Plan:
    plan = load_plan(manifest, campaign=campaign or f"it-{uuid.uuid4().hex[:8]}",
                     products="ai,similarity", metadata_columns=["group"])  # fmt: skip
    assert len(plan.rejections) == 1 and plan.rejections[0].document_id == "gone"
    return plan


def start_pipeline_run(ledger: Ledger, plan: Plan) -> str:
    run_id = ledger.start_run(campaign=plan.campaign, manifest=str(plan.manifest), products=["ai", "similarity"])
    ledger.record_rejections(run_id, plan.rejections)
    return run_id


async def submit_plan(base_url: str, api_key: str, ledger: Ledger, run_id: str, plan: Plan, **kw: Any) -> Any:
    async with AsyncDocCheckClient(base_url, api_key) as client:
        return await submit_batch(client, ledger, run_id, plan.documents, SubmitOptions(**kw))


async def wait_for_run(base_url: str, api_key: str, ledger: Ledger, run_id: str, **kw: Any) -> Any:
    kw.setdefault("timeout", 20)
    kw.setdefault("poll_interval", 0.1)
    async with AsyncDocCheckClient(base_url, api_key) as client:
        return await wait_for_results(client, ledger, run_id, **kw)


def assert_complete(rows: dict[str, list[dict[str, Any]]], n_docs: int) -> None:
    subs = {r["document_id"]: r for r in rows["submissions"]}
    assert subs["gone"]["status"] == "rejected" and subs["gone"]["error_code"]
    sent = [r for r in rows["submissions"] if r["status"] != "rejected"]
    assert len(sent) == n_docs and all(r["status"] == "submitted" and r["check_id"] for r in sent), sent
    assert len(rows["ai_results"]) == n_docs and len(rows["similarity_results"]) == n_docs
    for r in rows["ai_results"]:
        assert r["status"] == "completed" and 0 <= r["score"] <= 1 and r["label"] in {"human", "mixed", "ai"}, r
        assert r["completed_at"] is not None
    for r in rows["similarity_results"]:
        assert r["status"] == "completed" and 0 <= r["score"] <= 100 and r["source_count"] is not None, r


#: A paragraph long enough to be judged, for the text manifests of the run tests.
RUN_ESSAY = (
    "Public transport that is free at the point of use changes how a city moves. When fares vanish, "
    "buses fill with people who used to drive short distances, and the streets they leave behind become "
    "quieter and safer for walking and cycling. Critics answer that the lost fare revenue must come from "
    "somewhere, and that service quality matters more than price. Both sides agree that frequency, "
    "reliability and coverage decide whether people leave their cars at home. "
)


def text_manifest(folder: Path) -> Path:
    """``folder/manifest.csv``: three good text rows (t-1 and t-2 near-duplicates for similarity,
    t-3 for ``ai`` only) and two bad rows (t-4 blank, t-5 an unknown product)."""
    import pandas as pd

    rows = [
        {"document_id": "t-1", "text": RUN_ESSAY * 2, "products": "ai;similarity", "section": "A"},
        {"document_id": "t-2", "text": RUN_ESSAY * 2 + "A small change at the end.", "products": "ai;similarity",
         "section": "B"},
        {"document_id": "t-3", "text": "A different short answer about trees and shade in cities. " * 5,
         "products": "ai", "section": "A"},
        {"document_id": "t-4", "text": "   ", "products": "ai", "section": "B"},
        {"document_id": "t-5", "text": "Fine text.", "products": "plagiarism", "section": "C"},
    ]  # fmt: skip
    path = folder / "manifest.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def doccheck_in_process(
    args: list[str], env: dict[str, str] | None = None, *, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``doccheck ARGS`` run by typer's ``CliRunner`` in this process, answered as a subprocess
    would be (exit code, stdout, stderr): the command's own code and output without a process's
    seconds of imports, for a command that needs no crash, signal or overlap of its own.

    The test's ``DOCCHECK_*`` variables are unset first, then ``env`` applied (``COLUMNS`` 200
    unless given); ``cwd`` is the folder relative paths are read from. An exception other than
    the command's exit fails here with its traceback."""
    import contextlib
    import os
    import signal

    from typer.testing import CliRunner

    from doccheck.cli import app

    blank: dict[str, str | None] = {k: None for k in os.environ if k.startswith("DOCCHECK_")}
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        with contextlib.chdir(cwd or Path.cwd()):
            result = CliRunner().invoke(app, args, env={**blank, "COLUMNS": "200", **(env or {})})
    finally:  # what the command set stays with it: a later subprocess inherits this process's dispositions
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    return subprocess.CompletedProcess(["doccheck", *args], result.exit_code, result.stdout, result.stderr)


def flow_kwargs(**flat: Any) -> dict[str, Any]:
    """``bulk_check``'s keyword arguments from the CLI's flat option names (the option groups
    of ``doccheck.pipeline._options``), with ``credentials`` / ``api_key_block`` passed through."""
    from doccheck.pipeline import RunOptions

    passthrough = {k: flat.pop(k) for k in ("credentials", "api_key_block") if k in flat}
    return {**RunOptions.from_flat(**flat).flow_parameters(), **passthrough}


#: Both products, in the order the ledger sorts them.
BOTH = ("ai", "similarity")


def apply_event(ledger: Ledger, event_id: str, check_id: str, product: str, failed: bool) -> None:
    """Store and apply one signed-shape ``check.completed`` / ``check.failed`` event."""
    from tests.fixtures.events import event_body

    body = event_body(event_id, check_id, product, "check.failed" if failed else "check.completed",
                      error={"code": "processing_failed", "message": "x"} if failed else None)  # fmt: skip
    ledger.record_event(Event.model_validate_json(body), body)
    ledger.apply_pending_events()


WORDS = [
    "river",
    "mill",
    "grain",
    "water",
    "wheel",
    "stone",
    "miller",
    "flour",
    "village",
    "season",
    "harvest",
    "trade",
    "cart",
    "road",
    "market",
]


def essay(i: int) -> str:
    """A distinct ~120-200 word text per ``i`` (prices vary with length)."""
    n = 120 + (i * 37) % 90
    return " ".join(WORDS[(i * 7 + j * (i % 5 + 1)) % len(WORDS)] + (str(i) if j % 11 == 0 else "") for j in range(n))


def essay_manifest(folder: Path, name: str, start: int, count: int) -> Path:
    """A CSV manifest ``<name>.csv`` of ``count`` distinct essays ``d<start>``...: ids and texts."""
    path = folder / f"{name}.csv"
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["document_id", "text"])
        writer.writeheader()
        for i in range(start, start + count):
            writer.writerow({"document_id": f"d{i}", "text": essay(i)})
    return path


def random_text_manifest(path: Path, rows: int, *, words: int) -> Path:
    """A CSV manifest of ``rows`` texts of ``words`` random words each (seeded: the same file
    every time), for memory tests that compare manifests of different sizes."""
    import random

    vocabulary = [f"word{i}" for i in range(2000)]
    rnd = random.Random(7)
    with path.open("w", encoding="utf-8") as handle:
        handle.write("document_id,text\n")
        for i in range(rows):
            handle.write(f"student-{i:06d},{' '.join(rnd.choices(vocabulary, k=words))}\n")
    return path


def random_essay(seed: int, words: int = 150) -> str:
    """``words`` made-up words from ``seed``: texts that share no phrase (no similarity match)."""
    rnd = random.Random(seed)
    return " ".join(f"{rnd.choice('bcdfgklmnprstv')}{rnd.choice('aeiou')}{rnd.randrange(5000):x}" for _ in range(words))


async def run_locally(ledger: Ledger, base_url: str, api_key: str, options: RunOptions) -> RunSummary:
    """One run through the run seam with the local steps, as ``doccheck run --no-prefect --no-overlap``."""
    async with AsyncDocCheckClient(base_url, api_key) as client:
        return await run_checks(options, LocalSteps(ledger, client, params={"test": True}))
