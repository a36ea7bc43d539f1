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
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import (
    BaseModel,
    ValidationError,
)
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from doccheck._setting_groups import (
    DEFAULT_DATABASE_URL,
    WEBHOOK_EVENT_WINDOW_DAYS,
    ExtractionSettings,
    LedgerSettings,
    OutputSettings,
    RateLimitSettings,
    RetentionSettings,
    ScheduleSettings,
    ServiceSettings,
    ShardSettings,
    StorageSettings,
    SubmissionSettings,
    WebhookSettings,
    _Group,
)
from doccheck._setting_values import (
    API_VERSION_SUFFIX,
    check_base_url,
    parse_storage_options,
    split_list,
    split_secrets,
)
from doccheck.errors import SettingsError

__all__ = [
    "API_VERSION_SUFFIX",
    "DEFAULT_DATABASE_URL",
    "ENV_FILE_VAR",
    "ExtractionSettings",
    "LedgerSettings",
    "OutputSettings",
    "RateLimitSettings",
    "RetentionSettings",
    "ScheduleSettings",
    "ServiceSettings",
    "ShardSettings",
    "StorageSettings",
    "SubmissionSettings",
    "WebhookSettings",
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

#: The variable naming a file of ``DOCCHECK_*=value`` lines read below the environment.
ENV_FILE_VAR = "DOCCHECK_ENV_FILE"
#: What is shown in place of a secret's value.
SECRET_MASK = "**********"

Source = Literal["default", "file", "environment", "Prefect block", "flag"]

#: Values of a Prefect block in force for the whole process (flat names, as ``block=``), set by
#: :func:`process_block` while a flow run holds it; empty otherwise.
_PROCESS_BLOCK: dict[str, Any] = {}


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
