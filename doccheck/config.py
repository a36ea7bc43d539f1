"""Every ``DOCCHECK_*`` setting: one pydantic-settings model, read here and nowhere else.

Why one model: what an operator sets is what runs. Each variable is a typed, documented
field of a group (service, ledger, webhook, submission, shards, rate limit, schedule,
retention), as Prefect's own ``PREFECT_*`` tree and prefect-aws's ``settings.py`` do it;
no other module reads ``os.environ`` for a ``DOCCHECK_*`` name. A field names its variable
(``env``) so the documented names stay as they are (``DOCCHECK_DATABASE_URL``, not
``DOCCHECK_LEDGER__DATABASE_URL``).

Where a value comes from, lowest first: the field's default, the file named by
``DOCCHECK_ENV_FILE`` (``NAME=value`` lines, the same names), the environment, a Prefect
block (passed in by the integration), a flag or keyword argument. :func:`load_settings`
takes the last two; :func:`sources_of` says which one won for each field
(``doccheck config`` prints it). An empty variable counts as unset. A flow run that loads a
block for the whole process (the storage options of a ``DocCheckStorage`` block, read by the
storage seam on any thread) sets it with :func:`process_block` for the time it runs.

A value the program cannot use is a :class:`SettingsError`: one line per variable naming
it, the value (never a secret's) and what is expected, before anything is sent or written.
Secrets are :class:`pydantic.SecretStr`, so a stray ``repr`` or log line never shows them.
"""

from __future__ import annotations

import contextlib
import functools
import os
import zoneinfo
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, cast

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    FilePath,
    SecretStr,
    ValidationError,
    field_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from doccheck.errors import SettingsError

__all__ = [
    "DEFAULT_DATABASE_URL",
    "ENV_FILE_VAR",
    "SECRET_MASK",
    "Settings",
    "SettingsField",
    "WEBHOOK_EVENT_WINDOW_DAYS",
    "check_base_url",
    "env_file",
    "fields",
    "load_settings",
    "parse_storage_options",
    "process_block",
    "sources_of",
    "split_list",
    "setting",
    "split_secrets",
    "unknown_variables",
    "values_of",
]

DEFAULT_DATABASE_URL = "sqlite:///doccheck.db"
#: Days an event id is remembered (and its row kept, body or not), so that a redelivery
#: within the sender's retry window is recognised: the interface shows no schedule; Stripe
#: retries for three days, so three is the floor. Invariant 11.
WEBHOOK_EVENT_WINDOW_DAYS = 3.0
#: The variable naming a file of ``DOCCHECK_*=value`` lines read below the environment.
ENV_FILE_VAR = "DOCCHECK_ENV_FILE"
#: What is shown in place of a secret's value.
SECRET_MASK = "**********"
#: Every path of the service's interface is relative to a base ending in this.
API_VERSION_SUFFIX = "/api/v1"

Source = Literal["default", "file", "environment", "Prefect block", "flag"]

#: Values of a Prefect block in force for the whole process (flat names, as ``block=``), set by
#: :func:`process_block` while a flow run holds it; empty otherwise.
_PROCESS_BLOCK: dict[str, Any] = {}


def split_list(value: object) -> list[str]:
    """``"a, b"`` → ``["a", "b"]``: the one comma-splitter of settings (lists, rotated secrets)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list | tuple):
        return [str(part).strip() for part in value if str(part).strip()]
    raise TypeError("expected a comma-separated list")


def split_secrets(value: str | SecretStr | None) -> list[SecretStr]:
    """Rotated secrets written as one value (``"new,old"``, from a variable or a block) → a
    list, newest first, empty entries dropped. The one splitter of every secret source."""
    if value is None:
        return []
    raw = value.get_secret_value() if isinstance(value, SecretStr) else value
    return [SecretStr(part) for part in split_list(raw)]


def parse_storage_options(raw: str) -> dict[str, Any]:
    """``DOCCHECK_STORAGE_OPTIONS``' JSON object (fsspec storage options, flat or per scheme); a
    ``ValueError`` that never repeats the value (it holds credentials)."""
    import json

    try:
        value = json.loads(raw)
    except ValueError:
        raise ValueError("expected a JSON object of fsspec storage options") from None
    if not isinstance(value, dict):
        raise ValueError("expected a JSON object of fsspec storage options")
    return value


def check_base_url(url: str) -> str:
    """The service base without a trailing slash; a ``ValueError`` unless it is an http(s)
    URL ending in ``/api/v1`` (every path of the interface is relative to it: a bare host
    would silently hit the wrong paths)."""
    from urllib.parse import urlsplit

    url = url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"base URL must be an http(s) URL ending in {API_VERSION_SUFFIX}, got {url!r}")
    if not parts.path.endswith(API_VERSION_SUFFIX) or parts.query:
        raise ValueError(
            f"base URL must end in {API_VERSION_SUFFIX} (the interface version is in the path), got {url!r}"
        )
    return url


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
    manifest: Path | None = _env("DOCCHECK_MANIFEST", "The scheduled check's manifest; unset: the sample manifest.")
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


class _Layered(PydanticBaseSettingsSource):
    """The file (``DOCCHECK_ENV_FILE``) and the environment, each variable by its field's name."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: __call__ reads every field at once

    def __call__(self) -> dict[str, Any]:
        return _nest({name: value for name, (value, _) in _raw_layers().items()})


