"""Chaos: the whole of issue 8 at once. One check per document and the reported cost equal
to the service's charge, through everything a real service and a real operator do.

Run:  make chaos   (= .venv/bin/python benchmarks/chaos.py [--n 300] [--database-url URL])

Starts a local Prefect server (no UI), a ``doccheck emulator`` and a ``doccheck receiver``
(the account webhook points at it; its secret is in the ledger), all on free local ports,
with a SQLite ledger in a temporary folder (or ``--database-url``, e.g. PostgreSQL). The
manifest has N distinct texts (products ai + similarity). Then, with 30 % injected 5xx,
30 % dropped deliveries, 5 % product failures and 30 ms latency per request:

1. three ``doccheck run --no-wait`` processes, each SIGKILLed (process group) while
   requests are in flight (once the ledger shows new ``submitting`` rows);
2. a 429 storm (rate limit 6 requests/s) during two concurrent ``doccheck run`` of the same
   manifest on the one ledger;
3. two days of service time (``POST /_emulator/clock/advance``): idempotency keys are
   forgotten (24 h) and every product has finished;
4. a resume, ``doccheck run`` with waiting (the faults still on);
5. faults off, ``doccheck collect --campaign`` until nothing is pending (at most 3 times).

Prints: documents, checks created (the emulator's state), documents with more than one
check (duplicates) and the extra checks, charged (service) vs reported (ledger: charged,
refunded, net, for the campaign and in the last run's report), products pending, rows
without a check. Exit 1 unless every figure is
exact: checks == documents, no duplicate, reported net == charged, nothing pending.
Not part of CI (about 3-6 minutes on 2 loaded cores).
"""

from __future__ import annotations

import argparse
import collections
import csv
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pipeline_throughput import WORDS  # noqa: E402 - the same vocabulary (benchmarks/ is on sys.path)

from doccheck.client import DocCheckClient  # noqa: E402
from doccheck.commands import Service, doccheck_command, free_port, prefect_command, start_service  # noqa: E402
from doccheck.ledger import Ledger, SubmissionRow, campaign_money  # noqa: E402
from doccheck.webhooks import SecretFile  # noqa: E402

API_KEY = "sk_test_chaos"
CAMPAIGN = "chaos"
TWO_DAYS = 2 * 24 * 3600
FAULTS = {"error_rate": 0.3, "webhook_drop_rate": 0.3, "product_failure_rate": 0.05, "latency_ms": 30}


