"""Term scale: a whole term through ``doccheck run`` (issue 28), and the dry run's memory (issue 10).

Run:  .venv/bin/python benchmarks/term_scale.py [--n 100000] [--words 300] [--backends sqlite,postgres]
          [--files 0] [--skip-page] [--no-catalog] [--profile-rerun FILE] [--trace DIR] [--built-rerun]

**The term (issue 28)**: one CSV manifest of ``--n`` generated text rows in 200 courses (a
``course`` column), an emulator that holds the results back (``--processing-seconds`` a day), and
for each backend (a fresh SQLite file; a fresh database on a throwaway PostgreSQL cluster)
``doccheck run MANIFEST --no-wait`` twice: the first run, then the weekly rerun with nothing new.
Each command is a subprocess; its wall seconds, CPU seconds and two peaks are printed: the process
tree's (the summed RSS of the run and every process it started, sampled every 50 ms by
:mod:`_process_tree`, with who held what at that moment: the figure a holdout measures, issue 49)
and the largest single process's (``wait4``'s ``ru_maxrss``), then the ledger's bytes per document (SQLite: the
file and its WAL; PostgreSQL: ``pg_total_relation_size`` of every table). ``--files N``: N
generated files (half 8-page PDFs, half ~3,400-word DOCX) in a manifest of paths, run twice on
SQLite: the first run extracts, the rerun must not. ``--skip-page``: no browser timing of the
report page (the hook :func:`page_timings` is where it goes). ``--no-catalog``: the runs do not
rebuild ``<out>/catalog.duckdb`` (``DOCCHECK_CATALOG=false``); the difference to a run with it is
what loading DuckDB into the run's process at its end adds to the peak RSS (docs/benchmarks.md).
``--profile-rerun FILE``: the rerun
of the first backend is run once more under py-spy (``pip install py-spy``; every thread sampled
50 times a second), its collapsed stacks written to FILE (``py-spy``'s raw format: one stack and
its sample count a line, for flamegraph tools or a few lines of Python). ``--built-rerun``: a third run, the rerun
again with every folder's ``.inputs.json`` removed, so nothing can be copied (issue 49: the rerun
that copies its folder, against the rerun that builds it, in the same run). ``--trace DIR``: each
run's samples as a CSV (seconds, the tree's kB, the run process's kB), to see when the peak comes.

**The dry run (issue 10)**: ``--rows 10000,100000 [--words 400] [--startup] [--no-match]
[--background in|bg|both]`` as before (see :func:`dry_run_main`).
"""