class Settings(BaseSettings):
    """Every ``DOCCHECK_*`` setting, in groups (``settings.ledger.database_url``)."""

    model_config = SettingsConfigDict(extra="forbid", frozen=True)

    service: ServiceSettings = ServiceSettings()
    ledger: LedgerSettings = LedgerSettings()
    webhook: WebhookSettings = WebhookSettings()
    submission: SubmissionSettings = SubmissionSettings()
    shards: ShardSettings = ShardSettings()
    rate_limit: RateLimitSettings = RateLimitSettings()
    schedule: ScheduleSettings = ScheduleSettings()
    outputs: OutputSettings = OutputSettings()
    storage: StorageSettings = StorageSettings()
    retention: RetentionSettings = RetentionSettings()
    extraction: ExtractionSettings = ExtractionSettings()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Arguments (blocks, flags) over the environment over the file; nothing else."""
        return init_settings, _Layered(settings_cls)


class SettingsField(BaseModel):
    """One field of the model as documentation and ``doccheck config`` show it."""

    group: str
    name: str
    env: str
    description: str
    default: Any
    annotation: str
    secret: bool

    @property
    def key(self) -> str:
        """The flat name flags and keyword arguments use: the variable without ``DOCCHECK_``, lower case."""
        return self.env.removeprefix("DOCCHECK_").lower()


@functools.cache
def fields() -> tuple[SettingsField, ...]:
    """Every field of :class:`Settings`, group by group, as declared."""
    out = []
    for group, info in Settings.model_fields.items():
        model = info.annotation
        assert isinstance(model, type) and issubclass(model, _Group)
        for name, field in model.model_fields.items():
            extra = field.json_schema_extra
            assert isinstance(extra, dict), f"{group}.{name} names no variable"
            annotation = str(field.annotation).replace("typing.", "").replace("pathlib.", "")
            out.append(
                SettingsField(
                    group=group,
                    name=name,
                    env=str(extra["env"]),
                    description=field.description or "",
                    default=field.get_default(call_default_factory=True),
                    annotation=annotation,
                    secret="SecretStr" in annotation,
                )
            )
    return tuple(out)


@functools.cache
def _by_env() -> dict[str, SettingsField]:
    return {f.env: f for f in fields()}


@functools.cache
def _by_key() -> dict[str, SettingsField]:
    return {f.key: f for f in fields()}


def env_file(environ: Mapping[str, str] | None = None) -> Path | None:
    """The file ``DOCCHECK_ENV_FILE`` names, absolute (a relative name is read from the working
    directory), or None when the variable is unset or empty: what ``doccheck config`` names, so
    that an operator sees which file the values marked ``file`` came from."""
    env = os.environ if environ is None else environ
    name = env.get(ENV_FILE_VAR, "").strip()
    return Path(name).absolute() if name else None


def _raw_layers(environ: Mapping[str, str] | None = None) -> dict[str, tuple[str, Source]]:
    """Each set variable's raw value and where it came from (the environment over the file)."""
    env = os.environ if environ is None else environ
    known = _by_env()
    out: dict[str, tuple[str, Source]] = {}
    file = env_file(env)
    if file is not None:
        from dotenv import dotenv_values

        if not file.is_file():
            reason = "not a file" if file.exists() else "no such file"
            raise SettingsError(
                [f"{ENV_FILE_VAR}={env[ENV_FILE_VAR].strip()!r}: {reason} ({file}); expected DOCCHECK_*=value lines"]
            )
        for name, value in dotenv_values(file).items():
            if name in known and value is not None and value.strip():
                out[name] = (value.strip(), "file")
    for name in known:
        value = env.get(name, "").strip()
        if value:
            out[name] = (value, "environment")
    return out


