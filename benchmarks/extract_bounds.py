"""Extraction: the cost of the worker process per document, and what hostile files cost now.

Three tables:

1. Per-document overhead of the sandbox: the same small DOCX extracted N times in-process
   (``doccheck.extract._parse.parse``, the baseline) and through the reused worker pool
   (``extract_text``); ms per document and the ratio.
2. Hostile files (generated as in the tests) with the default limits: wall time of the
   refusal, the reason, and the worker's peak memory (VmHWM from /proc) afterwards.
3. Real DOCX files (tests/data/documents): words and ms per file for our streaming reader,
   python-docx's paragraph/table traversal (the old extractor), and docx2python when it is
   importable (``--extra-path`` to a folder where it is installed; it is not a dependency).

    .venv/bin/python benchmarks/extract_bounds.py [--n 300] [--extra-path /tmp/d2p]
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from doccheck.extract import (  # noqa: E402
    DEFAULT_LIMITS,
    ExtractionError,
    count_words,
    extract_text,
    shutdown_workers,
    worker_pids,
)

# The baseline is the reader itself, in this process: an instrument needs the private module.
from doccheck.extract._parse import parse as _parse  # noqa: E402
from tests.hostile_documents import docx_bomb, docx_package, nested_tables, para, pdf_shared_stream  # noqa: E402


def _vmhwm_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def overhead(n: int) -> None:
    data = docx_package(para("A short essay of a few words, as most submissions are. " * 40))
    extract_text(data, "warm.docx")  # start the worker outside the timing
    started = time.perf_counter()
    for _ in range(n):
        _parse(data, "a.docx", DEFAULT_LIMITS)[0]
    inproc = (time.perf_counter() - started) / n * 1000
    started = time.perf_counter()
    for _ in range(n):
        extract_text(data, "a.docx")
    pooled = (time.perf_counter() - started) / n * 1000
    print(f"\n1. per-document cost, {n} x a {len(data)} byte DOCX of 440 words")
    print("| way | ms per document |\n|---|---:|")
    print(f"| in-process (baseline) | {inproc:.2f} |\n| reused worker process | {pooled:.2f} |")
    print(f"ratio worker/in-process: {pooled / inproc:.2f}x, overhead {pooled - inproc:.2f} ms per document")
    started = time.perf_counter()
    shutdown_workers()
    extract_text(data, "cold.docx")
    print(f"a cold start (new worker, imports lxml and pypdf): {(time.perf_counter() - started) * 1000:.0f} ms")


def hostile() -> None:
    files = {
        "DOCX, document.xml inflating to 200 MB": ("bomb.docx", docx_bomb(200 * 1024 * 1024)),
        "PDF, 40 pages sharing one 8 MB stream": ("shared.pdf", pdf_shared_stream(40, 8 * 1024 * 1024)),
        "DOCX, tables nested 200 deep": ("deep.docx", docx_package(nested_tables(200))),
        "PDF, 1 page of 30 MB content (under the size limits)": ("slow.pdf", pdf_shared_stream(1, 30 * 1024 * 1024)),
    }
    print("\n2. hostile files, default limits")
    print("| file | size | refused after (s) | reason | worker peak RSS (MiB) |\n|---|---:|---:|---|---:|")
    for label, (name, data) in files.items():
        extract_text(docx_package(para("warm")), "w.docx")
        started = time.perf_counter()
        try:
            extract_text(data, name)
            reason = "accepted"
        except ExtractionError as exc:
            reason = str(exc)
        elapsed = time.perf_counter() - started
        pids = worker_pids()
        peak = f"{_vmhwm_mib(pids[0]):.0f}" if pids else "(killed)"
        print(f"| {label} | {len(data):,} | {elapsed:.2f} | {reason} | {peak} |")
        shutdown_workers()  # a fresh worker per row, so each peak is that file's


def real_docx(extra_path: str | None) -> None:
    if extra_path:
        sys.path.append(extra_path)
    try:
        from docx2python import docx2python
    except ImportError:
        docx2python = None
    import docx

    def old(data: bytes) -> int:
        d = docx.Document(io.BytesIO(data))
        parts = [p.text for p in d.paragraphs]
        parts += [c.text for t in d.tables for r in t.rows for c in r.cells]
        return count_words("\n".join(parts))

    def d2p(data: bytes) -> int:
        with docx2python(io.BytesIO(data), duplicate_merged_cells=False) as r:
            return count_words(r.text)

    ways = {
        "ours (lxml stream)": lambda b: count_words(_parse(b, "x.docx", DEFAULT_LIMITS)[0]),
        "python-docx traversal": old,
    }
    if docx2python is not None:
        ways["docx2python 3.7.1"] = d2p
    print("\n3. real DOCX files: words (ms)")
    print("| file | " + " | ".join(ways) + " |\n|---|" + "---:|" * len(ways))
    totals = dict.fromkeys(ways, 0.0)
    for path in sorted((ROOT / "tests" / "data" / "documents").glob("*.docx")):
        data = path.read_bytes()
        cells = []
        for way, fn in ways.items():
            started = time.perf_counter()
            try:
                words: object = fn(data)
            except Exception as exc:  # noqa: BLE001  (a benchmark reports it)
                words = type(exc).__name__
            ms = (time.perf_counter() - started) * 1000
            totals[way] += ms
            cells.append(f"{words} ({ms:.1f})")
        print(f"| {path.name} | " + " | ".join(cells) + " |")
    print("| total ms | " + " | ".join(f"{t:.0f}" for t in totals.values()) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=300, help="documents in the overhead run")
    parser.add_argument("--extra-path", help="folder where docx2python is installed (optional)")
    args = parser.parse_args()
    overhead(args.n)
    hostile()
    real_docx(args.extra_path)


if __name__ == "__main__":
    main()
