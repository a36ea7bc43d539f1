"""The receiver under a flood of deliveries from every kind of sender (issue 39).

A real ``doccheck receiver`` process (SQLite ledger in a temporary folder, secret in an
owner-only file) takes N events' deliveries at once, C in flight, in two floods in the same
run: the emulator's own sender (the baseline), then the mixed senders of
:mod:`doccheck.emulator._senders` in turn (late failures, other product spellings, error
shapes, thin summaries, several ``v1``, millisecond ``t``, every event three times with
fresh ids and again with its own id). Prints answer latency p50/p95/p99 of each flood and
the ratio, the answers by status, and whether each valid event id is stored exactly once
(a millisecond ``t`` is refused 401 and stored never). Exit 1 unless p99 < 1 s and every
valid event is stored once.

Run:  .venv/bin/python benchmarks/receiver_flood.py [--events 1000] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from doccheck.emulator._senders import SENDERS, Planned, plan_deliveries, sign  # noqa: E402
from tests.fixtures.receiver import start_receiver, stop_receiver  # noqa: E402

SECRET = "whsec_" + "b" * 40


def event(serial: int, kind: str) -> dict[str, object]:
    """One event as the emulator makes it (a check the receiver's ledger never saw)."""
    product = "ai" if serial % 2 else "similarity"
    error = {"code": "processing_failed", "message": "the engine gave up"} if kind == "check.failed" else None
    return {"id": str(uuid.uuid4()), "object": "event", "type": kind, "created_at": "2026-11-27T20:00:00.000Z",
            "product": product, "check": {"id": f"chk_flood_{serial // 2}", "status": "processing", "name": "x",
                                          "products": ["ai", "similarity"], "metadata": {"document_id": f"d{serial}"},
                                          product: {"status": "failed" if error else "completed"}},
            "error": error}  # fmt: skip


def deliveries(n: int, mixed: bool) -> list[Planned]:
    out: list[Planned] = []
    names = sorted(SENDERS) if mixed else ["default"]
    for i in range(n):
        kind = "check.failed" if i % 5 == 0 else "check.completed"
        out += plan_deliveries(names[i % len(names)], event(i, kind), i)
    return out


async def flood(url: str, planned: list[Planned], concurrency: int) -> tuple[list[float], dict[int, int]]:
    """Every delivery POSTed over ``concurrency`` keep-alive connections of raw asyncio
    streams (a lean client: an httpx client in this process took more CPU than the receiver)."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    requests = [_request(parts.netloc, parts.path, p, i) for i, p in enumerate(planned)]
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    queue = iter(requests)

    async def worker() -> None:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            for raw in queue:
                started = time.perf_counter()
                writer.write(raw)
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
                await reader.readexactly(length)
                latencies.append(time.perf_counter() - started)
                status = int(head.split(b" ", 2)[1])
                statuses[status] = statuses.get(status, 0) + 1
        finally:
            writer.close()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies, statuses


def _request(netloc: str, path: str, p: Planned, serial: int) -> bytes:
    header = sign(p.style, SECRET, time.time(), p.body, serial)
    head = (f"POST {path} HTTP/1.1\r\nHost: {netloc}\r\nContent-Type: application/json\r\n"
            f"Service-Signature: {header}\r\nContent-Length: {len(p.body)}\r\n\r\n")  # fmt: skip
    return head.encode("ascii") + p.body


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="doccheck-flood-"))
    ok = True
    print(f"receiver flood: {args.events} events a flood, {args.concurrency} in flight, SQLite ledger")
    print("| flood | deliveries | p50 (ms) | p95 (ms) | p99 (ms) | answers | valid ids | stored once |")
    print("|---|---:|---:|---:|---:|---|---:|---|")
    p99s: dict[str, float] = {}
    for name, mixed in (("default sender", False), ("mixed senders", True)):
        receiver = start_receiver(f"sqlite:///{work / (name.split()[0] + '.db')}")
        try:
            receiver.store_secret(SECRET)
            planned = deliveries(args.events, mixed)
            latencies, statuses = asyncio.run(flood(receiver.webhook_url, planned, args.concurrency))
            valid = {p.event_id for p in planned if p.style != "millisecond-t"}
            stored = [e.event_id for e in receiver.ledger.events()]
            once = len(stored) == len(set(stored)) and set(stored) == valid
        finally:
            stop_receiver(receiver)
        p50, p95, p99 = (pct(latencies, q) * 1000 for q in (50, 95, 99))
        p99s[name] = p99
        answers = ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items()))
        print(f"| {name} | {len(planned)} | {p50:.1f} | {p95:.1f} | {p99:.1f} | {answers} | {len(valid)} | {once} |")
        ok = ok and once and p99 < 1000 and not any(s >= 500 for s in statuses)
    print(f"p99 mixed / default: {p99s['mixed senders'] / p99s['default sender']:.2f}x")
    print(json.dumps({"ok": ok, "p99_ms": {k: round(v, 1) for k, v in p99s.items()}}))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
