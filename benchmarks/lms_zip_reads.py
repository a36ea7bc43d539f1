"""An LMS export's zip in a bucket: read over the store, or copied whole first (docs/lms.md).

Run:  .venv/bin/python benchmarks/lms_zip_reads.py [--documents 400] [--latency-ms 30] [--rounds 3]

The tests' S3 server (moto in server mode, its own process) behind the fault proxy, which adds
``--latency-ms`` to every request and counts them. One Moodle zip of ``--documents`` essays
(20-120 kB of random bytes each: deflate cannot shrink them, as a .docx) written in another order
than their names, plus a tenth as many members never copied (an unsupported type). Each way
derives the run's manifest from ``s3://bench/exports/C101-Essay 1-42.zip`` (every document copied
to a local work folder), rounds alternating; the table gives the requests for the zip (its
ranged GETs and the HEAD that opens it: the same every round) and the median seconds.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import statistics
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from doccheck.sources.lms import _derive, _walk  # noqa: E402
from doccheck.storage import local_copy, resolve  # noqa: E402
from tests.fixtures.processes import stop_process  # noqa: E402
from tests.fixtures.s3 import SECRET_ACCESS_KEY, s3_environment, start_s3_server  # noqa: E402
from tests.fixtures.s3_proxy import FaultProxy  # noqa: E402

URL = "s3://bench/exports/C101-Essay 1-42.zip"


def export_zip(documents: int) -> bytes:
    """A Moodle download: one essay a student, written shuffled, and members never copied."""
    rng = random.Random(1)
    names = [f"Student {i:04d}_{1000 + i}_assignsubmission_file/essay.docx" for i in range(documents)]
    rng.shuffle(names)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name in names:
            zf.writestr(name, rng.randbytes(rng.randint(20_000, 120_000)))
        for i in range(documents // 10):
            zf.writestr(f"Student {i:04d}_{1000 + i}_assignsubmission_file/tool.exe", rng.randbytes(200_000))
    return buffer.getvalue()


def ways() -> dict[str, Callable[[Path], object]]:
    """Each way of reading the zip, given a fresh local work folder."""

    def over_store(block: int, in_zip_order: bool = True) -> Callable[[Path], object]:
        def derive(work: Path) -> object:
            _walk.ZIP_BLOCK_BYTES = block
            _derive.member_order = _walk.member_order if in_zip_order else (lambda _opened, names: list(names))
            return _derive.derive_manifest(URL, work)

        return derive

    def copied_first(work: Path) -> object:
        with local_copy(resolve(URL), max_bytes=64 * 1024**3) as local:
            return _derive.derive_manifest(local, work)

    mib = 1024 * 1024
    return {
        "zipfile over open_input, zip order, 8 MiB blocks (doccheck)": over_store(8 * mib),
        "zipfile over open_input, zip order, 1 MiB blocks": over_store(mib),
        "zipfile over open_input, name order, 1 MiB blocks": over_store(mib, in_zip_order=False),
        "the whole zip copied first (local_copy), then read": copied_first,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=400)
    parser.add_argument("--latency-ms", type=float, default=30.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    server = start_s3_server()
    proxy = FaultProxy(server.url)
    try:
        os.environ.update(s3_environment(proxy.url, SECRET_ACCESS_KEY))
        import s3fs

        setup = s3fs.S3FileSystem(endpoint_url=server.url, skip_instance_cache=True)
        setup.mkdir("bench")
        data = export_zip(args.documents)
        setup.pipe_file(URL.removeprefix("s3://"), data)
        proxy.set_faults(latency_ms=args.latency_ms)
        seconds: dict[str, list[float]] = {}
        gets: dict[str, int] = {}
        for _ in range(args.rounds):
            for label, derive in ways().items():
                s3fs.S3FileSystem.clear_instance_cache()
                proxy.clear_log()
                started = time.perf_counter()
                with tempfile.TemporaryDirectory() as work:
                    derive(Path(work))
                seconds.setdefault(label, []).append(time.perf_counter() - started)
                gets[label] = len(proxy.gets_of("bench/exports/"))
        print(f"{len(data) / 1e6:.1f} MB zip, {args.documents} documents + {args.documents // 10} members not copied, "
              f"{args.latency_ms:.0f} ms a request, median of {args.rounds} rounds\n")  # fmt: skip
        print("| how the zip is read | requests (ranged GETs, 1 HEAD) | seconds |\n| --- | ---: | ---: |")
        for label, times in seconds.items():
            print(f"| {label} | {gets[label]} | {statistics.median(times):.2f} |")
    finally:
        proxy.close()
        stop_process(server.process)
        server.log_path.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