# The dry run (issue 10), kept as it was:
# Term scale (issue 10): a dry run's peak RSS and seconds vs the manifest's size, and start-up cost.
#
# Run:  .venv/bin/python benchmarks/term_scale.py [--rows 10000,100000] [--words 400] [--startup]
#
# For each size, a CSV manifest of generated text rows (``--words`` words each, ~6 bytes a
# word: 400 words ≈ 2.5 KB a row, the 250 MB per 100,000 rows) is dry-run in a fresh
# process with ``doccheck.pipeline.dry_run`` (validate → plan → cohort matching, what
# ``doccheck run --dry-run`` does); the child reports its peak RSS (``ru_maxrss``) and its
# seconds (wall, and CPU: on a shared machine the CPU seconds say what the load hides). The
# first size is the baseline: the figures are printed with their ratio to it.
#
# ``--no-match``: validate and plan only, to tell planning's memory from cohort matching's.
#
# ``--background bg|both``: the matching in a second process fed while the manifest is planned
# (``dry_run(background=True)``); peak RSS is then the parent's plus the child's (an upper
# bound of the pair's peak), CPU both processes'. ``both`` runs in-process and background
# alternately on the same manifest, the first one being the baseline.
#
# ``--startup``: wall seconds of ``doccheck run --dry-run`` on a 100-row manifest as a
# command (no Prefect server needed), against the flow's dry run (``bulk_check(dry_run=True)``)
# without ``PREFECT_API_URL``, which is how a dry run started before issue 10: Prefect then
# starts a temporary server.

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _process_tree import TreePeak

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
for extra in (ROOT, ROOT / "benchmarks"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

CHILD = """
import json, resource, sys, time
t = time.monotonic()
from doccheck.pipeline import dry_run
background = {"in": False, "bg": True, "auto": None}[sys.argv[3]]
s = dry_run(sys.argv[1], database_url=None, match=sys.argv[2] == "match", background=background)
u, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"seconds": time.monotonic() - t, "documents": s.documents, "pairs": s.cohort_matches.get("pairs"),
                  "cpu_seconds": u.ru_utime + u.ru_stime + c.ru_utime + c.ru_stime,
                  "peak_rss_mb": (u.ru_maxrss + c.ru_maxrss) / 1024, "child_rss_mb": c.ru_maxrss / 1024}))
"""

FLOW_DRY_RUN = """
import asyncio, sys
from doccheck.pipeline import RunOptions
from prefect_doccheck.flows.bulk_check import bulk_check
asyncio.run(bulk_check(**RunOptions.from_flat(manifest=sys.argv[1], dry_run=True, database_url="sqlite:///" + sys.argv[2]).flow_parameters()))
"""


def make_manifest(path: Path, rows: int, words: int, seed: int = 10) -> Path:
    """``rows`` text rows of ``words`` random words from a 5,000-word vocabulary (no near-duplicates)."""
    rnd = random.Random(seed)
    vocabulary = [f"{rnd.choice('bcdfghklmnprstvw')}{rnd.choice('aeiou')}{i:x}" for i in range(5000)]
    with path.open("w", encoding="utf-8") as handle:
        handle.write("document_id,text\n")
        for i in range(rows):
            handle.write(f"s{i:07d},{' '.join(rnd.choices(vocabulary, k=words))}\n")
    return path


def measure(manifest: Path, match: bool, background: str = "in") -> dict[str, float]:
    out = subprocess.run(
        [PY, "-c", CHILD, str(manifest), "match" if match else "plan", background],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def startup(folder: Path) -> None:
    manifest = make_manifest(folder / "hundred.csv", 100, 200)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(PREFECT_HOME=str(folder / "prefect-home"), DOCCHECK_DATABASE_URL=f"sqlite:///{folder / 'none.db'}")
    started = time.monotonic()
    subprocess.run(
        [str(Path(PY).parent / "doccheck"), "run", str(manifest), "--dry-run"],
        env=env,
        cwd=folder,
        check=True,
        capture_output=True,
    )
    command = time.monotonic() - started
    started = time.monotonic()
    subprocess.run(
        [PY, "-c", FLOW_DRY_RUN, str(manifest), str(folder / "flow.db")],
        env={**env, "PYTHONPATH": str(ROOT)},
        cwd=folder,
        check=True,
        capture_output=True,
    )
    flow = time.monotonic() - started
    print(
        f"start-up, 100-row dry run: command {command:.1f} s; flow with a temporary Prefect server {flow:.1f} s "
        f"(ratio {flow / command:.1f}x)"
    )


def dry_run_main(argv: list[str]) -> None:
    """Issue 10's dry-run figures (``--rows``)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", default="10000,100000")
    parser.add_argument("--words", type=int, default=400)
    parser.add_argument("--startup", action="store_true")
    parser.add_argument("--no-match", action="store_true", help="plan only (no cohort matching)")
    parser.add_argument(
        "--background",
        choices=["in", "bg", "both"],
        default="in",
        help="match in this process (in), in a second process fed while planning (bg), or both, alternating",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="doccheck-scale-") as tmp:
        folder = Path(tmp)
        if args.startup:
            startup(folder)
        base: dict[str, float] | None = None
        for rows in [int(r) for r in args.rows.split(",")]:
            manifest = make_manifest(folder / f"term{rows}.csv", rows, args.words)
            size_mb = manifest.stat().st_size / 1e6
            modes = ["in", "bg"] if args.background == "both" else [args.background]
            for mode in modes:
                figures = measure(manifest, not args.no_match, mode)
                base = base or figures
                what = "plan only" if args.no_match else "dry run" if mode == "in" else "dry run, bg"
                child = f" (child {figures['child_rss_mb']:.0f})" if mode == "bg" else ""
                print(
                    f"{what} {rows:>7} rows ({size_mb:.0f} MB CSV): peak RSS {figures['peak_rss_mb']:.0f} MB{child} "
                    f"({figures['peak_rss_mb'] / base['peak_rss_mb']:.2f}x baseline), {figures['seconds']:.1f} s "
                    f"({figures['seconds'] / base['seconds']:.2f}x; CPU {figures['cpu_seconds']:.1f} s), "
                    f"{figures['documents']} documents, {figures['pairs']} pairs"
                )
            manifest.unlink()


# ---------------------------------------------------------------------------------------------
# The term (issue 28): doccheck run --no-wait, first run and rerun, SQLite and PostgreSQL.

COURSES = 200
API_KEY_TERM = "dc_test_term_scale"


def make_term_manifest(path: Path, rows: int, words: int, seed: int = 28) -> Path:
    """``rows`` text rows in ``COURSES`` courses (``course`` column), distinct texts of ``words`` words."""
    rnd = random.Random(seed)
    vocabulary = [f"{rnd.choice('bcdfghklmnprstvw')}{rnd.choice('aeiou')}{i:x}" for i in range(5000)]
    with path.open("w", encoding="utf-8") as handle:
        handle.write("document_id,course,text\n")
        for i in range(rows):
            handle.write(f"s{i:07d},course-{i % COURSES:03d},{' '.join(rnd.choices(vocabulary, k=words))}\n")
    return path


def raw_pdf(pages: list[list[str]]) -> bytes:
    """A plain PDF of text lines (Helvetica, one content stream a page), written directly: fpdf2
    takes ~0.3 s a page to lay out, too slow for 10,000 files."""
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    kids = []
    for lines in pages:
        body = "BT /F1 10 Tf 12 TL 50 790 Td " + " ".join(f"({line}) '" for line in lines) + " ET"
        stream = body.encode("latin-1")
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R >> >> "
                       b"/Contents %d 0 R >>" % len(objects))  # fmt: skip
        kids.append(len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), len(kids))
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, obj)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def make_files(folder: Path, n: int, seed: int = 29) -> Path:
    """``n`` generated files (even: 8-page PDF of ~420 words a page, odd: ~3,400-word DOCX), all
    different, and a manifest of their paths."""
    from tests.hostile_documents import docx_package, para

    rnd = random.Random(seed)
    vocabulary = [f"{rnd.choice('bcdfghklmnprstvw')}{rnd.choice('aeiou')}{i:x}" for i in range(5000)]
    folder.mkdir(parents=True, exist_ok=True)
    manifest = folder / "files.csv"
    with manifest.open("w", encoding="utf-8") as handle:
        handle.write("document_id,course,path\n")
        for i in range(n):
            if i % 2 == 0:
                pages = [[" ".join(rnd.choices(vocabulary, k=12)) for _ in range(35)] for _ in range(8)]
                name = f"f{i:06d}.pdf"
                (folder / name).write_bytes(raw_pdf(pages))
            else:
                body = "".join(para(" ".join(rnd.choices(vocabulary, k=100))) for _ in range(34))
                name = f"f{i:06d}.docx"
                (folder / name).write_bytes(docx_package(body))
            handle.write(f"f{i:06d},course-{i % COURSES:03d},{name}\n")
    return manifest


def start_term_emulator(work: Path) -> tuple[Any, str]:
    """An emulator that holds every result back for a day (the run does not wait anyway)."""
    from doccheck.commands import doccheck_command, free_port, start_service

    port, storage_port = free_port(), free_port()
    args = doccheck_command(
        "emulator", "--host", "127.0.0.1", "--port", str(port), "--storage-port", str(storage_port),
        "--api-key", API_KEY_TERM, "--balance-cents", "1000000000", "--processing-seconds", "86400",
        "--latency-ms", "0", "--offline", "--seed", "1",
    )  # fmt: skip
    root = f"http://127.0.0.1:{port}"
    service = start_service("emulator", args, health_url=f"{root}/_emulator/health", url=root,
                            log_path=work / "emulator.log", env={"PYTHONUNBUFFERED": "1"}, timeout=60)  # fmt: skip
    return service, root


def timed_run(
    manifest: Path, *, database_url: str, out: Path, env: dict[str, str], trace: Path | None = None
) -> dict[str, Any]:
    """One ``doccheck run --no-wait`` as a subprocess: wall and CPU seconds, its own peak RSS
    (``wait4``: the largest single process) and its process tree's (the summed RSS of the run and
    every descendant, sampled every 50 ms: :mod:`_process_tree`)."""
    from doccheck.commands import doccheck_command

    args = doccheck_command("run", str(manifest), "--no-wait", "--no-progress", "--campaign", "term",
                            "--metadata-columns", "course", "--group-by", "course", "--database-url", database_url,
                            "--out", str(out))  # fmt: skip
    started = time.perf_counter()
    child = subprocess.Popen(args, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    tree = TreePeak(child.pid).start()
    try:
        output = child.stdout.read() if child.stdout else ""
    finally:
        tree.stop()  # before wait4 reaps the child: its children are found through its pid
    _, status, usage = os.wait4(child.pid, 0)
    if trace is not None:
        trace.write_text("seconds,tree_kb,run_kb\n" + "".join(f"{t:.2f},{a},{b}\n" for t, a, b in tree.trace))
    child.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.perf_counter() - started
    if child.returncode != 0:
        raise SystemExit(f"doccheck run failed ({child.returncode}):\n{output[-3000:]}")
    return {"seconds": elapsed, "cpu_seconds": usage.ru_utime + usage.ru_stime, "peak_rss_mb": usage.ru_maxrss / 1024,
            "tree_peak_mb": tree.peak_mb, "tree": tree.breakdown()}  # fmt: skip


def profiled_run(manifest: Path, *, database_url: str, out: Path, env: dict[str, str], stats: Path) -> None:
    """The same command as a child under py-spy (a sampling profiler: every thread, the recording's
    and the writer's included, as collapsed stacks in ``stats``). cProfile cannot follow the
    overlapped run's threads, and running them inline deadlocks the hand-over."""
    import shutil

    from doccheck.commands import doccheck_command

    spy = os.environ.get("PY_SPY") or shutil.which("py-spy")
    if spy is None:
        raise SystemExit("--profile-rerun needs py-spy: pip install py-spy (or PY_SPY=/path/to/py-spy)")
    args = doccheck_command("run", str(manifest), "--no-wait", "--no-progress", "--campaign", "term",
                            "--metadata-columns", "course", "--group-by", "course", "--database-url", database_url,
                            "--out", str(out))  # fmt: skip
    subprocess.run([spy, "record", "--rate", "50", "--format", "raw", "--output", str(stats), "--", *args],
                   env=env, cwd=ROOT, check=True, capture_output=True)  # fmt: skip


def ledger_bytes(database_url: str) -> int:
    """The ledger's size: SQLite file + WAL, or every PostgreSQL table with its indexes and TOAST."""
    if database_url.startswith("sqlite"):
        path = Path(database_url.split("///", 1)[1])
        return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())
    import sqlalchemy as sa

    engine = sa.create_engine(database_url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(sa.text(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND n.nspname = 'public'"
            )).scalar_one())  # fmt: skip
    finally:
        engine.dispose()


def table_bytes(database_url: str) -> dict[str, int]:
    """Bytes of each ledger table with its indexes (SQLite ``dbstat``; PostgreSQL
    ``pg_total_relation_size``), largest first."""
    import sqlalchemy as sa

    if database_url.startswith("sqlite"):
        query = ("SELECT m.tbl_name, SUM(d.pgsize) FROM dbstat d JOIN sqlite_schema m ON m.name = d.name "
                 "GROUP BY m.tbl_name")  # fmt: skip
    else:
        query = ("SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n "
                 "ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND n.nspname = 'public'")  # fmt: skip
    engine = sa.create_engine(database_url)
    try:
        with engine.connect() as conn:
            sizes = {str(name): int(size or 0) for name, size in conn.execute(sa.text(query))}
    finally:
        engine.dispose()
    return dict(sorted(sizes.items(), key=lambda kv: -kv[1]))


def page_timings(report_dir: Path) -> dict[str, float]:
    """The entry page's load, and the largest group page's load and a sort, in headless Chromium
    (``report_page.py``'s set-up: Debian's chromium, the driver's path, no telemetry)."""
    from report_page import browser, measure

    groups = list(report_dir.parent.glob("*/groups/*.html"))
    newest = max((p.parent for p in groups), key=lambda d: d.stat().st_mtime, default=None)
    driver = browser()
    try:
        timings = {"entry load": measure(driver, report_dir / "report.html")["load_s"]}
        if newest is not None:
            largest = max(newest.glob("*.html"), key=lambda p: p.stat().st_size)
            group = measure(driver, largest)
            timings.update({"group load": group["load_s"], "group sort": group.get("sort_s", float("nan"))})
        return timings
    finally:
        driver.quit()


def term_main(argv: list[str]) -> None:
    """Issue 28's figures: see the module's docstring."""
    from pg_cluster import fresh_database, throwaway_postgres

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--words", type=int, default=300)
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--files", type=int, default=0, help="generated PDF/DOCX files to extract (0: none)")
    parser.add_argument("--skip-page", action="store_true", help="no browser timing of the report page")
    parser.add_argument("--tables", action="store_true", help="also print the ledger's bytes/doc table by table")
    parser.add_argument("--no-catalog", action="store_true", help="DOCCHECK_CATALOG=false: no DuckDB catalog rebuild")
    parser.add_argument(
        "--profile-rerun", type=Path, help="py-spy the first backend's rerun into this file (collapsed stacks)"
    )
    parser.add_argument("--trace", type=Path, help="write each run's sampled RSS (CSV: seconds, tree kB, run kB) here")
    parser.add_argument("--built-rerun", action="store_true",
                        help="then a rerun with nothing to copy (every .inputs.json removed): the baseline of the rerun")  # fmt: skip
    args = parser.parse_args(argv)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    with tempfile.TemporaryDirectory(prefix="doccheck-term-") as tmp, contextlib.ExitStack() as stack:
        folder = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "DOCCHECK_"))}
        env.update(PREFECT_HOME=str(folder / "prefect-home"), DOCCHECK_API_KEY=API_KEY_TERM)
        if args.no_catalog:
            env["DOCCHECK_CATALOG"] = "false"
        service, root = start_term_emulator(folder)
        stack.callback(service.stop)
        env["DOCCHECK_BASE_URL"] = f"{root}/api/v1"
        pg_url = stack.enter_context(throwaway_postgres()) if "postgres" in backends else None
        runs: list[tuple[str, Path, int]] = []
        if args.n:
            manifest = make_term_manifest(folder / "term.csv", args.n, args.words)
            print(f"term: {args.n} text rows of {args.words} words in {COURSES} courses "
                  f"({manifest.stat().st_size / 1e6:.0f} MB CSV)", flush=True)  # fmt: skip
            runs += [(backend, manifest, args.n) for backend in backends]
        if args.files:
            started = time.perf_counter()
            files = make_files(folder / "files", args.files)
            print(f"files: {args.files} generated PDF/DOCX in {time.perf_counter() - started:.0f} s", flush=True)
            runs.append(("sqlite (files)", files, args.files))
        for number, (backend, manifest, n) in enumerate(runs):
            if backend == "postgres":
                assert pg_url is not None
                database_url = fresh_database(pg_url)
            else:
                database_url = f"sqlite:///{folder / f'ledger-{number}.db'}"
            out = folder / f"reports-{number}"
            for label in ("first run", "rerun", *(["built rerun"] if args.built_rerun else [])):
                if label == "built rerun":  # the rerun as before issue 49's copy: built from the ledger
                    for inputs in out.glob("*/.inputs.json"):
                        inputs.unlink()
                if label == "rerun" and args.profile_rerun and number == 0:
                    profiled_run(manifest, database_url=database_url, out=out, env=env, stats=args.profile_rerun)
                    print(f"  (profile of the rerun in {args.profile_rerun})")
                trace = None
                if args.trace:
                    args.trace.mkdir(parents=True, exist_ok=True)
                    trace = args.trace / f"{backend.split()[0]}-{number}-{label.replace(' ', '-')}.csv"
                figures = timed_run(manifest, database_url=database_url, out=out, env=env, trace=trace)
                size = ledger_bytes(database_url)
                pages = {} if args.skip_page else page_timings(out / "latest")
                if args.tables:
                    shown_tables = ", ".join(f"{t} {b / n:,.0f}" for t, b in table_bytes(database_url).items() if b)
                    print(f"{'':>15} {label:>9}  bytes/doc by table: {shown_tables}", flush=True)
                shown = ", ".join(f"{k} {v:.2f} s" for k, v in pages.items())
                print(f"{backend:>15} {label:>9}: {figures['seconds']:7.1f} s (CPU {figures['cpu_seconds']:.1f} s), "
                      f"process tree's peak RSS {figures['tree_peak_mb']:4.0f} MB (largest process, wait4: "
                      f"{figures['peak_rss_mb']:.0f} MB), ledger {size / 1e6:.0f} MB = "
                      f"{size / n:,.0f} bytes/doc{'; ' + shown if shown else ''}", flush=True)  # fmt: skip
                print(f"{'':>15} {'':>9}  {figures['tree']}", flush=True)


def main() -> None:
    """``--rows``/``--startup``: the dry run of issue 10; otherwise the term of issue 28."""
    argv = sys.argv[1:]
    if any(a.split("=")[0] in ("--rows", "--startup", "--no-match", "--background") for a in argv):
        dry_run_main(argv)
    else:
        term_main(argv)


if __name__ == "__main__":
    main()
