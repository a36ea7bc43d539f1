"""A 45 MB file through the upload flow, with the client process's peak memory measured."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

SIZE = 45 * 1024 * 1024

# Runs in a fresh interpreter so that the measurement is of the client alone (the emulator is
# another process) and is not polluted by what pytest allocated before.
CHILD = r"""
import json, sys, threading, time, tracemalloc
from doccheck.client import DocCheckClient, FileDocument, RetryPolicy

def rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096

base_url, api_key, path = sys.argv[1:4]
client = DocCheckClient(base_url, api_key, retry=RetryPolicy(max_attempts=1), timeout=120)
client.list_checks(limit=1)  # warm up imports and the connection pool
peak_rss, done = [rss()], threading.Event()
def sample() -> None:  # current RSS every 5 ms: a high-water mark of THIS flow, not of start-up
    while not done.is_set():
        peak_rss.append(rss())
        time.sleep(0.005)
rss_before = peak_rss[0]
sampler = threading.Thread(target=sample, daemon=True)
sampler.start()
tracemalloc.start()
sub = client.submit(FileDocument(path), products=["ai"], idempotency_key="big-45mb")
_, peak = tracemalloc.get_traced_memory()
tracemalloc.stop()
done.set()
sampler.join()
print(json.dumps({"mode": sub.mode, "check_id": sub.check.id, "upload_id": sub.upload_id,
                  "words": sub.check.words, "tracemalloc_peak": peak, "samples": len(peak_rss),
                  "rss_before": rss_before, "rss_growth": max(peak_rss) - rss_before}))
"""


def write_text_file(path: Path, size: int) -> int:
    """A ``size``-byte .txt written in chunks (never whole in memory); returns its size.

    Its "words" are long tokens (about 2 KB each, ~24k words): the memory under test is the
    client's, and a file of 6 million short words costs the emulator ~25 s of word counting
    at check creation, which would only slow the suite down without testing anything more.
    """
    line = (" ".join(f"{'x' * 2000}{i}" for i in range(8)) + "\n").encode()
    chunk = line * (1024 * 1024 // len(line))
    with path.open("wb") as fh:
        while fh.tell() + len(chunk) <= size:
            fh.write(chunk)
        fh.write(b"y" * (size - fh.tell()))
    return path.stat().st_size


def test_45mb_upload_flow_streams(emulator, emulator_account: str, tmp_path: Path) -> None:
    doc = tmp_path / "big.txt"
    assert write_text_file(doc, SIZE) == SIZE
    out = subprocess.run(
        [sys.executable, "-c", CHILD, emulator.base_url, emulator_account, str(doc)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["mode"] == "upload" and result["upload_id"] and result["words"] > 0
    assert result["samples"] > 10, result  # the sampler really watched the flow
    # Peak Python allocations during the whole flow, and growth of the process's peak RSS:
    # both far below the 45 MB file (reading it whole would cost at least 45 MB).
    assert result["tracemalloc_peak"] < 8 * 1024 * 1024, result
    assert result["rss_growth"] < 20 * 1024 * 1024, result
    state = emulator.account_state(emulator_account)
    assert state["checks"] == 1 and state["waiting_uploads"] == 0
    print(
        f"\n45 MB upload: tracemalloc peak {result['tracemalloc_peak'] / 2**20:.2f} MiB, "
        f"RSS growth {result['rss_growth'] / 2**20:.2f} MiB"
    )
