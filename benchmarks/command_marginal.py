"""The whole ``doccheck run --no-wait`` against a raw httpx loop (issue 26): marginal throughput and
fixed cost of the command a user runs, with and without a Prefect server, on SQLite and PostgreSQL.

Run:  .venv/bin/python benchmarks/command_marginal.py [--small 1000] [--large 3000] [--concurrency 16]
          [--latency-ms 20] [--modes no-server,server] [--ledgers sqlite,postgres] [--rounds 3] [--fixed-runs 5] [--pin]

One ``doccheck emulator`` subprocess with ``--latency-ms`` per request. In the same run, for each
round, alternately:

* **raw**: ``--small`` then ``--large`` ``POST /checks`` from a bare ``httpx.AsyncClient`` under an
  ``asyncio.Semaphore(concurrency)`` (``submit_marginal.raw_loop``): the network's and the
  emulator's own speed;
* **command**: ``doccheck run MANIFEST --no-wait --no-progress --concurrency C`` as a subprocess
  (interpreter start, imports, reading, recording, cohort matching, submitting, reports: all of
  it), on a fresh manifest of ``--small`` then ``--large`` rows (a fresh campaign, so every key is
  new), for each mode (``no-server``: no ``PREFECT_API_URL``; ``server``: a ``prefect server
  start`` of this run) and ledger (a fresh SQLite file; a fresh database on a throwaway
  PostgreSQL cluster).

``--baseline DIR`` runs the same commands from another checkout too (``git archive <commit> | tar -x
-C DIR``), interleaved with this one's, so a before/after comparison shares the same minutes. The
installed package maps ``prefect_doccheck.flows``/``.tasks``/``.deployments`` to THIS checkout's
``flows/``, ``tasks/``, ``deployments/`` (an editable install's finder), so a baseline's flow would run
this checkout's tasks over the baseline's library: ``DIR/prefect_doccheck/{flows,tasks,deployments}`` are
linked to ``DIR``'s own folders first (:func:`own_flows`), found before the installed mapping.

``--pin`` puts the emulator on a CPU of its own and everything else on the others, as a user's
service runs on other machines (:func:`pin_apart`); the header of the figures says where things ran.

The command's CPU a document at the margin (user + system of the subprocess, ``getrusage``) is
printed too: on a shared machine it moves far less with the load than the wall clock does.

Marginal throughput is ``(large - small) / (t_large - t_small)`` documents a second, of the median
``t_small`` and median ``t_large`` over the rounds (a best-of-rounds marginal picked the round whose
small run was slowed, up to 2× the truth); the ratio is the command's over the raw loop's, measured
in the same minutes (target ≥ 0.9). Each round runs the raw loop and the cases in the same order but
starts one place later than the round before, so no case (and no side of a ``--baseline`` pair) is
always the one that runs right after another's 6,000 documents or right before the raw loop. The CPU
column is the median of the rounds. The "fixed s" column is ``t_small - small / marginal``: what the
command costs beyond its documents, as the two sizes extrapolate it. The issue's fixed cost is that
of a 10-document run (target ≤ 3 s without a server, ≤ 5 s with one): ``--fixed-runs N`` times
``doccheck run`` of a fresh 10-row manifest in each mode, after the rounds, and prints their median
and range (a single run says little: with a server on SQLite, some runs wait ~2 s more, see
docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT, ROOT / "benchmarks"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from pg_cluster import fresh_database, throwaway_postgres  # noqa: E402
from pipeline_throughput import API_KEY, start_emulator, write_manifest  # noqa: E402
from submit_marginal import raw_loop  # noqa: E402

from doccheck.commands import doccheck_command, free_port, prefect_command, wait_healthy  # noqa: E402
from doccheck.pipeline import load_plan  # noqa: E402


@contextlib.contextmanager
def prefect_server(folder: Path, env: dict[str, str]) -> Iterator[str]:
    """A ``prefect server start`` of this benchmark (no UI); yields its API URL."""
    port = free_port()
    server = subprocess.Popen(
        prefect_command("server", "start", "--host", "127.0.0.1", "--port", str(port), "--no-ui"),
        env={**env, "PREFECT_HOME": str(folder / "server-home")},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    api_url = f"http://127.0.0.1:{port}/api"
    try:
        if not wait_healthy(api_url + "/health", timeout=180, process=server):
            raise SystemExit("the Prefect server did not start")
        yield api_url
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


def timed_command(
    manifest: Path, *, database_url: str, out: Path, concurrency: int, env: dict[str, str], tree: Path = ROOT
) -> float:
    """Wall seconds of one ``doccheck run --no-wait`` as a user waits for it."""
    args = doccheck_command(
        "run", str(manifest), "--no-wait", "--no-progress", "--concurrency", str(concurrency),
        "--database-url", database_url, "--out", str(out),
    )  # fmt: skip
    started, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run(args, env=env, capture_output=True, text=True, cwd=tree, timeout=1800)
    elapsed = time.perf_counter() - started
    CPU_SECONDS.append(_children_cpu() - cpu)
    if done.returncode != 0:
        raise SystemExit(f"doccheck run failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return elapsed


#: CPU seconds (user + system) of each ``timed_command`` subprocess, in call order.
CPU_SECONDS: list[float] = []


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_raw(base_url: str, manifest: Path, concurrency: int) -> float:
    """Seconds of the raw loop over the manifest's documents (planned before the clock starts)."""
    plan = load_plan(str(manifest))
    return asyncio.run(raw_loop(base_url, plan, concurrency))


