"""A term from object storage against the same term on local disk (issue 48).

Run:  .venv/bin/python benchmarks/storage_term.py [--n 10000] [--latency-ms 30] [--words 300]
          [--term-n 0] [--backends sqlite]

**Throughput** (``--n`` files): ``--n`` generated ``.txt`` documents (``--words`` words each, all
different) and a manifest of their paths, written once to a local folder and once to a bucket of
the tests' S3 server (moto in server mode, a subprocess) behind the tests' fault proxy, which
adds ``--latency-ms`` to every request the run makes. Each ``doccheck run --no-wait`` is a
subprocess against an emulator at its default latency, with a fresh SQLite ledger: first the
local term (the baseline), then the bucket's. Printed: wall and CPU seconds, the whole process
tree's peak RSS (sampled every 50 ms from /proc), and the throughput ratio bucket/local (issue
48's goal: ≥ 0.9, the store's latency hidden behind the service's). Then the rerun of each with
nothing changed: the bucket's must GET no document (the proxy's log counts them) and take no
longer than the local rerun plus one listing of the prefix timed alone (the test server lists
far slower than S3).

**The term** (``--term-n 100000``): a term of that many files from the bucket, first run and
rerun, each backend of ``--backends``; the process tree's peak RSS (goal: ≤ 300 MB).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT, ROOT / "benchmarks"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from _process_tree import TreePeak  # noqa: E402

API_KEY = "sk_test_storage_bench"
COURSES = 200


def make_documents(folder: Path, n: int, words: int, seed: int = 48) -> Path:
    """``n`` distinct ``.txt`` documents under ``folder/docs`` and ``folder/manifest.csv`` naming them."""
    rnd = random.Random(seed)
    vocabulary = [f"{rnd.choice('bcdfghklmnprstvw')}{rnd.choice('aeiou')}{i:x}" for i in range(5000)]
    (folder / "docs").mkdir(parents=True, exist_ok=True)
    manifest = folder / "manifest.csv"
    with manifest.open("w", encoding="utf-8") as handle:
        handle.write("document_id,course,path\n")
        for i in range(n):
            name = f"docs/{i % COURSES:03d}/s{i:07d}.txt"
            (folder / name).parent.mkdir(exist_ok=True)
            (folder / name).write_text(" ".join(rnd.choices(vocabulary, k=words)), encoding="utf-8")
            handle.write(f"s{i:07d},course-{i % COURSES:03d},{name}\n")
    return manifest


def upload(folder: Path, fs: Any, prefix: str) -> float:
    """Put every file of ``folder`` under ``prefix`` (straight to moto: no latency, not counted)."""
    started = time.perf_counter()
    fs.put(str(folder) + "/", prefix + "/", recursive=True)
    return time.perf_counter() - started


def timed_run(manifest: str, *, database_url: str, out: Path, env: dict[str, str]) -> dict[str, float]:
    """One ``doccheck run --no-wait`` as a subprocess: wall and CPU seconds, its tree's peak RSS."""
    from doccheck.commands import doccheck_command

    args = doccheck_command("run", manifest, "--no-wait", "--no-progress", "--campaign", "term",
                            "--metadata-columns", "course", "--database-url", database_url, "--out", str(out))  # fmt: skip
    started = time.perf_counter()
    child = subprocess.Popen(args, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak = TreePeak(child.pid).start()
    output = child.stdout.read() if child.stdout else ""
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - started
    peak.stop()
    tree_mb = peak.peak_kb / 1024
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"doccheck run failed ({os.waitstatus_to_exitcode(status)}):\n{output[-3000:]}")
    return {"seconds": elapsed, "cpu": usage.ru_utime + usage.ru_stime, "tree_mb": tree_mb,
            "own_mb": usage.ru_maxrss / 1024}  # fmt: skip


def store_seconds(moto_pid: int) -> float:
    """CPU seconds so far of the test's store: moto's process and this one (the fault proxy's thread
    is most of this process's CPU while a run works). Real S3 costs the machine none of it."""
    import psutil

    moto, own = psutil.Process(moto_pid).cpu_times(), psutil.Process().cpu_times()
    return moto.user + moto.system + own.user + own.system


def requests_seen(requests: list[Any]) -> str:
    """The proxy's log in one line: how many requests of each kind (a LIST apart from a GET)."""
    kinds = Counter("LIST" if r.is_list else r.method for r in requests)
    return ", ".join(f"{count} {kind}" for kind, count in kinds.most_common()) or "none"


