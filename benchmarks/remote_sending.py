"""Sending documents from a bucket keeps up with sending them from the disk (docs/storage.md).

Run:  .venv/bin/python benchmarks/remote_sending.py [--n 1000] [--concurrency 8] [--store-latency-ms 30]
                                                   [--upload 0] [--rounds 2]

``submit_batch`` only (planning is not measured: the sizes are given, as planning records them),
against a real ``doccheck emulator`` at its default latency and a SQLite ledger, the same
``--n`` essays (multipart, 1-3 kB) and ``--upload`` documents of 5 MiB (the upload flow) sent once
from a local folder and once from the tests' S3 server (moto behind the fault proxy, which adds
``--store-latency-ms`` to every request), each in a fresh campaign, rounds alternating. Prints
docs/s for both, their ratio, and the store's requests a document (no HEAD: the sizes are known).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import closing
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from doccheck.client import AsyncDocCheckClient  # noqa: E402
from doccheck.ledger import Ledger  # noqa: E402
from doccheck.pipeline import SubmitOptions, submit_batch  # noqa: E402
from doccheck.storage import resolve  # noqa: E402
from tests.factories import planned, random_essay  # noqa: E402
from tests.fixtures.emulator import start_emulator, stop_emulator  # noqa: E402
from tests.fixtures.processes import stop_process  # noqa: E402
from tests.fixtures.s3 import SECRET_ACCESS_KEY, s3_environment, start_s3_server  # noqa: E402
from tests.fixtures.s3_proxy import FaultProxy  # noqa: E402

MiB = 1024 * 1024


def corpus(n: int, uploads: int) -> dict[str, bytes]:
    """``n`` essays and ``uploads`` 5 MiB documents, by file name."""
    rng = random.Random(3)
    files = {f"essay{i:05d}.txt": random_essay(i, rng.randint(150, 450)).encode() for i in range(n)}
    for i in range(uploads):
        files[f"thesis{i}.txt"] = (random_essay(10_000 + i, 400) + "\n").encode() * (5 * MiB // 2600)
    return files


def documents(base: str, files: dict[str, bytes], tag: str) -> list[Any]:
    docs = []
    for row, (name, data) in enumerate(files.items(), start=1):
        mode = "upload" if len(data) > 4 * MiB else "multipart"
        path = resolve(f"{base}/{name}")
        docs.append(planned(name, row=row, mode=mode, path=path, text=None, size_bytes=len(data),
                            idempotency_key=f"dc1-{tag}-{name}"))  # fmt: skip
    return docs


async def send(base_url: str, key: str, ledger: Ledger, docs: list[Any], concurrency: int) -> float:
    async with AsyncDocCheckClient(base_url, key) as client:
        started = time.perf_counter()
        result = await submit_batch(client, ledger, ledger.start_run(campaign=uuid.uuid4().hex), docs,
                                    SubmitOptions(concurrency=concurrency))  # fmt: skip
        seconds = time.perf_counter() - started
    assert result.submitted == len(docs) and not result.failed, result.failures[:3]
    return len(docs) / seconds


class ProxyProcess:
    """The fault proxy in a process of its own (in this one, its work would share the sending
    process's interpreter lock); asked over its stdin to clear its log and count the GETs."""

    def __init__(self, upstream: str, latency_ms: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve-proxy", upstream, "--store-latency-ms", str(latency_ms)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()

    def ask(self, command: str) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self.process.stdout.readline().strip()

    def close(self) -> None:
        stop_process(self.process)


def serve_proxy(upstream: str, latency_ms: float) -> None:
    proxy = FaultProxy(upstream)
    proxy.set_faults(latency_ms=latency_ms)
    print(proxy.url, flush=True)
    for line in sys.stdin:
        if line.strip() == "clear":
            proxy.clear_log()
            print("ok", flush=True)
        elif line.strip() == "count":
            reads = proxy.gets_of("bench/docs/")
            print(f"{len(reads)} {sum(r.method == 'HEAD' for r in reads)}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve-proxy", metavar="UPSTREAM", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--upload", type=int, default=0, help="5 MiB documents sent by the upload flow")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--store-latency-ms", type=float, default=30.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if args.serve_proxy:
        return serve_proxy(args.serve_proxy, args.store_latency_ms)
    emulator, server = start_emulator(), start_s3_server()
    proxy = ProxyProcess(server.url, args.store_latency_ms)
    try:
        os.environ.update(s3_environment(proxy.url, SECRET_ACCESS_KEY))
        import s3fs

        setup = s3fs.S3FileSystem(endpoint_url=server.url, skip_instance_cache=True)
        setup.mkdir("bench")
        files = corpus(args.n, args.upload)
        setup.pipe({f"bench/docs/{name}": data for name, data in files.items()})
        rates: dict[str, list[float]] = {"local disk": [], "bucket": []}
        requests: list[str] = []
        with tempfile.TemporaryDirectory() as folder:
            for name, data in files.items():
                (Path(folder) / name).write_bytes(data)
            for round_ in range(args.rounds):
                with closing(Ledger(f"sqlite:///{folder}/ledger-{round_}.db")) as ledger:
                    key = emulator.new_account(10**9)
                    for where, base in (("local disk", folder), ("bucket", "s3://bench/docs")):
                        proxy.ask("clear")
                        docs = documents(base, files, uuid.uuid4().hex[:8])
                        rates[where].append(asyncio.run(send(emulator.base_url, key, ledger, docs, args.concurrency)))
                    requests.append(proxy.ask("count"))
        local, remote = (statistics.median(rates[w]) for w in ("local disk", "bucket"))
        print(f"{args.n} essays + {args.upload} uploads of 5 MiB, concurrency {args.concurrency}, emulator at its "
              f"default latency, store {args.store_latency_ms:.0f} ms a request, median of {args.rounds} rounds")  # fmt: skip
        gets, heads = (int(x) for x in requests[-1].split())
        print(f"local disk: {local:.1f} docs/s; bucket: {remote:.1f} docs/s; ratio {remote / local:.2f}; "
              f"the store's GETs and HEADs a document: {gets / len(files):.2f}, of them HEADs: {heads}")  # fmt: skip
    finally:
        proxy.close()
        stop_process(server.process)
        server.log_path.unlink(missing_ok=True)
        stop_emulator(emulator)


if __name__ == "__main__":
    main()