def marginal(small: int, large: int, t_small: float, t_large: float) -> tuple[float, float]:
    """(documents a second at the margin, fixed seconds) from two sizes."""
    rate = (large - small) / max(t_large - t_small, 1e-9)
    return rate, t_small - small / rate


def pin_apart(pid: int) -> str:
    """Process ``pid`` and its descendants (every thread) on the last CPU, the calling thread (and so
    every thread and process it starts from now on) on the others; where things run, for the header.

    Why: the service a user reaches runs on its own machines. On a 2-core machine an unpinned
    emulator takes its CPU from whichever process shares its core at that moment, the command's
    or the raw loop's, so the figure mixes the emulator's speed with the command's. Pinned, both
    the raw loop and the command get the same one core (less than a user's machine gives them)
    and the emulator the other.
    """
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return "not pinned (one CPU)"
    service_cpu, others = {cpus[-1]}, set(cpus[:-1])
    family, found = {pid}, True
    while found:  # the emulator's own children too (none today, but it is cheap to be sure)
        found = False
        for entry in Path("/proc").iterdir():
            with contextlib.suppress(OSError, ValueError, IndexError):
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                if parent in family and int(entry.name) not in family:
                    family.add(int(entry.name))
                    found = True
    for member in family:
        for task in Path(f"/proc/{member}/task").iterdir():
            with contextlib.suppress(OSError):
                os.sched_setaffinity(int(task.name), service_cpu)
    os.sched_setaffinity(0, others)
    return f"emulator on CPU {cpus[-1]}, everything else on CPU {', '.join(map(str, sorted(others)))}"