def _nest(values: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``{"DOCCHECK_DATABASE_URL": v}`` → ``{"ledger": {"database_url": v}}``."""
    known = _by_env()
    nested: dict[str, dict[str, Any]] = {}
    for name, value in values.items():
        f = known[name]
        nested.setdefault(f.group, {})[f.name] = value
    return nested


def _arguments(layer: Mapping[str, Any], source: Source) -> dict[str, Any]:
    """Flat names (``database_url=...``) → variable names; None means "not given"."""
    keys = _by_key()
    out = {}
    for key, value in layer.items():
        if value is None:
            continue
        if key not in keys:
            raise TypeError(f"unknown setting {key!r} ({source}); known: {', '.join(sorted(keys))}")
        out[keys[key].env] = value
    return out


def _error(exc: ValidationError, sources: Mapping[str, Source]) -> SettingsError:
    by_place = _by_place()
    lines = []
    for err in exc.errors():
        f = by_place.get(tuple(str(p) for p in err["loc"][:2]))  # type: ignore[arg-type]
        reason = err["msg"].removeprefix("Value error, ")
        if f is None:
            lines.append(f"settings: {reason}")
            continue
        shown = SECRET_MASK if f.secret else repr(str(err.get("input")))
        lines.append(f"{f.env}={shown} ({sources.get(f.env, 'default')}): {reason}")
    return SettingsError(lines)


def load_settings(*, block: Mapping[str, Any] | None = None, **flags: Any) -> Settings:
    """The settings in effect: ``flags`` (flat names such as ``database_url``; None = not
    given) over ``block`` (values a Prefect block holds) over the environment over the file
    over the defaults. Raises :class:`SettingsError` naming every value it cannot use."""
    if not block and not any(value is not None for value in flags.values()):
        # the common call, once per result in places: cached per state of the environment
        return _from_environment(_environment_state())
    upper = {**_arguments({**_PROCESS_BLOCK, **(block or {})}, "Prefect block"), **_arguments(flags, "flag")}
    try:
        return Settings(**cast(Any, _nest(upper)))
    except ValidationError as exc:
        raise _error(exc, sources_of(block=block, **flags)) from None


@contextlib.contextmanager
def process_block(values: Mapping[str, Any]) -> Iterator[None]:
    """Within the ``with``, every :func:`load_settings` and :func:`setting` of this process reads
    ``values`` (flat names, as ``block=`` takes them) as a Prefect block's, over the environment.

    Why the whole process: a flow run's storage options (its ``DocCheckStorage`` block) are read
    deep in the library, where the storage seam resolves a URL, on whichever thread reads it; the
    library's own thread pools (the extraction prefetch, the ledger writer) carry no context
    variable. A flow-run process runs one flow; nested blocks merge; the previous values come
    back on exit."""
    _arguments(values, "Prefect block")  # an unknown name fails here, not at the first read
    previous = dict(_PROCESS_BLOCK)
    _PROCESS_BLOCK.update({key: value for key, value in values.items() if value is not None})
    try:
        yield
    finally:
        _PROCESS_BLOCK.clear()
        _PROCESS_BLOCK.update(previous)


def setting(group: str, name: str) -> Any:
    """One setting as the environment (and the file) set it, cached per raw value: for the paths
    that read a setting per document (the service profile, read for every answer), where a
    whole :func:`load_settings` would cost 0.1 ms each time. Validated by the model all the same."""
    field = _by_place()[(group, name)]
    file = os.environ.get(ENV_FILE_VAR, "").strip()
    try:
        stamp = os.stat(file).st_mtime_ns if file else None
    except OSError:
        stamp = None
    return _one_setting(group, name, os.environ.get(field.env), file, stamp, _PROCESS_BLOCK.get(field.key))


@functools.lru_cache(maxsize=64)
def _one_setting(group: str, name: str, raw: str | None, file: str, stamp: int | None, block: Any) -> Any:
    return getattr(getattr(load_settings(), group), name)


@functools.cache
def _by_place() -> dict[tuple[str, str], SettingsField]:
    return {(f.group, f.name): f for f in fields()}


def _environment_state() -> tuple[Any, ...]:
    """What the environment's settings depend on: each variable's value and the file's identity."""
    file = os.environ.get(ENV_FILE_VAR, "").strip()
    try:
        stamp = os.stat(file).st_mtime_ns if file else None
    except OSError:
        stamp = None
    return (tuple(sorted(_PROCESS_BLOCK.items())), file, stamp, *map(os.environ.get, _by_env()))


@functools.lru_cache(maxsize=16)
def _from_environment(state: tuple[Any, ...]) -> Settings:
    """Settings of the environment in ``state`` (a frozen model: safe to share), under the
    process's block (its first item). A bad value raises each time (an exception is not cached)."""
    try:
        return Settings(**cast(Any, _nest(_arguments(dict(state[0]), "Prefect block"))))
    except ValidationError as exc:
        raise _error(exc, sources_of()) from None


def sources_of(*, block: Mapping[str, Any] | None = None, **flags: Any) -> dict[str, Source]:
    """Where each variable's value comes from, given the same arguments as :func:`load_settings`."""
    sources: dict[str, Source] = {f.env: "default" for f in fields()}
    sources.update({name: source for name, (_, source) in _raw_layers().items()})
    sources.update(dict.fromkeys(_arguments({**_PROCESS_BLOCK, **(block or {})}, "Prefect block"), "Prefect block"))
    sources.update(dict.fromkeys(_arguments(flags, "flag"), "flag"))
    return sources


def unknown_variables(environ: Mapping[str, str] | None = None) -> list[str]:
    """``DOCCHECK_*`` names set in the environment that no setting reads (a typo, a retired name)."""
    env = os.environ if environ is None else environ
    known = {*_by_env(), ENV_FILE_VAR}
    return sorted(name for name in env if name.startswith("DOCCHECK_") and name not in known)


def values_of(settings: Settings) -> Iterator[tuple[SettingsField, Any]]:
    """Each field with its value in ``settings`` (a secret stays a SecretStr)."""
    for f in fields():
        yield f, getattr(getattr(settings, f.group), f.name)
