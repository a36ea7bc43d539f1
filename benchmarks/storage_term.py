"""A term from object storage against the same term on local disk (issue 48).

Run:  .venv/bin/python benchmarks/storage_term.py [--n 10000] [--latency-ms 30] [--words 300]
          [--term-n 0] [--skip-local] [--trace-dir DIR] [--store-nice 19] [--store-gets direct]

**The store**: moto's S3 app in a process of its own (``benchmarks/_moto_store.py``), which sleeps
``--latency-ms`` in each request's thread before answering and counts the requests itself; the
documents are put in it through moto's Python API on the backend it serves (seconds for 100,000).
Its own CPU is printed beside the command's: real S3 costs the machine none of it, so the store
runs at ``--store-nice`` 19 by default: it answers when the command leaves a core free (its latency
only grows when the command is busy), instead of taking the command's cores (``--store-nice 0``).
And a whole object's GET (no range, no query) is answered from moto's backend by the store itself
(``--store-gets direct``, the default): moto's app costs ~2.5 ms of the store's GIL a request, so
one process of it serves ~350 GETs a second at most (16 readers at 30 ms saw ~53 ms a GET), below
what a term's reads need; S3 serves thousands at once. ``--store-gets moto`` keeps moto's own.

**Throughput** (``--n`` files): ``--n`` generated ``.txt`` documents (``--words`` words each, all
different) and a manifest of their paths, written once to a local folder and put once in the
bucket. Each ``doccheck run --no-wait`` is a subprocess against an emulator at its default latency,
with a fresh SQLite ledger: first the local term (the baseline), then the bucket's. Printed: wall
and CPU seconds, the whole process tree's peak RSS (sampled every 50 ms from /proc), and the
throughput ratio bucket/local (issue 48's goal: >= 0.9, the store's latency hidden behind the
service's). Then the rerun of each with nothing changed: the bucket's must GET no document (the
store counts them) and take no longer than the local rerun plus one listing of the prefix timed
alone (moto lists far slower than S3).

**The term** (``--term-n 100000``): a term of that many files from the bucket, first run and
rerun; the process tree's peak RSS (goal: <= 300 MB).
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


def timed_run(
    manifest: str, *, database_url: str, out: Path, env: dict[str, str], trace: Path | None = None
) -> dict[str, float]:
    """One ``doccheck run --no-wait`` as a subprocess: wall and CPU seconds, its tree's peak RSS
    (``trace``: every sample of it written there as CSV, and who held the peak printed)."""
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
    if trace is not None:
        trace.write_text("seconds,tree_mb,command_mb\n" + "".join(
            f"{t:.2f},{tree / 1024:.1f},{own / 1024:.1f}\n" for t, tree, own in peak.trace), encoding="utf-8")  # fmt: skip
        print(f"{'':>30}{peak.breakdown()}; samples in {trace}", flush=True)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"doccheck run failed ({os.waitstatus_to_exitcode(status)}):\n{output[-3000:]}")
    return {"seconds": elapsed, "cpu": usage.ru_utime + usage.ru_stime, "tree_mb": tree_mb,
            "own_mb": usage.ru_maxrss / 1024}  # fmt: skip


class BenchStore:
    """``_moto_store.py`` in a process of its own: moto's S3 app, the latency added inside it, its
    requests counted inside it, its backend filled in-process (docs/benchmarks.md says why)."""

    def __init__(self, work: Path, latency_ms: float, nice: int = 0, *, direct_gets: bool = False) -> None:
        import httpx

        from doccheck.commands import free_port, start_service

        port = free_port()
        args = [sys.executable, str(ROOT / "benchmarks" / "_moto_store.py"), "--port", str(port), "--nice", str(nice),
                *(["--direct-gets"] if direct_gets else [])]  # fmt: skip
        self.url = f"http://127.0.0.1:{port}"
        self.service = start_service("s3 store", args, health_url=f"{self.url}/_bench/requests", url=self.url,
                                     log_path=work / "store.log", env={"AWS_DEFAULT_REGION": "us-east-1"}, timeout=60)  # fmt: skip
        self.pid = self.service.process.pid
        self._http = httpx.Client(base_url=self.url, timeout=600.0, trust_env=False)
        self._control("latency", ms=latency_ms)

    def _control(self, what: str, **params: Any) -> dict[str, Any]:
        if what == "requests":
            answer = self._http.get(f"/_bench/{what}", params=params)
        else:
            answer = self._http.post(f"/_bench/{what}", params=params)
        answer.raise_for_status()
        result: dict[str, Any] = answer.json()
        return result

    def fill(self, bucket: str, prefix: str, folder: Path) -> float:
        """Every file of ``folder`` put under ``bucket/prefix`` (moto's Python API, in its process)."""
        return float(self._control("fill", bucket=bucket, prefix=prefix, folder=str(folder))["seconds"])

    def clear(self) -> None:
        """Forget the requests so far."""
        self._control("clear")

    def requests(self, prefix: str = "") -> dict[str, Any]:
        """The requests by kind, the GETs and HEADs of objects under ``prefix``, the store's CPU so far."""
        return self._control("requests", prefix=prefix)

    def close(self) -> None:
        self._http.close()
        self.service.stop()


def requests_seen(kinds: dict[str, int]) -> str:
    """The store's requests in one line: how many of each kind (a LIST apart from a GET)."""
    return ", ".join(f"{count} {kind}" for kind, count in Counter(kinds).most_common()) or "none"


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
    from tests.fixtures.s3 import ACCESS_KEY_ID, SECRET_ACCESS_KEY, s3_environment

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000, help="the throughput comparison's documents (0: none)")
    parser.add_argument("--words", type=int, default=300)
    parser.add_argument("--latency-ms", type=float, default=30.0)
    parser.add_argument("--term-n", type=int, default=0, help="also a term of this many files from the bucket")
    parser.add_argument("--skip-local", action="store_true", help="the bucket's runs only (no baseline, no ratio)")
    parser.add_argument("--trace-dir", type=Path, help="write each run's RSS samples there (CSV) and who held the peak")
    parser.add_argument("--store-nice", type=int, default=19,
                        help="the test store's CPU priority (19: it yields the cores to the command; 0: it competes)")  # fmt: skip
    parser.add_argument("--store-gets", choices=("direct", "moto"), default="direct",
                        help="a whole object's GET answered from moto's backend directly (default) or by moto's app")  # fmt: skip
    args = parser.parse_args()
    import s3fs

    with tempfile.TemporaryDirectory(prefix="doccheck-storage-") as tmp, contextlib.ExitStack() as stack:
        work = Path(tmp)
        store = BenchStore(work, args.latency_ms, args.store_nice, direct_gets=args.store_gets == "direct")
        stack.callback(store.close)
        service, root = start_emulator(work)
        stack.callback(service.stop)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "DOCCHECK_", "AWS_"))}
        env.update(PREFECT_HOME=str(work / "prefect-home"), DOCCHECK_API_KEY=API_KEY,
                   DOCCHECK_BASE_URL=f"{root}/api/v1", **s3_environment(store.url, SECRET_ACCESS_KEY))  # fmt: skip
        sizes = ([("throughput", args.n)] if args.n else []) + ([("term", args.term_n)] if args.term_n else [])
        for kind, n in sizes:
            local = work / kind
            started = time.perf_counter()
            manifest = make_documents(local, n, args.words)
            took = store.fill("term-data", kind, local)
            print(f"{kind}: {n} documents of {args.words} words, written in {time.perf_counter() - started:.0f} s, "
                  f"put in the bucket in {took:.1f} s (moto's backend, in its process)", flush=True)  # fmt: skip
            url = f"s3://term-data/{kind}/manifest.csv"
            figures = {}
            for where, source in (("local", str(manifest)), ("bucket", url)):
                if where == "local" and (kind == "term" or args.skip_local):
                    continue
                ledger = f"sqlite:///{work / f'{kind}-{where}.db'}"
                for label in ("first run", "rerun"):
                    store.clear()
                    before = store.requests()["cpu_seconds"]
                    trace = args.trace_dir / f"{kind}-{where}-{label.replace(' ', '-')}.csv" if args.trace_dir else None
                    figures[(where, label)] = f = timed_run(
                        source, database_url=ledger, out=work / f"out-{kind}-{where}", env=env, trace=trace
                    )
                    seen = store.requests(f"term-data/{kind}/docs/")
                    f["store_cpu"] = seen["cpu_seconds"] - before
                    extra = f", {seen['object_reads']} GETs/HEADs of documents" if where == "bucket" else ""
                    show(f"{where} {label}", f, extra)
                    if where == "bucket":
                        print(f"{'':>30}the store's requests: {requests_seen(seen['kinds'])}; CPU of the test's "
                              f"store on the same cores: {f['store_cpu']:.1f} s (moto, nice {args.store_nice}, {args.store_gets} GETs)", flush=True)  # fmt: skip
            if kind == "throughput":
                fs = s3fs.S3FileSystem(key=ACCESS_KEY_ID, secret=SECRET_ACCESS_KEY, skip_instance_cache=True,
                                       use_listings_cache=False, client_kwargs={"endpoint_url": store.url})  # fmt: skip
                started = time.perf_counter()
                listed = len(fs.find(f"term-data/{kind}"))
                listing = time.perf_counter() - started
                print(f"one listing of the prefix alone: {listing:.1f} s ({listed} keys)", flush=True)
                if ("local", "first run") in figures:
                    local_first, bucket_first = figures[("local", "first run")], figures[("bucket", "first run")]
                    ratio = local_first["seconds"] / bucket_first["seconds"]
                    allowance = figures[("local", "rerun")]["seconds"] + listing
                    print(f"throughput ratio bucket/local: {ratio:.2f} (goal >= 0.9); bucket rerun "
                          f"{figures[('bucket', 'rerun')]['seconds']:.1f} s against local rerun + listing "
                          f"{allowance:.1f} s", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