def start_emulator(work: Path) -> tuple[Any, str]:
    """An emulator at its default latency that holds results back for a day (the runs do not wait)."""
    from doccheck.commands import doccheck_command, free_port, start_service

    port, storage_port = free_port(), free_port()
    args = doccheck_command(
        "emulator", "--host", "127.0.0.1", "--port", str(port), "--storage-port", str(storage_port),
        "--api-key", API_KEY, "--balance-cents", "1000000000", "--processing-seconds", "86400", "--offline",
        "--seed", "1",
    )  # fmt: skip
    root = f"http://127.0.0.1:{port}"
    service = start_service("emulator", args, health_url=f"{root}/_emulator/health", url=root,
                            log_path=work / "emulator.log", env={"PYTHONUNBUFFERED": "1"}, timeout=60)  # fmt: skip
    return service, root


def show(label: str, figures: dict[str, float], extra: str = "") -> None:
    print(f"{label:>28}: {figures['seconds']:7.1f} s (CPU {figures['cpu']:.1f} s), process tree peak "
          f"{figures['tree_mb']:4.0f} MB (the command alone {figures['own_mb']:.0f} MB){extra}", flush=True)  # fmt: skip


def main() -> None:
    from tests.fixtures.processes import stop_process
    from tests.fixtures.s3 import ACCESS_KEY_ID, SECRET_ACCESS_KEY, s3_environment, start_s3_server
    from tests.fixtures.s3_proxy import FaultProxy

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000, help="the throughput comparison's documents (0: none)")
    parser.add_argument("--words", type=int, default=300)
    parser.add_argument("--latency-ms", type=float, default=30.0)
    parser.add_argument("--term-n", type=int, default=0, help="also a term of this many files from the bucket")
    args = parser.parse_args()
    import s3fs

    with tempfile.TemporaryDirectory(prefix="doccheck-storage-") as tmp, contextlib.ExitStack() as stack:
        work = Path(tmp)
        server = start_s3_server()
        stack.callback(stop_process, server.process)
        proxy = FaultProxy(server.url)
        stack.callback(proxy.close)
        setup = s3fs.S3FileSystem(key="x", secret="y", client_kwargs={"endpoint_url": server.url})
        setup.mkdir("term-data")
        service, root = start_emulator(work)
        stack.callback(service.stop)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "DOCCHECK_", "AWS_"))}
        env.update(PREFECT_HOME=str(work / "prefect-home"), DOCCHECK_API_KEY=API_KEY,
                   DOCCHECK_BASE_URL=f"{root}/api/v1", **s3_environment(proxy.url, SECRET_ACCESS_KEY))  # fmt: skip
        sizes = ([("throughput", args.n)] if args.n else []) + ([("term", args.term_n)] if args.term_n else [])
        for kind, n in sizes:
            local = work / kind
            started = time.perf_counter()
            manifest = make_documents(local, n, args.words)
            took = upload(local, setup, f"term-data/{kind}")
            print(f"{kind}: {n} documents of {args.words} words, written in {time.perf_counter() - started:.0f} s, "
                  f"put in the bucket in {took:.0f} s", flush=True)  # fmt: skip
            url = f"s3://term-data/{kind}/manifest.csv"
            proxy.set_faults(latency_ms=args.latency_ms)
            figures = {}
            for where, source in (("local", str(manifest)), ("bucket", url)):
                if kind == "term" and where == "local":
                    continue
                ledger = f"sqlite:///{work / f'{kind}-{where}.db'}"
                for label in ("first run", "rerun"):
                    proxy.clear_log()
                    store_cpu = store_seconds(server.process.pid)
                    figures[(where, label)] = f = timed_run(
                        source, database_url=ledger, out=work / f"out-{kind}-{where}", env=env
                    )
                    f["store_cpu"] = store_seconds(server.process.pid) - store_cpu
                    gets = len(proxy.gets_of(f"term-data/{kind}/docs/"))
                    show(f"{where} {label}", f, f", {gets} GETs/HEADs of documents" if where == "bucket" else "")
                    if where == "bucket":
                        print(f"{'':>30}the store's requests: {requests_seen(proxy.requests)}; CPU of the test's "
                              f"store on the same cores: {f['store_cpu']:.1f} s (moto and the fault proxy)", flush=True)  # fmt: skip
            if kind == "throughput":
                proxy.clear_log()
                fs = s3fs.S3FileSystem(key=ACCESS_KEY_ID, secret=SECRET_ACCESS_KEY, skip_instance_cache=True,
                                       use_listings_cache=False, client_kwargs={"endpoint_url": proxy.url})  # fmt: skip
                started = time.perf_counter()
                listed = len(fs.find(f"term-data/{kind}"))
                listing = time.perf_counter() - started
                local_first, bucket_first = figures[("local", "first run")], figures[("bucket", "first run")]
                ratio = local_first["seconds"] / bucket_first["seconds"]
                allowance = figures[("local", "rerun")]["seconds"] + listing
                print(f"throughput ratio bucket/local: {ratio:.2f} (goal >= 0.9); one listing of the prefix alone: "
                      f"{listing:.1f} s ({listed} keys); bucket rerun {figures[('bucket', 'rerun')]['seconds']:.1f} s "
                      f"against local rerun + listing {allowance:.1f} s", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
