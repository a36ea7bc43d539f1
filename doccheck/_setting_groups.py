"""The settings' groups: each ``DOCCHECK_*`` variable as a typed, documented field (docs/configuration.md).

Why apart from :mod:`doccheck.config`: the groups are what an operator reads (a field, its
variable, its default, its rule); the model that layers them (the file, the environment, a
Prefect block, a flag) and says where each value came from is :mod:`doccheck.config`, which
imports them and is their one public home.
"""

from __future__ import annotations

import zoneinfo
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, FilePath, SecretStr, field_validator

from doccheck._setting_values import check_base_url, parse_storage_options, split_list, split_secrets

DEFAULT_DATABASE_URL = "sqlite:///doccheck.db"
#: Days an event id is remembered (and its row kept, body or not), so that a redelivery
#: within the sender's retry window is recognised: the interface shows no schedule; Stripe
#: retries for three days, so three is the floor. Invariant 11.
WEBHOOK_EVENT_WINDOW_DAYS = 3.0


def _env(name: str, description: str, default: Any = None, **constraints: Any) -> Any:
    """A field read from the variable ``name`` (the one place its name is written)."""
    return Field(default=default, description=description, json_schema_extra={"env": name}, **constraints)


CommaList = Annotated[list[str], BeforeValidator(split_list)]


