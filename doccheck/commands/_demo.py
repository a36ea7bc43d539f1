"""``doccheck demo``: the whole product on one machine, in one command, with clean output.

What it does, in order:

1. Prefect: uses ``PREFECT_API_URL`` when set; otherwise starts (or reuses) a local
   Prefect server in the background, kept under ``./.prefect/``, so the run can be seen
   in the Prefect UI after the demo ends. ``doccheck demo --stop-server`` stops it.
2. Starts the service emulator and a webhook receiver on free local ports (subprocesses,
   logs under ``./.doccheck-demo/``), with a fresh demo ledger (``.doccheck-demo/ledger.db``)
   because every demo talks to a brand-new emulator.
3. Configures the account webhook to point at the receiver and hands the receiver the
   signing secret through ``.doccheck-demo/webhook-secrets.json`` (mode 0600, never the
   ledger; the secret is never printed).
4. Runs the ``bulk_check`` flow on ``sample_data/manifest.csv`` (products ai+similarity),
   writes reports to ``./reports``, prints the summary.
5. Stops the emulator and the receiver (SIGTERM, wait), whatever happened.

Prefect's console logging is kept quiet (the UI still gets every log), so the output is
only what this command prints.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from doccheck.commands._runner import (
    LOCAL_PREFECT_HOME,
    fail,
    quiet_prefect,
    rejections_table,
    run_flow,
    summary_table,
)
from doccheck.commands._services import (
    Service,
    doccheck_command,
    ensure_prefect_server,
    free_port,
    start_service,
    stop_prefect_server,
)
from doccheck.errors import ServiceError

DEMO_API_KEY = "demo-key"
DEMO_DIR = Path(".doccheck-demo")
DEMO_CAMPAIGN = "sample-data-demo"


def _ui_url(api_url: str) -> str:
    return api_url[: -len("/api")] if api_url.endswith("/api") else api_url


def _start_prefect(console: Console, err: Console) -> str:
    """Use PREFECT_API_URL, else a local background server under ./.prefect (reused if running)."""
    api_url = os.environ.get("PREFECT_API_URL")
    if api_url:
        console.print(f"  Prefect API     {api_url}  (from PREFECT_API_URL)")
        return api_url
    with console.status("starting a local Prefect server (first time: ~15 s)..."):
        try:
            api_url = ensure_prefect_server(LOCAL_PREFECT_HOME)
        except ServiceError as exc:
            raise fail(err, str(exc)) from None
    os.environ["PREFECT_API_URL"] = api_url
    # The client side keeps its Prefect files beside the server's, not in ~/.prefect.
    os.environ.setdefault("PREFECT_HOME", str(LOCAL_PREFECT_HOME.resolve()))
    console.print(f"  Prefect UI      {_ui_url(api_url)}  (doccheck demo --stop-server)")
    return api_url


def _configure_webhook(base_url: str, receiver_url: str, secret_path: Path) -> None:
    """PUT the account webhook and store its secret in an owner-only file for the receiver."""
    from doccheck.client import DocCheckClient
    from doccheck.webhooks import SecretFile

    with DocCheckClient(base_url, DEMO_API_KEY) as client:
        webhook = client.put_webhook(receiver_url)
    if webhook.secret is None:
        raise ServiceError("the emulator returned no webhook secret")
    SecretFile(secret_path).store(webhook.secret)


StopServerOption = Annotated[
    bool, typer.Option("--stop-server", help="Stop the local Prefect server an earlier demo started, then exit.")
]


def demo(
    manifest: Annotated[Path, typer.Option(help="Manifest to check.")] = Path("sample_data/manifest.csv"),
    out: Annotated[Path, typer.Option("--out", help="Folder for the Parquet reports.")] = Path("reports"),
    products: Annotated[str, typer.Option(help="Products for rows without their own.")] = "ai,similarity",
    stop_server: StopServerOption = False,
) -> None:
    """Start an emulator and a receiver, check sample_data/, write ./reports, stop them again."""
    console = Console()
    err = Console(stderr=True)
    if stop_server:
        stopped = stop_prefect_server(LOCAL_PREFECT_HOME)
        console.print("stopped the local Prefect server." if stopped else "no local Prefect server was running.")
        return
    if not manifest.is_file():
        raise fail(err, f"cannot read manifest {str(manifest)!r}: run the demo from the project folder")

    quiet_prefect()
    console.print("[bold]doccheck demo[/]")
    prefect_api = _start_prefect(console, err)

    if DEMO_DIR.exists():
        shutil.rmtree(DEMO_DIR)
    DEMO_DIR.mkdir(parents=True)
    (DEMO_DIR / ".gitignore").write_text("*\n")  # logs and ledger of the last demo: never committed
    database_url = f"sqlite:///{(DEMO_DIR / 'ledger.db').resolve()}"
    services: list[Service] = []
    try:
        emulator = _start_emulator()
        services.append(emulator)
        console.print(f"  emulator        {emulator.url}")
        receiver = _start_receiver(emulator.url, database_url)
        services.append(receiver)
        console.print(f"  receiver        {receiver.url}  (account webhook configured)")
        console.print(f"  checking        {manifest}  (products {products}) ...")

        def start():  # type: ignore[no-untyped-def]
            from pydantic import SecretStr

            from doccheck.pipeline import RunOptions, prefect_integration

            options = RunOptions.from_flat(
                manifest=str(manifest), products=products, out_dir=str(out), campaign=DEMO_CAMPAIGN,
                base_url=emulator.url, database_url=database_url, wait_timeout=120, grace_seconds=5,
                poll_interval=0.5, batch_size=5,
                # One request at a time per batch (two batches in parallel): the emulator
                # compares a submission with checks already indexed, so the sample's
                # near-duplicate pair (same batch) must not be created concurrently.
                concurrency=2,
            )  # fmt: skip
            # the key travels as an unsaved credentials block, as the notebook's does: never the environment
            integration = prefect_integration()
            key = integration.credentials(emulator.url, SecretStr(DEMO_API_KEY))
            return integration.bulk_check(**options.flow_parameters(), credentials=key)

        summary = run_flow(console, err, start)
    except ServiceError as exc:
        raise fail(err, str(exc)) from None
    finally:
        for service in reversed(services):
            service.stop()
        _close_ledgers()

    console.print(summary_table(summary))
    rejected = rejections_table(summary)
    if rejected is not None:
        console.print(rejected)
    console.print("stopped the emulator and the receiver.")
    console.print(f"Reports: {out}/latest/*.parquet   Prefect UI: {_ui_url(prefect_api)}")


def _start_emulator() -> Service:
    """The emulator on free local ports, allowed to call the local receiver."""
    port, storage_port = free_port(), free_port()
    args = doccheck_command("emulator", "--host", "127.0.0.1", "--port", str(port), "--storage-port",
                            str(storage_port), "--allow-private-webhooks", "--api-key", DEMO_API_KEY)  # fmt: skip
    return start_service("emulator", args, health_url=f"http://127.0.0.1:{port}/_emulator/health",
                         url=f"http://127.0.0.1:{port}/api/v1", log_path=DEMO_DIR / "emulator.log",
                         env={"PYTHONUNBUFFERED": "1"})  # fmt: skip


def _start_receiver(emulator_url: str, database_url: str) -> Service:
    """The receiver on a free port, with the account webhook pointed at it and its secret in an owner-only file."""
    port = free_port()
    receiver_url = f"http://127.0.0.1:{port}"
    secret_path = (DEMO_DIR / "webhook-secrets.json").resolve()
    _configure_webhook(emulator_url, f"{receiver_url}/webhook", secret_path)
    args = doccheck_command("receiver", "--host", "127.0.0.1", "--port", str(port), "--database-url", database_url,
                            "--webhook-secret-file", str(secret_path))  # fmt: skip
    return start_service("receiver", args, health_url=f"{receiver_url}/healthz", url=f"{receiver_url}/webhook",
                         log_path=DEMO_DIR / "receiver.log",
                         env={"PYTHONUNBUFFERED": "1", "DOCCHECK_WEBHOOK_SECRET": ""})  # fmt: skip


def _close_ledgers() -> None:
    try:
        from doccheck.pipeline import prefect_integration

        prefect_integration().close_ledgers()
    except Exception:  # noqa: BLE001 - shutdown best effort
        pass
