"""Peak memory of fetching a service file: streamed to disk (``download_file``, what
``--download`` uses) vs held whole in memory (``get_file``, the baseline).

Run:  .venv/bin/python benchmarks/download_memory.py [--sizes 5,20,50]

A tiny server (its own process, so its memory does not count) answers
``GET /api/v1/checks/<id>/files/original`` with N MiB, generated chunk by chunk. Each
measurement runs in a fresh interpreter and reports the tracemalloc peak (Python
allocations during the fetch) and the RSS growth (highest RSS sampled every 5 ms minus RSS
before the fetch). Also checks that the streamed file has the right size.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

MiB = 1024 * 1024
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from doccheck.commands import free_port, wait_healthy  # noqa: E402


def serve(port: int) -> None:
    """The file server (runs in its own process)."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    chunk = (b"lorem ipsum dolor sit amet " * 40000)[:MiB]

    async def file(request: Request) -> Response:
        size = int(request.path_params["cid"].removeprefix("chk_")) * MiB

        async def body():  # type: ignore[no-untyped-def]
            sent = 0
            while sent < size:
                part = chunk[: min(MiB, size - sent)]
                sent += len(part)
                yield part

        return StreamingResponse(body(), media_type="text/plain", headers={"Content-Length": str(size)})

    async def checks(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [], "has_more": False})

    app = Starlette(routes=[Route("/api/v1/checks/{cid}/files/{kind}", file), Route("/api/v1/checks", checks)])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


CHILD = r"""
import asyncio, json, sys, threading, time, tracemalloc
from pathlib import Path
from doccheck.client import AsyncDocCheckClient, RetryPolicy

def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096

base_url, size, dest, how = sys.argv[1:5]

async def main():
    async with AsyncDocCheckClient(base_url, "sk_bench", retry=RetryPolicy(max_attempts=1), timeout=120) as client:
        await client.list_checks(limit=1)
        samples, done = [rss()], threading.Event()
        def sample():
            while not done.is_set():
                samples.append(rss())
                time.sleep(0.005)
        threading.Thread(target=sample, daemon=True).start()
        tracemalloc.start()
        if how == "streamed":
            await client.download_file(f"chk_{size}", "original", dest)
            got = Path(dest).stat().st_size
        else:
            data = await client.get_file(f"chk_{size}", "original")
            got = len(data)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        done.set()
        samples.append(rss())
        print(json.dumps({"tracemalloc_peak": peak, "rss_growth": max(samples) - samples[0], "bytes": got}))

asyncio.run(main())
"""


def measure(base_url: str, size: int, dest: Path, how: str) -> dict[str, int]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", CHILD, base_url, str(size), str(dest), how],
                         capture_output=True, text=True, timeout=300, env=env, check=True)  # fmt: skip
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["bytes"] == size * MiB, result
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5,20,50", help="file sizes in MiB")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    port = free_port()
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port)])
    try:
        if not wait_healthy(f"http://127.0.0.1:{port}/api/v1/checks", timeout=20, process=server):
            raise SystemExit("the local file server did not start")
        base_url = f"http://127.0.0.1:{port}/api/v1"
        print(
            f"{'size MiB':>8} | {'streamed: tracemalloc / RSS growth MiB':>38} | {'in memory: tracemalloc / RSS growth MiB':>39} | tracemalloc ratio"
        )
        with tempfile.TemporaryDirectory() as tmp:
            for size in [int(s) for s in args.sizes.split(",")]:
                dest = Path(tmp) / f"file{size}"
                s = measure(base_url, size, dest, "streamed")
                w = measure(base_url, size, dest, "whole")
                ratio = w["tracemalloc_peak"] / max(1, s["tracemalloc_peak"])
                print(f"{size:>8} | {s['tracemalloc_peak'] / MiB:>18.2f} / {s['rss_growth'] / MiB:>17.2f} | "
                      f"{w['tracemalloc_peak'] / MiB:>19.2f} / {w['rss_growth'] / MiB:>17.2f} | {ratio:>8.1f}x")  # fmt: skip
                dest.unlink(missing_ok=True)
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