class _Group(BaseModel):
    """A group of settings: unknown names are an error (a typo never passes silently)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ServiceSettings(_Group):
    """The document-check service and its credentials."""

    base_url: str | None = _env("DOCCHECK_BASE_URL", "The service's base address, ending in `/api/v1`.")
    api_key: SecretStr | None = _env(
        "DOCCHECK_API_KEY", "Your API key; never logged, never written to reports, artifacts or Prefect parameters."
    )
    api_key_block: str | None = _env(
        "DOCCHECK_API_KEY_BLOCK", "Name of a Prefect `Secret` block holding the API key (deployments)."
    )
    credentials_block: str | None = _env(
        "DOCCHECK_CREDENTIALS_BLOCK", "Name of a `DocCheckCredentials` block (key and client options; deployments)."
    )
    profile: FilePath | None = _env(
        "DOCCHECK_SERVICE_PROFILE",
        "A service profile written by `doccheck probe` (docs/service-profile.md); unset: the emulator's choices. "
        "Its `accepted_types` are the file types sent as files; a type the service refuses (415) is learnt into "
        "the ledger and sent as text by every later run (`doccheck probe` lists it).",
    )

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, value: str | None) -> str | None:
        return None if value is None else check_base_url(value)


class LedgerSettings(_Group):
    """Where outcomes are recorded."""

    database_url: str = _env(
        "DOCCHECK_DATABASE_URL",
        "The ledger: a SQLAlchemy URL, `sqlite:///...` or `postgresql+psycopg://...`.",
        DEFAULT_DATABASE_URL,
    )
    claim_lease_seconds: float | None = _env(
        "DOCCHECK_CLAIM_LEASE_SECONDS",
        "Seconds a dead worker's claims stay taken before another may take them over (shards); unset: 120.",
        ge=1,
        allow_inf_nan=False,
    )

    @field_validator("database_url")
    @classmethod
    def _url(cls, value: str) -> str:
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        try:
            make_url(value)
        except ArgumentError:
            raise ValueError("expected a SQLAlchemy URL such as sqlite:///doccheck.db") from None
        return value


class WebhookSettings(_Group):
    """Signed deliveries from the service."""

    secret: SecretStr | None = _env(
        "DOCCHECK_WEBHOOK_SECRET", "The receiver's signing secret(s), comma-separated during a rotation."
    )
    secret_file: Path | None = _env(
        "DOCCHECK_WEBHOOK_SECRET_FILE", "The receiver's secret file (mode 0600, owner only; docs/data.md)."
    )
    url: str | None = _env("DOCCHECK_WEBHOOK_URL", "Per-check webhook URL of scheduled runs (default: the account's).")
    event_window_days: float = _env(
        "DOCCHECK_WEBHOOK_EVENT_WINDOW_DAYS",
        "Days a webhook event id is remembered, through purges, so a sender's redelivery is still a duplicate "
        "(at least 3: the senders' retry window).",
        WEBHOOK_EVENT_WINDOW_DAYS,
        ge=WEBHOOK_EVENT_WINDOW_DAYS,
        allow_inf_nan=False,
    )

    def secrets(self) -> list[SecretStr]:
        """The secrets of ``DOCCHECK_WEBHOOK_SECRET``, newest first as written, empty entries dropped."""
        return split_secrets(self.secret)


class SubmissionSettings(_Group):
    """How a run plans and sends."""

    match_background: bool = _env(
        "DOCCHECK_MATCH_BACKGROUND",
        "Cohort-match large manifests in a second process (dry runs; off: no gain measured on 2 cores).",
        False,
    )


class ShardSettings(_Group):
    """One campaign on many workers (`--shards`)."""

    deployment: str = _env(
        "DOCCHECK_SHARD_DEPLOYMENT", "The shard flow's deployment.", "bulk-check-shard/bulk-check-shard", min_length=1
    )
    lost_after_seconds: float = _env(
        "DOCCHECK_SHARD_LOST_AFTER_SECONDS",
        "Least seconds without a worker heartbeat before its running shard counts as lost.",
        60.0,
        ge=0,
        allow_inf_nan=False,
    )
    pickup_seconds: float = _env(
        "DOCCHECK_SHARD_PICKUP_SECONDS",
        "Seconds a shard may wait for a worker before it is started again.",
        600.0,
        ge=0,
        allow_inf_nan=False,
    )
    retries: int = _env("DOCCHECK_SHARD_RETRIES", "New runs of a shard after it failed or was lost.", 2, ge=0)


class RateLimitSettings(_Group):
    """One rate limit for the whole fleet (a Prefect global concurrency limit)."""

    name: str = _env("DOCCHECK_RATE_LIMIT_NAME", "The limit's name.", "doccheck-service", min_length=1)
    per_second: float | None = _env(
        "DOCCHECK_RATE_LIMIT_PER_SECOND",
        "Requests per second for the whole fleet; unset or 0: no fleet-wide pacing (429s are still honoured).",
        ge=0,
        allow_inf_nan=False,
    )
    chunk: int = _env("DOCCHECK_RATE_LIMIT_CHUNK", "Slots taken per acquisition.", 10, ge=1)


class ScheduleSettings(_Group):
    """The served deployments (`deployments/serve.py`)."""

    cron: str = _env("DOCCHECK_SCHEDULE_CRON", "The weekly check's cron schedule.", "0 6 * * 1")
    timezone: str = _env("DOCCHECK_SCHEDULE_TIMEZONE", "The timezone the cron is read in.", "Europe/London")
    # A str, not a Path: Path("s3://term/m.csv") is "s3:/term/m.csv", a URL no store opens.
    manifest: str | None = _env(
        "DOCCHECK_MANIFEST",
        "The scheduled check's manifest: a path, or a URL (s3://bucket/course/manifest.csv); unset: the sample manifest.",
    )
    products: CommaList = _env(
        "DOCCHECK_PRODUCTS", "Products of the scheduled check, comma-separated.", ["ai", "similarity"]
    )
    campaign: str | None = _env("DOCCHECK_CAMPAIGN", "The scheduled check's campaign; unset: the manifest's name.")
    reports_dir: str = _env(
        "DOCCHECK_REPORTS_DIR",
        "Where the scheduled runs write their reports: a folder, or a URL (s3://bucket/reports).",
        "reports",
    )
    collect_within_seconds: int = _env(
        "DOCCHECK_COLLECT_WITHIN_S",
        "Seconds in which further check events of a campaign fire no new collect.",
        60,
        ge=1,
    )
    collect_delay_seconds: int = _env(
        "DOCCHECK_COLLECT_DELAY_S", "Seconds between a campaign's first check event and its collect run.", 15, ge=0
    )
    serve_limit: int = _env("DOCCHECK_SERVE_LIMIT", "Flow runs served at once.", 2, ge=1)
    missed_run_margin_hours: int = _env(
        "DOCCHECK_MISSED_RUN_MARGIN_H",
        "Hours beyond the schedule's period before the missed-run automation fires.",
        6,
        ge=0,
    )
    deployment_suffix: str = _env(
        "DOCCHECK_DEPLOYMENT_SUFFIX", "Appended to the deployments' names (tests, staging).", ""
    )

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            zoneinfo.ZoneInfo(value)
        except (ValueError, zoneinfo.ZoneInfoNotFoundError):
            raise ValueError("expected an IANA timezone such as Europe/London") from None
        return value

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        if len(value.split()) not in (5, 6):
            raise ValueError("expected a cron expression of five fields such as '0 6 * * 1'")
        return value

    @field_validator("products")
    @classmethod
    def _products(cls, value: list[str]) -> list[str]:
        unknown = sorted(set(value) - {"ai", "similarity"})
        if unknown or not value:
            raise ValueError("expected ai, similarity or both")
        return value


class OutputSettings(_Group):
    """What a run leaves behind besides its reports."""

    catalog: bool = _env(
        "DOCCHECK_CATALOG", "Rebuild `<out>/catalog.duckdb` after every run, collect and purge (docs/data.md).", True
    )
    artifact_links: Literal["object", "presigned"] = _env(
        "DOCCHECK_ARTIFACT_LINKS",
        "How the Prefect UI's artifacts link reports on a store: `object`, the object's URL (`s3://bucket/...`, "
        "opened with the store's credentials); `presigned`, a link anyone holding it can open until it expires "
        "(a signature, never the secret key).",
        "object",
    )
    artifact_link_expiry_seconds: int = _env(
        "DOCCHECK_ARTIFACT_LINK_EXPIRY_S",
        "Seconds a presigned link stays valid (S3 allows 7 days at most; a link signed with temporary "
        "credentials ends with them).",
        7 * 24 * 3600,
        ge=1,
        le=7 * 24 * 3600,
    )


class StorageSettings(_Group):
    """Where a term's files live when they are at a URL (`s3://`, `gs://`, `az://`; docs/storage.md).

    Credentials come first from each store's own chain (`AWS_*` with `AWS_ENDPOINT_URL`, `~/.aws`
    profiles and instance roles; `GOOGLE_APPLICATION_CREDENTIALS`; `AZURE_STORAGE_*`); these fields
    add to it. A URL never carries a credential: `s3://key:secret@bucket` is refused."""

    options: SecretStr | None = _env(
        "DOCCHECK_STORAGE_OPTIONS",
        "fsspec storage options as a JSON object, for every URL or per scheme "
        '(`{"s3": {"endpoint_url": "https://minio.example", "key": "...", "secret": "..."}}`); a secret: never shown.',
    )
    block: str | None = _env(
        "DOCCHECK_STORAGE_BLOCK",
        "Name of a `DocCheckStorage` Prefect block holding storage options (flow runs on container work pools).",
    )

    @field_validator("options")
    @classmethod
    def _options(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            parse_storage_options(value.get_secret_value())
        return value


class RetentionSettings(_Group):
    """How long student data is kept (`doccheck purge --retention`)."""

    days: float | None = _env(
        "DOCCHECK_RETENTION_DAYS", "Days `doccheck purge --retention` keeps student data.", ge=0, allow_inf_nan=False
    )


class ExtractionSettings(_Group):
    """How much reading one student file may cost (`doccheck.extract.ExtractionLimits`; docs/extraction.md).

    Every file is read in a worker process under these bounds, at planning and when a file is
    sent as its text; a file past one is that row's rejection with the limit named, never the run's."""

    wall_seconds: float = _env(
        "DOCCHECK_EXTRACT_WALL_SECONDS", "Seconds one file may take to read before its worker is killed.", 20.0,
        gt=0, allow_inf_nan=False,
    )  # fmt: skip
    cpu_seconds: int = _env("DOCCHECK_EXTRACT_CPU_SECONDS", "CPU seconds one file may use.", 20, ge=1)
    memory_mb: int = _env(
        "DOCCHECK_EXTRACT_MEMORY_MB", "MiB of memory the worker may grow by while it reads one file.", 768, ge=64
    )
    max_pdf_pages: int = _env("DOCCHECK_EXTRACT_MAX_PDF_PAGES", "Most pages of a PDF read.", 2000, ge=1)
    max_slides: int = _env("DOCCHECK_EXTRACT_MAX_SLIDES", "Most slides of a .pptx read.", 1000, ge=1)
    max_inflated_mb: int = _env(
        "DOCCHECK_EXTRACT_MAX_INFLATED_MB", "MiB the parts of a .docx/.odt/.pptx read may inflate to together.", 100,
        ge=1,
    )  # fmt: skip
