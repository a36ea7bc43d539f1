"""Peak memory of the client's upload flow vs file size (streamed vs reading the file whole).

Run:  .venv/bin/python benchmarks/upload_memory.py [--sizes 5,15,30,45]

A tiny sink server (its own process, so its memory does not count) plays the service and
the storage origin: POST /api/v1/uploads, PUT /storage/<id> (bytes counted and discarded),
POST /api/v1/checks. Each measurement runs in a fresh interpreter and reports:
- tracemalloc peak: Python allocations during the flow;
- RSS growth: highest current RSS (sampled every 5 ms from /proc) minus RSS before the flow.
"streamed" is ``client.submit(FileDocument(path))``; "whole" is the baseline that reads the
file into memory and PUTs the bytes (``client.put_upload(upload, path.read_bytes())``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

MiB = 1024 * 1024
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from doccheck.commands import free_port, wait_healthy  # noqa: E402


def serve(port: int) -> None:
    """The sink server (runs in its own process)."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    received: dict[str, int] = {}

    async def create_upload(request: Request) -> Response:
        body = await request.json()
        uid = str(uuid.uuid4())
        return JSONResponse(
            {"object": "upload", "upload_id": uid, "upload_url": f"http://127.0.0.1:{port}/storage/{uid}?sig=x",
             "expires_in": 600, "content_type": "text/plain", "instructions": "PUT", "filename": body["filename"]},
            status_code=201,
        )  # fmt: skip

    async def put(request: Request) -> Response:
        n = 0
        async for chunk in request.stream():
            n += len(chunk)
        received[request.path_params["uid"]] = n
        return Response(status_code=200)

    async def create_check(request: Request) -> Response:
        body = await request.json()
        return JSONResponse(
            {"id": str(uuid.uuid4()), "object": "check", "status": "processing", "products": ["ai"],
             "words": received.get(body.get("upload_id"), 0) // 6, "metadata": {}, "cost": {}, "files": {}},
            status_code=201,
        )  # fmt: skip

    async def checks(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [], "has_more": False})

    app = Starlette(
        routes=[
            Route("/api/v1/uploads", create_upload, methods=["POST"]),
            Route("/storage/{uid}", put, methods=["PUT"]),
            Route("/api/v1/checks", create_check, methods=["POST"]),
            Route("/api/v1/checks", checks, methods=["GET"]),
        ]
    )
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


CHILD = r"""
import json, sys, threading, time, tracemalloc
from pathlib import Path
from doccheck.client import DocCheckClient, FileDocument, RetryPolicy

def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096

base_url, path, how = sys.argv[1:4]
client = DocCheckClient(base_url, "sk_bench", retry=RetryPolicy(max_attempts=1), timeout=120)
client.list_checks(limit=1)
samples, done = [rss()], threading.Event()
def sample():
    while not done.is_set():
        samples.append(rss())
        time.sleep(0.005)
threading.Thread(target=sample, daemon=True).start()
tracemalloc.start()
if how == "streamed":
    client.submit(FileDocument(path), products=["ai"], idempotency_key="k")
else:
    p = Path(path)
    up = client.create_upload(p.name, size_bytes=p.stat().st_size)
    client.put_upload(up, p.read_bytes())
    client.create_check(upload_id=up.upload_id, products=["ai"], idempotency_key="k")
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
done.set()
samples.append(rss())
print(json.dumps({"tracemalloc_peak": peak, "rss_growth": max(samples) - samples[0]}))
"""


def make_file(path: Path, size: int) -> None:
    chunk = (b"lorem ipsum dolor sit amet " * 40000)[:MiB]
    with path.open("wb") as fh:
        while fh.tell() + len(chunk) <= size:
            fh.write(chunk)
        fh.write(b"x" * (size - fh.tell()))


def measure(base_url: str, path: Path, how: str) -> dict[str, int]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", CHILD, base_url, str(path), how],
                         capture_output=True, text=True, timeout=300, env=env, check=True)  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5,15,30,45", help="file sizes in MiB (4 < size <= 50)")
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
            f"{'size MiB':>8} | {'streamed: tracemalloc / RSS growth MiB':>38} | {'whole file: tracemalloc / RSS growth MiB':>40}"
        )
        with tempfile.TemporaryDirectory() as tmp:
            for size in [int(s) for s in args.sizes.split(",")]:
                path = Path(tmp) / f"doc{size}.txt"
                make_file(path, size * MiB)
                s = measure(base_url, path, "streamed")
                w = measure(base_url, path, "whole")
                print(f"{size:>8} | {s['tracemalloc_peak'] / MiB:>18.2f} / {s['rss_growth'] / MiB:>17.2f} | "
                      f"{w['tracemalloc_peak'] / MiB:>20.2f} / {w['rss_growth'] / MiB:>17.2f}")  # fmt: skip
                path.unlink()
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
