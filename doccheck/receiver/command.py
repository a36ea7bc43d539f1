"""``doccheck receiver``: serve the webhook receiver with uvicorn until Ctrl-C / SIGTERM."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

from doccheck.receiver.app import DEFAULT_MAX_BODY_BYTES


def _quiet_server(config: object) -> object:
    """A uvicorn server that stops on SIGINT/SIGTERM and then returns normally.

    Stock uvicorn re-raises the signal after its graceful shutdown, which kills the
    process before our own clean-up and goodbye line; here a signal only asks to stop.
    """
    import signal

    import uvicorn

    class QuietServer(uvicorn.Server):
        def handle_exit(self, sig: int, frame: object) -> None:
            if self.should_exit and sig == signal.SIGINT:
                self.force_exit = True  # a second Ctrl-C: stop now
            else:
                self.should_exit = True

    return QuietServer(config)  # type: ignore[arg-type]


def receiver(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(help="Port to listen on.")
    ] = 8792,  # 8790 and 8791 are the emulator's API and storage origin
    database_url: Annotated[
        str | None,
        typer.Option(help="Ledger URL (default: DOCCHECK_DATABASE_URL or sqlite:///doccheck.db)."),
    ] = None,
    max_body_bytes: Annotated[
        int, typer.Option(help="Refuse deliveries larger than this (413).", min=1)
    ] = DEFAULT_MAX_BODY_BYTES,
    tolerance: Annotated[int, typer.Option(help="Signature age tolerance in seconds.", min=1)] = 300,
    prefect_events: Annotated[
        bool,
        typer.Option(
            "--prefect-events",
            help="Emit a Prefect event (doccheck.check.completed|failed) per new verified delivery "
            "to PREFECT_API_URL (PREFECT_API_KEY for Prefect Cloud); see docs/prefect.md.",
        ),
    ] = False,
    webhook_secret_block: Annotated[
        str | None,
        typer.Option(
            help="Read the signing secret(s) from this Prefect Secret block (via PREFECT_API_URL; "
            "re-read every --secret-block-refresh seconds) instead of DOCCHECK_WEBHOOK_SECRET or the ledger.",
        ),
    ] = None,
    webhook_secret_file: Annotated[
        Path | None,
        typer.Option(
            envvar="DOCCHECK_WEBHOOK_SECRET_FILE",
            help="Read the signing secret(s) from this JSON file, mode 0600 and owned by you (refused otherwise; "
            "re-read on every delivery, see docs/data.md), when DOCCHECK_WEBHOOK_SECRET is not set.",
        ),
    ] = None,
    secret_block_refresh: Annotated[
        float, typer.Option(help="Seconds between re-reads of --webhook-secret-block.", min=0)
    ] = 30.0,
    prefect_api_url: Annotated[
        str | None,
        typer.Option(help="Prefect API for --prefect-events / --webhook-secret-block (default: PREFECT_API_URL)."),
    ] = None,
    header_timeout: Annotated[
        float, typer.Option(min=0.1, help="Seconds a client has to send its request line and headers.")
    ] = 10.0,
    body_timeout: Annotated[float, typer.Option(min=0.1, help="Seconds a client has to send a whole body.")] = 30.0,
) -> None:
    """Receive signed webhook deliveries at POST /webhook and store them in the ledger.

    Secrets come from a Prefect Secret block (--webhook-secret-block, re-read every 30 s), or
    from DOCCHECK_WEBHOOK_SECRET (comma-separated during a rotation), or else from a secret
    file only you can read (--webhook-secret-file / DOCCHECK_WEBHOOK_SECRET_FILE, written by
    `doccheck demo`; re-read on every delivery, so a rotation needs no restart, and the
    previous secret verifies only for a bounded window). Never from the ledger.
    """
    import uvicorn
    from rich.console import Console

    from doccheck.config import load_settings
    from doccheck.ledger import Ledger
    from doccheck.ledger.engine import redact_url
    from doccheck.receiver.app import create_app
    from doccheck.webhooks.secret_file import SecretFileError, file_secrets_provider

    console = Console(stderr=True, soft_wrap=True)
    settings = load_settings(database_url=database_url)
    try:
        ledger = Ledger(settings.database_url)
    except Exception as exc:  # noqa: BLE001 - one clear line, no traceback
        console.print(
            f"[red]error:[/] cannot open the ledger {redact_url(settings.database_url)}: {type(exc).__name__}"
        )
        raise typer.Exit(1) from None
    env_secrets = settings.webhook_secrets()
    if webhook_secret_block:
        from doccheck.receiver.prefect_events import prefect_api_from_environment, secret_block_provider

        try:
            api_url, api_key = prefect_api_from_environment(prefect_api_url)
            provider = secret_block_provider(api_url, webhook_secret_block, api_key, ttl=secret_block_refresh)
            provider()  # fail now, with one clear line, rather than at the first delivery
        except (ValueError, LookupError, RuntimeError) as exc:
            console.print(f"[red]error:[/] {exc}")
            raise typer.Exit(2) from None
        source = f"Prefect Secret block {webhook_secret_block!r}"
    elif env_secrets:
        provider = lambda: env_secrets  # noqa: E731
        source = "DOCCHECK_WEBHOOK_SECRET"
    elif webhook_secret_file is not None:
        provider = file_secrets_provider(webhook_secret_file)
        try:
            provider()  # refuse an insecure or unreadable file now, with one clear line
        except SecretFileError as exc:
            console.print(f"[red]error:[/] {exc}")
            ledger.close()
            raise typer.Exit(2) from None
        source = f"the secret file {webhook_secret_file}"
    else:
        console.print(
            "[red]error:[/] no signing secret: set DOCCHECK_WEBHOOK_SECRET, --webhook-secret-file "
            "(DOCCHECK_WEBHOOK_SECRET_FILE) or --webhook-secret-block (secrets are no longer read from the ledger)"
        )
        ledger.close()
        raise typer.Exit(2)
    on_stored = None
    events_note = ""
    if prefect_events:
        from doccheck.receiver.prefect_events import emitter_from_environment, ledger_campaign_lookup

        try:
            emitter = emitter_from_environment(prefect_api_url, campaign_of=ledger_campaign_lookup(ledger))
        except ValueError as exc:
            console.print(f"[red]error:[/] {exc}")
            raise typer.Exit(2) from None
        on_stored = emitter.emit
        events_note = f", Prefect events to {emitter.events_url}"
    app = create_app(ledger, provider, max_body_bytes=max_body_bytes, tolerance=tolerance, on_stored=on_stored)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    console.print(
        f"receiver listening on http://{host}:{port}/webhook "
        f"(ledger {redact_url(settings.database_url)}, secrets from {source}{events_note})"
    )
    from doccheck.guards.slow_clients import BodyDeadline, deadline_protocol

    bounded = BodyDeadline(app, body_timeout=body_timeout, idle_timeout=min(body_timeout, 10.0))
    config = uvicorn.Config(bounded, host=host, port=port, http=deadline_protocol(header_timeout),
                            log_level="warning", access_log=False, lifespan="off")  # fmt: skip
    server = _quiet_server(config)
    try:
        server.run()  # type: ignore[attr-defined]
    except KeyboardInterrupt:  # pragma: no cover - uvicorn handles SIGINT itself
        pass
    finally:
        ledger.close()
    console.print("receiver stopped")