def write_manifest(folder: Path, n: int, seed: int = 11) -> Path:
    """N distinct texts of 60-260 words (prices differ) in a CSV manifest."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "chaos.csv"
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["document_id", "text"])
        for i in range(n):
            words = [rng.choice(WORDS) for _ in range(rng.randint(60, 260))]
            writer.writerow([f"doc-{i:04d}", f"Essay {i}. " + " ".join(words) + "."])
    return path


class Chaos:
    """The services, the ledger and the helpers of one chaos run."""

    def __init__(self, work: Path, database_url: str | None) -> None:
        self.work = work
        self.db = database_url or f"sqlite:///{work / 'ledger.db'}"
        self.services: list[Service] = []
        self.env: dict[str, str] = {}
        self.root = ""

    # -- set-up ---------------------------------------------------------------------------

    def start(self) -> None:
        port = free_port()
        api = f"http://127.0.0.1:{port}/api"
        self.services.append(start_service(
            "prefect server", prefect_command("server", "start", "--host", "127.0.0.1", "--port", str(port), "--no-ui"),
            health_url=api + "/health", url=api, log_path=self.work / "prefect.log", timeout=180,
            env={"PREFECT_HOME": str(self.work / "prefect-server"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                 "PREFECT_API_URL": "", "PREFECT_SERVER_SERVICES_SCHEDULER_ENABLED": "false"},
        ))  # fmt: skip
        emu_port, storage_port = free_port(), free_port()
        self.root = f"http://127.0.0.1:{emu_port}"
        self.services.append(start_service(
            "emulator", doccheck_command(
                "emulator", "--host", "127.0.0.1", "--port", str(emu_port), "--storage-port", str(storage_port),
                "--api-key", API_KEY, "--balance-cents", "100000000", "--processing-seconds", "2",
                "--allow-private-webhooks", "--offline", "--seed", "8"),
            health_url=f"{self.root}/_emulator/health", url=self.root, log_path=self.work / "emulator.log",
            env={"PYTHONUNBUFFERED": "1"}, timeout=60,
        ))  # fmt: skip
        Ledger(self.db).close()  # the schema, before several processes race to create it
        rec_port = free_port()
        rec_root = f"http://127.0.0.1:{rec_port}"
        secret_path = self.work / "webhook-secret.json"  # owner-only file: secrets never go to the ledger
        self.services.append(start_service(
            "receiver", doccheck_command("receiver", "--host", "127.0.0.1", "--port", str(rec_port),
                                         "--database-url", self.db, "--webhook-secret-file", str(secret_path)),
            health_url=f"{rec_root}/healthz", url=rec_root, log_path=self.work / "receiver.log",
            env={"PYTHONUNBUFFERED": "1"}, timeout=60,
        ))  # fmt: skip
        with DocCheckClient(f"{self.root}/api/v1", API_KEY) as client:
            hook = client.put_webhook(f"{rec_root}/webhook")
        SecretFile(secret_path).store(hook.secret)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCCHECK_", "PREFECT_"))}
        self.env.update(
            DOCCHECK_BASE_URL=f"{self.root}/api/v1", DOCCHECK_API_KEY=API_KEY, DOCCHECK_DATABASE_URL=self.db,
            PREFECT_API_URL=api, PREFECT_HOME=str(self.work / "prefect-client"), COLUMNS="160",
            PREFECT_SERVER_ANALYTICS_ENABLED="false",
        )  # fmt: skip

    def stop(self) -> None:
        for service in reversed(self.services):
            service.stop()

    # -- the emulator's control surface ---------------------------------------------------

    def faults(self, **settings: Any) -> None:
        httpx.post(f"{self.root}/_emulator/faults", json=settings, timeout=30).raise_for_status()

    def advance(self, seconds: float) -> None:
        httpx.post(f"{self.root}/_emulator/clock/advance", json={"seconds": seconds}, timeout=300).raise_for_status()

    def account(self) -> dict[str, Any]:
        return httpx.get(f"{self.root}/_emulator/state", timeout=60).json()["accounts"][API_KEY]

    def checks_per_document(self) -> collections.Counter[str]:
        """How many checks the service holds per manifest document (from GET /checks)."""
        counts: collections.Counter[str] = collections.Counter()
        with DocCheckClient(f"{self.root}/api/v1", API_KEY) as client:
            for check in client.iter_checks(page_size=100):
                counts[str((check.metadata or {}).get("document_id") or check.name)] += 1
        return counts

    # -- doccheck processes ---------------------------------------------------------------

    def popen(self, *args: str, log: str) -> subprocess.Popen[bytes]:
        out = (self.work / f"{log}.log").open("wb")
        return subprocess.Popen(doccheck_command(*args), cwd=self.work, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip

    def run_args(self, manifest: Path, *extra: str) -> list[str]:
        return ["run", str(manifest), "--campaign", CAMPAIGN, "--products", "ai,similarity", "--no-progress",
                "--concurrency", "8", "--out", str(self.work / "reports"), *extra]  # fmt: skip

    def states(self) -> collections.Counter[str]:
        ledger = Ledger(self.db)
        try:
            with ledger.session() as s:
                from sqlmodel import select

                rows = s.exec(select(SubmissionRow.state).where(SubmissionRow.campaign == CAMPAIGN)).all()
            return collections.Counter(rows)
        finally:
            ledger.close()

    def kill_in_flight(self, manifest: Path, round_: int, timeout: float = 240) -> str:
        """Start a run and SIGKILL it once new requests are in flight (``submitting`` rows
        appeared and some answers came back since it started)."""
        before = self.states()
        proc = self.popen(*self.run_args(manifest, "--no-wait"), log=f"killed-{round_}")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.poll() is None:
            now = self.states()
            if now["submitting"] + now["uploading"] > 0 and now["submitted"] >= before["submitted"] + 15:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                now = self.states()
                return f"killed with {now['submitting']} in flight, {now['submitted']} submitted"
            time.sleep(0.05)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return "killed at the timeout"
        return f"finished before it could be killed (exit {proc.returncode})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300, help="documents (default 300)")
    parser.add_argument("--database-url", default=None, help="ledger (default: SQLite in a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder (logs, ledger, reports)")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="doccheck-chaos-"))
    manifest = write_manifest(work, args.n)
    chaos = Chaos(work, args.database_url)
    started = time.monotonic()
    steps: list[str] = []
    try:
        chaos.start()
        chaos.faults(**FAULTS)
        print(f"chaos: {args.n} documents (ai + similarity), faults {FAULTS}, ledger {chaos.db.split(':')[0]}")
        for i in range(3):
            steps.append(f"SIGKILL {i + 1}: {chaos.kill_in_flight(manifest, i + 1)}")
            print(steps[-1], flush=True)
        chaos.faults(rate_limit_per_s=6)  # a 429 storm over the two concurrent runs
        pair = [chaos.popen(*chaos.run_args(manifest, "--no-wait"), log=f"concurrent-{i}") for i in (1, 2)]
        codes = [p.wait(timeout=900) for p in pair]
        chaos.faults(rate_limit_per_s=0)
        steps.append(f"two concurrent runs under a 429 storm: exit {codes}, ledger states {dict(chaos.states())}")
        print(steps[-1], flush=True)
        chaos.advance(TWO_DAYS)
        steps.append("emulator clock advanced by two days (keys forgotten, products finished)")
        print(steps[-1], flush=True)
        resume = chaos.popen(*chaos.run_args(manifest, "--grace-seconds", "0", "--poll-interval", "0.5",
                                             "--wait-timeout", "240"), log="resume")  # fmt: skip
        steps.append(f"resume after the gap: exit {resume.wait(timeout=900)}, ledger states {dict(chaos.states())}")
        print(steps[-1], flush=True)
        chaos.faults(error_rate=0.0, webhook_drop_rate=0.0, product_failure_rate=0.0, latency_ms=0)
        chaos.advance(10)
        for i in range(3):
            code = chaos.popen(
                "collect", "--campaign", CAMPAIGN, "--out", str(work / "reports"), log=f"collect-{i}"
            ).wait(timeout=600)
            ledger = Ledger(chaos.db)
            pending = ledger.outcome_counts(campaign=CAMPAIGN)["pending"]
            ledger.close()
            steps.append(f"collect {i + 1}: exit {code}, products pending {pending}")
            print(steps[-1], flush=True)
            if not pending:
                break

        account = chaos.account()
        per_doc = chaos.checks_per_document()
        ledger = Ledger(chaos.db)
        try:
            with ledger.engine.connect() as conn:
                money = campaign_money(conn, CAMPAIGN)
            counts = ledger.outcome_counts(campaign=CAMPAIGN)
            states = chaos.states()
        finally:
            ledger.close()
        report = work / "reports" / "latest" / "submissions.parquet"
        in_report = int(pq.read_table(report).column("net_cents").to_pandas().sum()) if report.exists() else None
        duplicates = {d: n for d, n in per_doc.items() if n > 1}
        extra = sum(n - 1 for n in duplicates.values())
        without_check = args.n - len(per_doc)
        figures = [
            ("documents", args.n),
            ("checks created (emulator)", account["checks"]),
            ("documents with a check", len(per_doc)),
            ("documents billed more than once", len(duplicates)),
            ("extra checks (duplicates)", extra),
            ("charged by the service (cents, net of refunds)", account["charged_cents"]),
            ("reported charged (cents)", money.charged_cents),
            ("reported refunded (cents)", money.refunded_cents),
            ("reported net (cents)", money.net_cents),
            ("checks in the ledger's money", money.checks),
            ("net in the last run's submissions.parquet (cents)", in_report),
            ("products total / completed / failed / pending",
             f"{counts['total']} / {counts['completed']} / {counts['failed']} / {counts['pending']}"),
            ("ledger submission states", dict(states)),
            ("documents without a check", without_check),
            ("elapsed (s)", round(time.monotonic() - started, 1)),
        ]  # fmt: skip
    finally:
        chaos.stop()
    print()
    print("| figure | value |")
    print("|---|---|")
    for name, value in figures:
        print(f"| {name} | {value} |")
    exact = (
        account["checks"] == args.n and not duplicates and without_check == 0
        and money.net_cents == account["charged_cents"] and counts["pending"] == 0
    )  # fmt: skip
    print()
    print("every figure exact: " + ("YES" if exact else "NO"))
    if args.keep:
        print(f"logs, ledger and reports kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
