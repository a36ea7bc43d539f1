"""``doccheck receiver``: serve the webhook receiver with uvicorn until Ctrl-C / SIGTERM.

A stop drains: SIGTERM (systemd, Kubernetes) or Ctrl-C closes the listening socket at once
(the service redelivers what it cannot send meanwhile), lets the deliveries in flight finish
and be stored for up to :data:`DRAIN_SECONDS`, then prints one line and exits 143 (SIGTERM) or
130 (Ctrl-C). A second signal stops without waiting.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from doccheck.receiver._delivery_app import DEFAULT_MAX_BODY_BYTES

#: Seconds the deliveries in flight have to finish after a stop (the service wants an answer within 10 s).
DRAIN_SECONDS = 10


def _quiet_server(config: object) -> object:
    """A uvicorn server that drains on SIGINT/SIGTERM and then returns normally.

    Stock uvicorn re-raises the signal after its graceful shutdown, which kills the
    process before our own clean-up and goodbye line; here a signal only asks to stop,
    and is remembered (``stopped_by``, ``in_flight``) for the exit code and the line.
    """
    import uvicorn

    class QuietServer(uvicorn.Server):
        stopped_by: int | None = None
        in_flight = 0

        def handle_exit(self, sig: int, frame: object) -> None:
            if self.should_exit:
                self.force_exit = True  # a second signal: stop now, without waiting for deliveries
                return
            self.stopped_by = sig
            self.in_flight = len(self.server_state.tasks)
            self.should_exit = True

    return QuietServer(config)  # type: ignore[arg-type]


def receiver(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(help="Port to listen on.")
    ] = 8792,  # 8790 and 8791 are the emulator's API and storage origin
    database_url: Annotated[
        str | None,
        typer.Option(help="Ledger URL (overrides DOCCHECK_DATABASE_URL; `doccheck config` shows it)."),
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
            help="Overrides DOCCHECK_WEBHOOK_SECRET_FILE. Read the signing secret(s) from this JSON file, mode 0600 and owned by you (refused otherwise; "
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
    from rich.console import Console

    from doccheck.config import load_settings
    from doccheck.ledger import redact_url
    from doccheck.receiver._delivery_app import create_app

    console = Console(stderr=True, soft_wrap=True)
    settings = load_settings(database_url=database_url, webhook_secret_file=webhook_secret_file)
    ledger = _open_ledger(console, settings.ledger.database_url)
    try:
        provider, source = _secrets_provider(console, settings, webhook_secret_block, secret_block_refresh,
                                             prefect_api_url)  # fmt: skip
        on_stored, events_note = _events_hook(console, ledger, prefect_events, prefect_api_url)
        app = create_app(ledger, provider, max_body_bytes=max_body_bytes, tolerance=tolerance, on_stored=on_stored)
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        console.print(
            f"receiver listening on http://{host}:{port}/webhook "
            f"(ledger {redact_url(settings.ledger.database_url)}, secrets from {source}{events_note})"
        )
        server = _serve(app, host, port, header_timeout=header_timeout, body_timeout=body_timeout)
    finally:
        ledger.close()
    _goodbye(console, server)


def _goodbye(console: Any, server: Any) -> None:
    """One line; exit 143/130 when a signal stopped the receiver (128 + the signal)."""
    import signal

    sig = getattr(server, "stopped_by", None)
    if sig is None:
        console.print("receiver stopped")
        return
    name = "SIGTERM" if sig == signal.SIGTERM else ("Ctrl-C" if sig == signal.SIGINT else f"signal {sig}")
    drained = "stopped without waiting" if server.force_exit else "finished"
    console.print(f"receiver stopped ({name}): no new deliveries accepted, {server.in_flight} in flight {drained}; "
                  "the service redelivers the rest")  # fmt: skip
    raise typer.Exit(128 + int(sig))


def _open_ledger(console: Any, database_url: str) -> Any:
    """The ledger, or one clear line and exit 1 (no traceback, no password in the URL)."""
    from doccheck.ledger import Ledger, redact_url

    try:
        return Ledger(database_url)
    except Exception as exc:  # noqa: BLE001 - one clear line, no traceback
        console.print(f"[red]error:[/] cannot open the ledger {redact_url(database_url)}: {type(exc).__name__}")
        raise typer.Exit(1) from None


def _secrets_provider(
    console: Any, settings: Any, block: str | None, refresh: float, prefect_api_url: str | None
) -> tuple[Callable[[], Any], str]:
    """The signing secrets in the one order of :func:`doccheck.webhooks.signing_secrets`, checked
    now: a source that cannot be used fails with one line and exit 2."""
    from doccheck.errors import SecretFileError
    from doccheck.webhooks import signing_secrets

    try:
        reader = None
        if block:
            from doccheck.receiver._prefect_events import prefect_api_from_environment, secret_block_provider

            api_url, api_key = prefect_api_from_environment(prefect_api_url)
            reader = secret_block_provider(api_url, block, api_key, ttl=refresh)
        return signing_secrets(settings, block=reader, block_name=block)
    except (ValueError, LookupError, RuntimeError, SecretFileError) as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None


def _events_hook(console: Any, ledger: Any, enabled: bool, prefect_api_url: str | None) -> tuple[Any, str]:
    """``--prefect-events``: the emitter called for each new verified delivery, and a note for the banner."""
    if not enabled:
        return None, ""
    from doccheck.receiver._prefect_events import emitter_from_environment, ledger_campaign_lookup

    try:
        emitter = emitter_from_environment(prefect_api_url, campaign_of=ledger_campaign_lookup(ledger))
    except ValueError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    return emitter.emit, f", Prefect events to {emitter.events_url}"


def _serve(app: Any, host: str, port: int, *, header_timeout: float, body_timeout: float) -> Any:
    """Serve until stopped, with read deadlines for slow clients (headers, then the body);
    the server, which knows the signal that stopped it."""
    import uvicorn

    from doccheck.guards import BodyDeadline, deadline_protocol

    bounded = BodyDeadline(app, body_timeout=body_timeout, idle_timeout=min(body_timeout, 10.0))
    config = uvicorn.Config(bounded, host=host, port=port, http=deadline_protocol(header_timeout),
                            log_level="warning", access_log=False, lifespan="off",
                            timeout_graceful_shutdown=DRAIN_SECONDS)  # fmt: skip
    server = _quiet_server(config)
    try:
        server.run()  # type: ignore[attr-defined]
    except KeyboardInterrupt:  # pragma: no cover - uvicorn handles SIGINT itself
        pass
    return server
