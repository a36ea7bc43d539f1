"""``doccheck emulator``: start the local document-check service emulator."""

from __future__ import annotations

from typing import Annotated

import typer


def emulator(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port of the API (base URL http://HOST:PORT/api/v1).")] = 8790,
    storage_port: Annotated[
        int | None, typer.Option(help="Port of the storage origin for signed upload PUTs [default: PORT+1].")
    ] = None,
    api_key: Annotated[
        list[str] | None, typer.Option("--api-key", help="Accepted API key (repeat for several accounts).")
    ] = None,
    balance_cents: Annotated[int, typer.Option(min=0, help="Starting balance of each --api-key account.")] = 1_000_000,
    allow_private_webhooks: Annotated[
        bool, typer.Option(help="Accept and call http:// webhook URLs on private/loopback addresses (local receivers).")
    ] = False,
    offline: Annotated[
        bool, typer.Option(help="Never ask DNS: webhook hosts must be IP literals or localhost (sandboxes, tests).")
    ] = False,
    latency_ms: Annotated[int, typer.Option(min=0, help="Added latency per API request.")] = 0,
    error_rate: Annotated[float, typer.Option(min=0.0, max=1.0, help="Share of API requests answered 500/503.")] = 0.0,
    rate_limit_per_s: Annotated[int, typer.Option(min=0, help="Requests per second per account; 0 = unlimited.")] = 0,
    webhook_drop_rate: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Share of delivery attempts dropped.")
    ] = 0.0,
    product_failure_rate: Annotated[float, typer.Option(min=0.0, max=1.0, help="Share of products that fail.")] = 0.0,
    processing_seconds: Annotated[float, typer.Option(min=0.0, help="Service time until a product finishes.")] = 1.0,
    seed: Annotated[int | None, typer.Option(help="Seed for reproducible faults.")] = None,
    header_timeout: Annotated[
        float, typer.Option(min=0.1, help="Seconds a client has to send its request line and headers.")
    ] = 10.0,
    body_timeout: Annotated[float, typer.Option(min=0.1, help="Seconds a client has to send a whole body.")] = 120.0,
    idle_timeout: Annotated[
        float, typer.Option(min=0.1, help="Seconds a client may pause between two pieces of a body.")
    ] = 15.0,
    profile: Annotated[
        str,
        typer.Option(
            help="Answer as another reading of the interface (docs/emulator.md): default, message-errors, "
            "detail-errors, problem-errors, plain-errors, created-202, no-replay-header, queued, status-synonyms, "
            "string-error, ai-percent, similarity-fraction, price-at-completion, reuse-refused, lost-answers, reuse-refused-lost, list-no-metadata, "
            "list-oldest-first, list-ignores-cursor, list-small-page, no-list, no-get-by-id."
        ),
    ] = "default",
) -> None:
    """Run a local, real-HTTP emulator of the document-check service (a sandbox: no money, no network)."""
    from doccheck.emulator._faults import FaultSettings
    from doccheck.emulator._runtime import DEFAULT_API_KEY, EmulatorConfig
    from doccheck.emulator._server import run
    from doccheck.emulator._variants import check_name

    try:
        check_name(profile)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--profile") from None

    faults = FaultSettings(
        latency_ms=latency_ms,
        error_rate=error_rate,
        rate_limit_per_s=rate_limit_per_s,
        webhook_drop_rate=webhook_drop_rate,
        product_failure_rate=product_failure_rate,
        processing_seconds=processing_seconds,
    )
    config = EmulatorConfig(
        host=host,
        port=port,
        storage_port=storage_port if storage_port is not None else port + 1,
        api_keys=list(api_key) if api_key else [DEFAULT_API_KEY],
        balance_cents=balance_cents,
        allow_private_webhooks=allow_private_webhooks,
        offline=offline,
        seed=seed,
        faults=faults,
        header_timeout_s=header_timeout,
        body_timeout_s=body_timeout,
        idle_timeout_s=idle_timeout,
    )
    run(config, profile)