def own_flows(tree: Path) -> None:
    """Make ``tree``'s ``prefect_doccheck.flows``/``.tasks``/``.deployments`` its own folders
    (symbolic links in ``tree/prefect_doccheck``), not the installed checkout's."""
    for name in ("flows", "tasks", "deployments"):
        link = tree / "prefect_doccheck" / name
        if (tree / name).is_dir() and not link.exists():
            link.symlink_to(Path("..") / name, target_is_directory=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--large", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency-ms", type=int, default=20)
    parser.add_argument("--modes", default="no-server,server")
    parser.add_argument("--ledgers", default="sqlite,postgres")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--fixed-runs", type=int, default=5, help="10-document runs a mode (0: none)")
    parser.add_argument(
        "--pin",
        action="store_true",
        help="the emulator on a CPU of its own, everything else on the others (see pin_apart)",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="also run the command from this checkout (e.g. `git archive main`), interleaved: "
        "`python -m doccheck.cli` with that folder as the working directory imports its code",
    )
    args = parser.parse_args()
    if args.baseline:
        own_flows(args.baseline.resolve())
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    ledgers = [name.strip() for name in args.ledgers.split(",") if name.strip()]

    with tempfile.TemporaryDirectory(prefix="doccheck-command-marginal-") as tmp, contextlib.ExitStack() as stack:
        folder = Path(tmp)
        base = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "DOCCHECK_"))}
        base.update(PREFECT_SERVER_ANALYTICS_ENABLED="false", PREFECT_HOME=str(folder / "prefect-home"))
        service, root = start_emulator(folder, args.latency_ms)
        stack.callback(service.stop)
        args.placement = pin_apart(service.process.pid) if args.pin else "not pinned"
        base_url = f"{root}/api/v1"
        env = {**base, "DOCCHECK_BASE_URL": base_url, "DOCCHECK_API_KEY": API_KEY}
        api_url = stack.enter_context(prefect_server(folder, base)) if "server" in modes else None
        pg_url = stack.enter_context(throwaway_postgres()) if "postgres" in ledgers else None

        results: dict[str, list[tuple[float, float]]] = {}  # (t_small, t_large) of each round
        cpu_ms: dict[str, list[float]] = {}  # the command process's CPU a document, at the margin
        counter = 0

        def manifest(n: int) -> Path:
            nonlocal counter
            counter += 1
            return write_manifest(folder / f"m{counter:03d}-{n}", n, seed=counter)

        trees = [("", ROOT)] + ([("before: ", args.baseline.resolve())] if args.baseline else [])
        cases = [  # (figure name, ledger, environment, checkout) of each command measured
            (f"{label}doccheck run, {ledger}, {mode}", ledger,
             {**env, "PREFECT_API_URL": api_url} if mode == "server" and api_url else env, tree)
            for ledger in ledgers for mode in modes for label, tree in trees
        ]  # fmt: skip

        def command(n: int, ledger: str, run_env: dict[str, str], tree: Path) -> float:
            """Seconds of one ``doccheck run`` of a fresh ``n``-row manifest into a fresh, empty ledger."""
            path = manifest(n)
            database_url = (fresh_database(pg_url) if ledger == "postgres" and pg_url
                            else f"sqlite:///{folder / f'ledger-{counter}.db'}")  # fmt: skip
            return timed_command(path, database_url=database_url, out=folder / "reports",
                                 concurrency=args.concurrency, env=run_env, tree=tree)  # fmt: skip

        measured: list[tuple[str, str, dict[str, str], Path] | None] = [None, *cases]  # None: the raw loop
        for round_number in range(args.rounds):
            shift = round_number % len(measured)  # each round starts one case later: no case always first
            for case in measured[shift:] + measured[:shift]:
                if case is None:
                    raw = (timed_raw(base_url, manifest(args.small), args.concurrency),
                           timed_raw(base_url, manifest(args.large), args.concurrency))  # fmt: skip
                    results.setdefault("raw httpx loop", []).append(raw)
                    continue
                name, ledger, run_env, tree = case
                cpu_before = len(CPU_SECONDS)
                times = (command(args.small, ledger, run_env, tree), command(args.large, ledger, run_env, tree))
                results.setdefault(name, []).append(times)
                small_cpu, large_cpu = CPU_SECONDS[cpu_before:]
                cpu_ms.setdefault(name, []).append(1000 * (large_cpu - small_cpu) / (args.large - args.small))

        fixed_runs: dict[str, list[float]] = {}
        for name, ledger, run_env, tree in cases if args.fixed_runs > 0 else []:
            fixed_runs[name] = [command(10, ledger, run_env, tree) for _ in range(args.fixed_runs)]

        print_figures(args, results, cpu_ms, fixed_runs)


def print_figures(
    args: argparse.Namespace,
    results: dict[str, list[tuple[float, float]]],
    cpu_ms: dict[str, list[float]],
    fixed_runs: dict[str, list[float]],
) -> None:
    """The table of marginal figures (medians of the rounds) and the 10-document runs."""

    def estimate(rounds: list[tuple[float, float]]) -> tuple[float, float]:
        """Marginal rate and fixed seconds from the MEDIAN small and large times of the rounds: a
        run slowed by the machine (or a Prefect client's 2 s retry) moves one time, not the figure."""
        return marginal(args.small, args.large, statistics.median(t for t, _ in rounds),
                        statistics.median(t for _, t in rounds))  # fmt: skip

    raw_rate = estimate(results["raw httpx loop"])[0]
    print(
        f"\n{args.small} vs {args.large} documents, concurrency {args.concurrency}, "
        f"{args.latency_ms} ms latency, median times of {args.rounds} round(s), {args.placement}:"
    )
    print(f"  {'':46s} {'docs/s':>8s} {'x raw':>6s} {'fixed s':>8s} {'cpu ms/doc':>10s}   each round (docs/s)")
    for name, rounds in results.items():
        rate, fixed = estimate(rounds)
        each = ", ".join(f"{marginal(args.small, args.large, *r)[0]:.0f}" for r in rounds)
        cpu = f"{statistics.median(cpu_ms[name]):10.2f}" if name in cpu_ms else f"{'':10s}"
        print(f"  {name:46s} {rate:8.0f} {rate / raw_rate:6.2f} {fixed:8.1f} {cpu}   {each}")
    if fixed_runs:
        print(f"\n10-document runs, {args.fixed_runs} a mode (the issue's fixed cost), seconds:")
        print(f"  {'':46s} {'median':>8s} {'min':>6s} {'max':>6s}   each")
        for name, times in fixed_runs.items():
            each = ", ".join(f"{t:.1f}" for t in times)
            print(f"  {name:46s} {statistics.median(times):8.2f} {min(times):6.2f} {max(times):6.2f}   {each}")


if __name__ == "__main__":
    main()
