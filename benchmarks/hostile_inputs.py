"""What the servers' bounds cost and what they buy (issue 13).

1. ``doccheck.guards.bounded_json.loads`` vs ``json.loads`` on the bodies the servers really parse
   (a webhook event, a create-check body with 1 MB of text, a metadata object with 200 keys):
   the ratio is the price of strictness (NaN/depth/number/surrogate checks).
2. Against a real emulator started with ``--header-timeout 1 --body-timeout 2``: N raw
   sockets dribbling headers (slowloris) while a client measures the latency of
   ``GET /_emulator/health``; every slow socket must be closed by the server within the bound,
   and the health latency stays that of an idle server.

Run:  .venv/bin/python benchmarks/hostile_inputs.py [--slow 50] [--repeat 200]
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402

from doccheck.guards import bounded_json  # noqa: E402
from tests.fixtures.emulator import start_emulator, stop_emulator  # noqa: E402
from tests.fixtures.events import event_body  # noqa: E402


def parse_costs(repeat: int) -> None:
    bodies = {
        "webhook event (0.4 KB)": event_body(),
        "create-check, 1 MB text": json.dumps({"text": "word " * 200_000, "metadata": {"a": 1}}).encode(),
        "metadata, 200 keys": json.dumps(
            {"metadata": {f"k{i}": [i, str(i), {"x": i / 3}] for i in range(200)}}
        ).encode(),
    }
    print("| body | json.loads (ms) | bounded_json.loads (ms) | ratio |")
    print("|---|---:|---:|---:|")
    for name, body in bodies.items():
        n = max(5, repeat // (50 if len(body) > 100_000 else 1))
        base = min(_time(lambda body=body: json.loads(body), n))
        strict = min(_time(lambda body=body: bounded_json.loads(body, max_bytes=8 * 1024 * 1024), n))
        print(f"| {name} | {base * 1000:.3f} | {strict * 1000:.3f} | {strict / base:.2f}x |")


def _time(fn: object, n: int) -> list[float]:
    out = []
    for _ in range(n):
        started = time.perf_counter()
        fn()  # type: ignore[operator]
        out.append(time.perf_counter() - started)
    return out


def slowloris(slow: int) -> None:
    emu = start_emulator("--header-timeout", "1", "--body-timeout", "2", "--idle-timeout", "1", api_key="sk_bench")
    host, port = emu.root_url.removeprefix("http://").rsplit(":", 1)
    try:
        with httpx.Client(trust_env=False, timeout=10) as http:
            idle = [_health(http, emu.root_url) for _ in range(30)]
            closed_after: list[float] = []
            lock = threading.Lock()

            def dribble() -> None:
                sock = socket.create_connection((host, int(port)), timeout=10)
                sock.settimeout(0.25)
                started = time.monotonic()
                try:
                    for byte in b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 400:
                        sock.sendall(bytes([byte]))
                        try:
                            if sock.recv(10) == b"":
                                break
                        except TimeoutError:
                            continue
                except OSError:
                    pass
                finally:
                    sock.close()
                with lock:
                    closed_after.append(time.monotonic() - started)

            threads = [threading.Thread(target=dribble) for _ in range(slow)]
            for t in threads:
                t.start()
            time.sleep(0.3)
            loaded = [_health(http, emu.root_url) for _ in range(30)]
            for t in threads:
                t.join()
        print(f"\n{slow} slow-header sockets against --header-timeout 1:")
        print(f"- closed by the server after: median {statistics.median(closed_after):.2f} s, "
              f"max {max(closed_after):.2f} s (all {len(closed_after)} closed)")  # fmt: skip
        print(f"- GET /_emulator/health: idle median {statistics.median(idle) * 1000:.1f} ms, "
              f"under attack median {statistics.median(loaded) * 1000:.1f} ms "
              f"({statistics.median(loaded) / statistics.median(idle):.2f}x)")  # fmt: skip
    finally:
        stop_emulator(emu)


def _health(http: httpx.Client, root: str) -> float:
    started = time.perf_counter()
    assert http.get(f"{root}/_emulator/health").status_code == 200
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slow", type=int, default=50, help="slow-header sockets")
    parser.add_argument("--repeat", type=int, default=200, help="parses per small body")
    args = parser.parse_args()
    parse_costs(args.repeat)
    slowloris(args.slow)


if __name__ == "__main__":
    main()
