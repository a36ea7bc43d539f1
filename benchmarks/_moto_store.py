"""The benchmarks' S3 server: moto's own server app in a process of its own, the store's latency
added inside it, its requests counted inside it, and its backend filled in-process.

Why not the tests' S3 server (``moto.server``) behind the tests' fault proxy: the proxy is a second
HTTP hop in Python (h11 and httpcore in the benchmark's process) and moto's dev server closed the
connection after every answer, so each request cost the harness ~5.6 ms of CPU on the two cores
the command under test runs on (112 s during a 10,000-document first run, more than the command's
own 68.5 s). Real S3 costs the machine none of that. Here the same moto app (the same S3 semantics:
ETags, pages of 1,000 keys, errors) is served by werkzeug's threaded server with HTTP/1.1 keep-alive,
and the ``latency_ms`` is a ``time.sleep`` in the request's own thread before moto answers: every
request still waits that long, many at once, as they would on a real store. Putting 100,000 objects
through HTTP took ~30 minutes; ``/_bench/fill`` puts a local folder's files in a bucket through moto's
Python API on the very backend the server serves, in seconds.

Run (the benchmark does)::

    python benchmarks/_moto_store.py --port P [--latency-ms 30] [--nice 19]

Control paths (never S3's: a bucket cannot be named ``_bench``):

- ``POST /_bench/latency?ms=30``: the latency from now on;
- ``POST /_bench/fill?bucket=B&prefix=P&folder=/abs/path``: every file under the folder put as
  ``B/P/<relative path>`` (the bucket made if missing); answers ``{"objects": n, "seconds": s}``;
- ``GET /_bench/requests?prefix=B/P/``: ``{"kinds": {"GET": n, "LIST": n, ...}, "object_reads": n,
  "cpu_seconds": s}``: the requests since the last clear by kind, the GETs and HEADs of objects
  under the prefix, and this process's CPU seconds so far (user + system);
- ``POST /_bench/clear``: forget the requests so far.

Not a benchmark itself (``run_all.py`` skips modules starting with ``_``).
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote

#: The query parameters of a LIST (as the tests' fault proxy counts them).
LIST_PARAMS = frozenset({"list-type", "prefix", "delimiter", "max-keys", "continuation-token", "start-after",
                         "marker", "encoding-type", "fetch-owner", "versions", "key-marker", "version-id-marker"})  # fmt: skip
ACCOUNT_ID = "123456789012"  # moto's default account, the one its server serves


class Store:
    """moto's WSGI app with the latency, the log and the control paths in front of it."""

    def __init__(self, app: Callable[..., Iterable[bytes]], latency_ms: float, *, direct_gets: bool = False) -> None:
        self.app = app
        self.latency_ms = latency_ms
        self.direct_gets = direct_gets
        self._lock = threading.Lock()
        self._log: list[tuple[str, str, bool]] = []  # method, bucket/key, is a LIST

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = unquote(environ.get("PATH_INFO", ""))
        if path.startswith("/_bench/"):
            return self._control(path, parse_qs(environ.get("QUERY_STRING", "")), start_response)
        method = environ["REQUEST_METHOD"].upper()
        bucket, _, key = path.lstrip("/").partition("/")
        query = set(parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True))
        is_list = method == "GET" and bool(bucket) and not key and query <= LIST_PARAMS
        with self._lock:
            self._log.append((method, f"{bucket}/{key}", is_list))
            latency = self.latency_ms
        if latency:
            time.sleep(latency / 1000)  # in this request's thread: the others wait their own
        if self.direct_gets and method == "GET" and key and not query and "HTTP_RANGE" not in environ:
            found = _stored_object(bucket, key)
            if found is not None:
                return _object_answer(found, start_response)
        return self.app(environ, start_response)

    def _control(self, path: str, query: dict[str, list[str]], start_response: Callable[..., Any]) -> list[bytes]:
        one = {name: values[0] for name, values in query.items()}
        if path == "/_bench/latency":
            self.latency_ms = float(one["ms"])
            answer: dict[str, Any] = {"latency_ms": self.latency_ms}
        elif path == "/_bench/fill":
            answer = fill(one["bucket"], one.get("prefix", ""), Path(one["folder"]))
        elif path == "/_bench/clear":
            with self._lock:
                self._log.clear()
            answer = {}
        elif path == "/_bench/requests":
            answer = self._requests(one.get("prefix", ""))
        else:
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"no such control path"]
        start_response("200 OK", [("Content-Type", "application/json")])
        return [json.dumps(answer).encode()]

    def _requests(self, prefix: str) -> dict[str, Any]:
        with self._lock:
            log = list(self._log)
        kinds: dict[str, int] = {}
        for method, _, is_list in log:
            kind = "LIST" if is_list else method
            kinds[kind] = kinds.get(kind, 0) + 1
        reads = sum(1 for method, where, _ in log if method in ("GET", "HEAD") and where.startswith(prefix)
                    and not where.endswith("/"))  # fmt: skip
        times = os.times()
        return {"kinds": kinds, "object_reads": reads, "cpu_seconds": times.user + times.system}


def _stored_object(bucket: str, key: str) -> Any:
    """moto's stored object (a ``FakeKey``) at ``bucket/key``, None when there is none (moto answers)."""
    from moto.s3.models import s3_backends

    found = s3_backends[ACCOUNT_ID]["aws"].buckets.get(bucket)
    return None if found is None else found.keys.get(key)


def _object_answer(stored: Any, start_response: Callable[..., Any]) -> list[bytes]:
    """A whole object's GET answered from moto's backend as moto's app answers it (its bytes, ETag,
    Last-Modified, length), without Flask and moto's dispatch: ~60% of the store's CPU a GET."""
    body: bytes = stored.value
    start_response("200 OK", [("Content-Type", "binary/octet-stream"), ("Content-Length", str(len(body))),
                              ("ETag", stored.etag), ("Last-Modified", stored.last_modified_RFC1123),
                              ("Accept-Ranges", "bytes")])  # fmt: skip
    return [body]


def fill(bucket: str, prefix: str, folder: Path) -> dict[str, Any]:
    """Every file under ``folder`` put in ``bucket`` under ``prefix`` through moto's backend."""
    from moto.s3.models import s3_backends

    started = time.perf_counter()
    backend = s3_backends[ACCOUNT_ID]["aws"]
    if bucket not in backend.buckets:
        backend.create_bucket(bucket, "us-east-1")
    prefix = prefix.strip("/")
    objects = 0
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            name = path.relative_to(folder).as_posix()
            backend.put_object(bucket, f"{prefix}/{name}" if prefix else name, path.read_bytes())
            objects += 1
    return {"objects": objects, "seconds": time.perf_counter() - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--nice", type=int, default=0, help="the store's CPU priority (its threads inherit it)")
    parser.add_argument("--direct-gets", action="store_true", help="answer whole objects' GETs from the backend")
    args = parser.parse_args()
    if args.nice:
        os.nice(args.nice)
    from moto.moto_server.werkzeug_app import MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    MotoRequestHandler.protocol_version = "HTTP/1.1"  # keep-alive: a connection per client, not per request
    MotoRequestHandler.log_request = lambda *_: None  # type: ignore[method-assign]  # no line a request
    # S3's app itself: moto's dispatcher found the service of every request by trying each of its
    # ~150 services' URL patterns and the Authorization header (a third of its CPU a GET, py-spy).
    store = Store(create_backend_app("s3"), args.latency_ms, direct_gets=args.direct_gets)
    server = make_server(args.host, args.port, store, threaded=True, request_handler=MotoRequestHandler)
    print(f"serving on http://{args.host}:{args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
