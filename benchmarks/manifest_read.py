"""Manifest reading: the cost of the per-row bounds on ordinary manifests, and hostile lines.

Run:  .venv/bin/python benchmarks/manifest_read.py [--rows 20000]

Part 1, ordinary manifests (``--rows`` text rows of ~60 words; the CSV's texts have line
breaks, so every row goes through the runaway-quote check): ``read_manifest`` now vs the
reader before the bounds (``doccheck/sources/manifest.py`` at commit ``BASELINE``, loaded from git in
this same run), CPU seconds (``process_time``, the machine is shared), best of 3, the two
readers alternating. The ratio is the price of the bounds.

Part 2, hostile lines, each in a manifest with one good row: wall time of ``read_manifest``,
then its peak traced memory (``tracemalloc``, a second call), and what the baseline did with
the same file ("accepted" = the row would have reached the service).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from doccheck.sources.manifest import read_manifest  # noqa: E402

#: The last commit with the single-module reader (before the bounds).
BASELINE = "f6a18b0"
ESSAY = "Rivers shape the cities that grow beside them, and floods remind us of it. "


def load_baseline() -> ModuleType | None:
    try:
        source = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{BASELINE}:doccheck/sources/manifest.py"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None
    path = Path(tempfile.mkdtemp(prefix="bench-manifest-")) / "manifest_baseline.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("manifest_baseline", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def write_ordinary(folder: Path, rows: int) -> dict[str, Path]:
    jsonl = folder / "m.jsonl"
    with jsonl.open("w", encoding="utf-8") as out:
        for i in range(rows):
            out.write(json.dumps({"document_id": f"d{i:06d}", "text": f"{ESSAY * 4}{i}", "section": "A"}) + "\n")
    csv = folder / "m.csv"
    with csv.open("w", encoding="utf-8", newline="") as out:
        out.write("document_id,text,products,section\n")
        for i in range(rows):
            out.write(f'd{i:06d},"{ESSAY * 2}\n{ESSAY}, ""quoted""\n{ESSAY}{i}",ai,A\n')
    return {"jsonl": jsonl, "csv": csv}


def interleaved(n: int, old: Callable[[], Any] | None, new: Callable[[], Any]) -> tuple[float | None, float, Any]:
    """Best CPU seconds (``process_time``: the machine is shared) of old and new, alternating."""
    best_old, best_new, result = float("inf"), float("inf"), None
    for _ in range(n):
        if old is not None:
            started = time.process_time()
            old()
            best_old = min(best_old, time.process_time() - started)
        started = time.process_time()
        result = new()
        best_new = min(best_new, time.process_time() - started)
    return (best_old if old is not None else None), best_new, result


def hostile_files(folder: Path) -> dict[str, Path]:
    good = json.dumps({"document_id": "good", "text": ESSAY}).encode()
    cases = {
        "2M brackets": b'{"document_id": "d", "text": ' + b"[" * 1_000_000 + b"]" * 1_000_000 + b"}",
        "5,000-digit number": b'{"document_id": "n", "text": "w", "x": ' + b"7" * 5000 + b"}",
        "lone surrogate id": b'{"document_id": "s\\ud800", "text": "some words"}',
        "invalid UTF-8 byte": b'{"document_id": "u", "text": "caf\xe9"}',
        "20 MiB line": b'{"document_id": "big", "text": "' + b"word " * (4 * 1024 * 1024) + b'"}',
    }
    files = {}
    for i, (name, line) in enumerate(cases.items()):
        path = folder / f"h{i}.jsonl"
        path.write_bytes(good + b"\n" + line + b"\n")
        files[name] = path
    return files


def measure(fn: Callable[[], Any]) -> tuple[float, float, str]:
    """Wall time of one call, then peak traced memory of a second (tracemalloc slows the call)."""
    started = time.perf_counter()
    outcome = _outcome(fn)
    elapsed = time.perf_counter() - started
    tracemalloc.start()
    _outcome(fn)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return elapsed, peak / 2**20, outcome


def _outcome(fn: Callable[[], Any]) -> str:
    try:
        result = fn()
    except BaseException as exc:  # the baseline's failures are the point
        return f"raised {type(exc).__name__}"
    codes = ", ".join(r.code for r in result.rejections) or "accepted"
    return f"{len(result.documents)} doc, {len(result.rejections)} rejected ({codes})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    args = parser.parse_args()
    baseline = load_baseline()
    folder = Path(tempfile.mkdtemp(prefix="bench-manifest-"))

    print(f"## ordinary manifests, {args.rows:,} text rows (CPU seconds, best of 3, alternating)")
    print("| format | baseline (s) | bounded (s) | ratio | documents |")
    print("|---|---:|---:|---:|---:|")
    for fmt, path in write_ordinary(folder, args.rows).items():
        old = (lambda p=path: baseline.read_manifest(p, metadata_columns=["section"])) if baseline else None
        old_s, new_s, new = interleaved(3, old, lambda p=path: read_manifest(p, metadata_columns=["section"]))
        if old_s is not None:
            print(f"| {fmt} | {old_s:.2f} | {new_s:.2f} | {new_s / old_s:.2f}x | {len(new.documents):,} |")
        else:
            print(f"| {fmt} | (no git baseline) | {new_s:.2f} | — | {len(new.documents):,} |")

    print("\n## hostile lines (one good row + the line)")
    print("| line | bounded: time (s) | peak traced MiB | outcome | baseline: time (s) | peak MiB | outcome |")
    print("|---|---:|---:|---|---:|---:|---|")
    for name, path in hostile_files(folder).items():
        t, mem, outcome = measure(lambda p=path: read_manifest(p))
        if baseline is not None:
            bt, bmem, boutcome = measure(lambda p=path: baseline.read_manifest(p))
            print(f"| {name} | {t:.2f} | {mem:.1f} | {outcome} | {bt:.2f} | {bmem:.1f} | {boutcome} |")
        else:
            print(f"| {name} | {t:.2f} | {mem:.1f} | {outcome} | — | — | — |")


if __name__ == "__main__":
    main()
